# SPDX-License-Identifier: GPL-2.0-only
"""Check: build the series in several configs and arches, as the kernel test
robot (0-day) does, and report what breaks and which warnings are new.

Each variant in VARIANTS is one leaf, check/<arch>/<name>.  The patched
tree and the stock tree are built in the same config, each in its own build
directory (WORK/src/<flavour>/out-check-<arch>-<name>, a direct child of
the tree so that stock and patched builds share ccache entries).  A leaf
passes when the patched tree builds and no warning is new; it fails with
the first error (build.first_error()) or with the list of new warnings; it
is a SKIP when the stock tree stops at the same first error, since the
config then tells nothing about the series.

The configs:
  debian    Debian's own config (linux-config-6.12 of the source's version,
            unpacked from the .deb), plus DEBIAN_LINES, then olddefconfig;
  defconfig make defconfig;
  lab       what lab/kernel/build.py builds (tinyconfig +
            configs/common.config + configs/<arch>.config +
            configs/patched.config for patched trees) with the variant's
            lines as one more fragment.
Every line a variant adds is checked in the final .config (a line that did
not stick fails the leaf).  The lab configs select nothing that selects
CONFIG_MMU_NOTIFIER (a hidden option, on only when KVM, Xen, an IOMMU or a
GPU driver selects it): lab-mmu-notifier-off checks that it stays off, and
lab-mmu-notifier-on turns it on the way distros do, through KVM.

What is built: the whole kernel (make's default target: vmlinux, and the
modules where the config has them) for lab variants, and for the others
with --full.  Without --full, a variant with directories (the Debian
configs, riscv64) builds only those directories, the directories of the .c
files the series changes, and every object that an earlier build in the
same build directory compiled from a header the series changes (the deps_
lines of its .o.cmd file).  The first run in a fresh directory therefore
builds only the directories; after one --full run it also rebuilds
everything a changed header reaches.

Warnings: gcc's and sparse's `file:line[:col]: warning|error: text [-Wflag]`,
objtool's and ld's `file: warning: text`, and modpost's `WARNING: modpost:
text`.  Two builds are compared as sets of normalised warnings: the file
relative to the source tree ('../' of the build directory cut), the kind,
and the text with its -W flag, without line and column, since the series
moves code (a warning at mm/vmscan.c:2100 on stock and :2180 on patched is
the same warning); objtool's function+0x<offset> loses its offset for the
same reason, and gcc's typographic quotes become plain ones.  What remains
tells warnings apart by what they name (a variable, a function, a type);
the cost is that a second copy of an existing warning text in the same
file is not reported.  Other numbers in the text (a frame size, an array
bound) stay: a frame that grew is news.

A make that only rebuilds some objects prints only their warnings, so each
build directory keeps a record (.lab-check-warnings.json) of the warnings
per kbuild step ("CC mm/rmap.o"); make runs with -Otarget, so a step's
warnings follow its own line, and a step that runs again replaces its
entry.  On top of the normal build, W=1 and sparse (C=2) run on the objects
of the .c files the series changes, in both trees; those objects are
deleted first, so that they compile again and the log holds all their
warnings.

Modules: where a leaf builds the modules (the whole kernel of a config
with CONFIG_MODULES: the Debian configs and riscv64's defconfig with
--full), modsyms.missing_exports() reads what both builds made, each
tree's Module.symvers and what each module's object needs (nm -u), and
fails the leaf for a module that needs a symbol stock exports and patched
does not (whether or not the series changes that module), or a patched
module that needs a symbol neither exports.  A leaf that cannot check
says so in its verdict: a config without modules, or a directory build
(no modpost ran; --full builds the modules).

Each-commit leaves run build.each_commit() (every commit of the series
builds) for x86_64 and arm64.  Commit-tests leaves boot the commits of
the mprotect series and after, from the images the each-commit builds
kept, with the mprotect and read-side tests (lab/commands/committests.py);
they are in --all only.

Boot leaves (base debian-boot, check/<arch>/debian-<deb arch>-boot) build
both trees in build's debian variant, Debian's own config with the guest's
drivers built in, and boot them with the own tests
(lab/commands/debianboot.py, which also adds its own code, the guest's
and QEMU's version to the stamp inputs).  They are in --all only: each
builds two whole kernels of Debian's size.

The mutation leaf (base mutation, check/arm64/bbm-mutation) plants a bug
that the series' CONFIG_DEBUG_VM break-before-make check exists to catch
(lab/kernel/mutations/), builds the arm64 nosplit kernel from it in a
worktree of its own and passes only when the check reports the bug on
the console of mprotect_batch's tests (lab/commands/mutation.py).  It is
in --all only.

A plain 'lab check' runs three leaves (default=True), chosen for what no
other build of the lab compiles at the lowest cost:
  riscv64/defconfig, mm/ and arch/riscv/mm/ only: the only build of riscv's
      arch_tlbbatch_add_pending(), which the series changes; and riscv has
      THP, MGLRU and PT_RECLAIM off (defconfig sets none of them, and riscv
      does not select ARCH_SUPPORTS_PT_RECLAIM), so its mm/ also compiles
      the generic #else branches of those options;
  x86_64/lab-pt-reclaim-off: x86's paravirt.c and pgtable.c test
      CONFIG_PT_RECLAIM, and only this leaf builds them with it off;
  arm64/lab-contpte-off: without contpte, arm64 takes the generic
      test_and_clear_young_ptes() and clear_flush_young_ptes().
The Debian configs, the other lab variants and the each-commit builds are
what --all adds.

'lab test' (and so CI) runs two leaves (ci=True) in the --quick form, where
a lab variant builds QUICK_DIRS (mm/ and arch/<arch>/mm/) and the
directories of the changed .c files instead of the whole kernel:
riscv64/defconfig and x86_64/lab-pt-reclaim-off.  In that form the stock
side of lab-pt-reclaim-off has the config of the lab's x86_64 stock
kernel (stock has no PT_RECLAIM), so ccache already holds its objects.

Caching: a leaf's verdict is stored in its patched build directory
(.lab-check) with a key over the patched and stock trees (git tree ids,
which hold the content only), the series hash,
the config inputs of both trees, the variant definition, whether it was
a --full build, the toolchain (the first line of --version of the host's
gcc, the arch's gcc and ld, and sparse where the leaf runs it), the lab's
own check code (CHECK_CODE) and, for the leaves that compare warnings,
the known-false table (knownfalse.py, kept outside CHECK_CODE so that a
new entry judges only those leaves again); the next run with the same key
prints the stored verdict without building, and a change to any of them
runs the leaf again.  A leaf whose builds did not run to the end (a
missing compiler, a config line that did not stick, a failed download, a
make or compiler ended by a signal from outside) is not stored.
--no-cache builds anyway.

Records: 'lab check --record' also keeps each verdict it judges in the
repository, docs/results/check/<arch>-<leaf>.json (record_path()), with the
same key, its inputs, the date, the time it took and the lab commit.
Every input of the key is content (trees, files, tool versions), so a
record holds on any machine that has the same inputs: 'lab check' prints
a record whose key matches as the leaf's verdict, with its date and file,
and judges the leaf again when none matches.  That is how 'lab check
--all', hours on two cores, can be judged over several runs and machines.
'lab test' (CI) reads no record: its leaves are judged on the machine
that runs it.
"""

import dataclasses
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import config
from ..core.util import LabError, out, run, say
from . import build, debian, modsyms, source
from .knownfalse import KNOWN_FALSE


@dataclass(frozen=True)
class Target:
    """An arch as make sees it.  riscv64 is only built here, never booted,
    so it is not in config.ARCHES."""
    name: str
    karch: str      # ARCH=
    srcarch: str    # the directory under arch/
    cross: str      # CROSS_COMPILE= prefix ('' for native)
    deb_arch: str   # Debian architecture (linux-config-6.12:<deb_arch>)


TARGETS = {
    "x86_64": Target("x86_64", "x86_64", "x86", "", "amd64"),
    "arm64": Target("arm64", "arm64", "arm64", "aarch64-linux-gnu-", "arm64"),
    "riscv64": Target("riscv64", "riscv", "riscv", "riscv64-linux-gnu-", "riscv64"),
}


@dataclass(frozen=True)
class Variant:
    name: str
    arch: str            # a key of TARGETS
    base: str            # one of BASES
    lines: tuple = ()    # config lines merged on top of the base, then checked
    dirs: tuple = ()     # without --full, build only these ({srcarch} = arch dir)
    default: bool = False  # part of a plain 'lab check'
    ci: bool = False     # part of 'lab test' (CI), in the --quick form
    why: str = ""

    @property
    def leaf(self):
        return f"check/{self.arch}/{self.name}"


BASES = ("debian", "defconfig", "lab", "each-commit", "debian-boot", "mutation",
         "commit-tests")

# On top of Debian's config: no debug info (much of the build's time and
# disk, and BTF would need pahole) and no module signing key.  Module
# signing itself stays on (SECURITY_LOCKDOWN_LSM selects MODULE_SIG, as in
# Debian's kernel); Debian signs its modules outside the kernel build, and
# its config leaves MODULE_SIG_KEY to the default, a key that the build
# would make with openssl.  An empty key makes certs/ embed none.  Neither
# line changes what mm/ compiles.
DEBIAN_LINES = ("CONFIG_DEBUG_INFO_NONE=y", 'CONFIG_MODULE_SIG_KEY=""')
# virt/kvm/ has no Makefile of its own: arch/<arch>/kvm/ builds its files
# (virt/kvm/Makefile.kvm), so that directory stands for it.
# arch/<arch>/xen/ holds Xen PV's page table and TLB operations
# (mmu_pv.c), which the x86 change to RCU-freed page tables relies on.
DEBIAN_DIRS = ("mm/", "arch/{srcarch}/mm/", "kernel/", "fs/proc/",
               "arch/{srcarch}/kvm/", "drivers/xen/", "arch/{srcarch}/xen/")

VARIANTS = (
    Variant("debian-amd64", "x86_64", "debian", DEBIAN_LINES, DEBIAN_DIRS,
            why="what distro users run"),
    Variant("debian-arm64", "arm64", "debian", DEBIAN_LINES, DEBIAN_DIRS,
            why="what distro users run"),
    Variant("debian-amd64-boot", "x86_64", "debian-boot",
            why="Debian's own config, booted: the own tests on stock and patched"),
    Variant("debian-arm64-boot", "arm64", "debian-boot",
            why="Debian's own config, booted: the own tests on stock and patched"),
    Variant("defconfig", "riscv64", "defconfig", (), ("mm/", "arch/{srcarch}/mm/"),
            default=True, ci=True, why="the series changes riscv's TLB batching: "
            "arch_tlbbatch_add_pending() takes a range"),
    Variant("lab-thp-off", "x86_64", "lab",
            ("CONFIG_TRANSPARENT_HUGEPAGE=n", "CONFIG_READ_ONLY_THP_FOR_FS=n",
             "CONFIG_THP_SWAP=n"), why="#ifdef CONFIG_TRANSPARENT_HUGEPAGE"),
    Variant("lab-swap-off", "x86_64", "lab", ("CONFIG_SWAP=n", "CONFIG_THP_SWAP=n", "CONFIG_ZSWAP=n"),
            why="#ifdef CONFIG_SWAP"),
    Variant("lab-memcg-off", "x86_64", "lab", ("CONFIG_MEMCG=n",),
            why="#ifdef CONFIG_MEMCG"),
    Variant("lab-lru-gen-off", "x86_64", "lab",
            ("CONFIG_LRU_GEN=n", "CONFIG_LRU_GEN_ENABLED=n"),
            why="#ifdef CONFIG_LRU_GEN: MGLRU young batching"),
    Variant("lab-mmu-notifier-off", "x86_64", "lab", ("CONFIG_MMU_NOTIFIER=n",),
            why="the *_notify() fallbacks of #ifndef CONFIG_MMU_NOTIFIER"),
    Variant("lab-mmu-notifier-on", "x86_64", "lab",
            ("CONFIG_VIRTUALIZATION=y", "CONFIG_KVM=y", "CONFIG_KVM_INTEL=y",
             "CONFIG_MMU_NOTIFIER=y"),
            why="the *_notify() macros; KVM selects MMU_NOTIFIER"),
    Variant("lab-pt-reclaim-off", "x86_64", "lab", ("CONFIG_PT_RECLAIM=n",),
            default=True, ci=True, why="#ifdef CONFIG_PT_RECLAIM, the series' own option; "
            "x86's paravirt.c and pgtable.c test it too"),
    # arm64 selects ARCH_WANTS_THP_SWAP with 4 kB pages only, so the lab
    # config's THP_SWAP=y cannot stick with larger pages
    Variant("lab-16k-pages", "arm64", "lab",
            ("CONFIG_ARM64_4K_PAGES=n", "CONFIG_ARM64_16K_PAGES=y", "CONFIG_THP_SWAP=n"),
            why="contpte and page-size code"),
    Variant("lab-64k-pages", "arm64", "lab",
            ("CONFIG_ARM64_4K_PAGES=n", "CONFIG_ARM64_64K_PAGES=y", "CONFIG_THP_SWAP=n"),
            why="contpte and page-size code"),
    Variant("lab-contpte-off", "arm64", "lab", ("CONFIG_ARM64_CONTPTE=n",),
            default=True, why="#ifdef CONFIG_ARM64_CONTPTE: the generic young "
            "batching instead of arm64's"),
    Variant("lab-modules", "arm64", "lab",
            ("CONFIG_MODULES=y", "CONFIG_XEN=y", "CONFIG_XENFS=n", "CONFIG_XEN_PRIVCMD=m"),
            why="the module symbol check on a real modules build: xen's privcmd.ko "
            "calls ptep_get(), inline, which calls the series' contpte code"),
    Variant("bbm-mutation", "arm64", "mutation",
            why="the DEBUG_VM break-before-make check fires on a planted bug: a block "
            "flush of the batched mprotect() commit narrowed by one page"),
    Variant("each-commit", "x86_64", "each-commit", why="bisectability"),
    Variant("each-commit", "arm64", "each-commit", why="bisectability"),
    Variant("commit-tests", "x86_64", "commit-tests",
            why="bisectability: the mprotect and read-side tests at every commit from 0032"),
    Variant("commit-tests", "arm64", "commit-tests",
            why="bisectability: the mprotect and read-side tests at every commit from 0032"),
)

STAMP = ".lab-check"
CONFIG_STAMP = ".lab-check-config"
RECORD = ".lab-check-warnings.json"


def select(names=None, everything=False):
    """The variants to run: those matching names (NAME, ARCH/NAME or the
    leaf, shell wildcards allowed), else all of them, else the default ones."""
    if names:
        def hit(v, n):
            return any(fnmatch.fnmatchcase(s, n)
                       for s in (v.name, f"{v.arch}/{v.name}", v.leaf))
        unknown = [n for n in names if not any(hit(v, n) for v in VARIANTS)]
        if unknown:
            raise LabError(f"no check variant matches {', '.join(unknown)} "
                           "(see 'lab check --list')")
        return [v for v in VARIANTS if any(hit(v, n) for n in names)]
    return list(VARIANTS) if everything else [v for v in VARIANTS if v.default]


def describe(v):
    """One line saying how a variant's config is made and what is built."""
    t = TARGETS[v.arch]
    if v.base == "each-commit":
        return "every commit of the series, lab config (lab build --each-commit)"
    if v.base == "commit-tests":
        return ("each commit from 0032 on, lab config, its image from the each-commit "
                "build; boots mprotect_batch's and read_batch's tests (lab/commands/"
                "committests.py)")
    if v.base == "mutation":
        return ("lab nosplit config (DEBUG_VM, KASAN, lockdep) of the series plus "
                "lab/kernel/mutations/*.patch, in WORK/src/mutant; boots "
                "mprotect_batch's tests; passes when the check reports the bug")
    if v.base == "debian-boot":
        return (f"Debian's config.{t.deb_arch}_none_{t.deb_arch} + "
                "configs/debian-boot*.config (lab build -v debian: the image, not "
                "the modules); each kernel boots the own tests (switches and every "
                "series'), 0 kernel reports")
    base = {"debian": f"Debian's config.{t.deb_arch}_none_{t.deb_arch}",
            "defconfig": "defconfig", "lab": "lab config"}[v.base]
    text = " ".join([base] + [f"+ {line}" for line in v.lines])
    if v.dirs:
        text += "; " + " ".join(d.format(srcarch=t.srcarch) for d in v.dirs) + \
            " only (the whole kernel with --full)"
    return text


def list_variants():
    for v in VARIANTS:
        mark = ("*" if v.default else " ") + ("+" if v.ci else " ")
        print(f"{mark} {v.leaf:34} {v.why}")
        print(f"     {describe(v)}")
    print("* = in a plain 'lab check'; 'lab check --all' runs every one;\n"
          "+ = in 'lab test' too, in the --quick form (directories only)")


def build_dir(v, flavour):
    return config.source_tree(flavour) / f"out-check-{v.arch}-{v.name}"


# --- what the series changes, and what to build --------------------------

def changed(pattern):
    """Files of the series (base..HEAD of the patched tree) matching a
    pathspec such as '*.h'."""
    return out(["git", "-C", str(config.source_tree("patched")), "diff",
                "--name-only", f"{source.BASE_TAG}..HEAD", "--", pattern]).split()


def for_arch(paths, srcarch):
    """Drop the paths under another arch's directory."""
    return [p for p in paths if not p.startswith("arch/") or p.split("/")[1] == srcarch]


def objects_of(c_files):
    return [p[:-2] + ".o" for p in c_files if p.endswith(".c")]


def dirs_of(paths):
    return sorted({os.path.dirname(p) + "/" for p in paths})


def cmd_deps(text):
    """(object, [dependencies]) from a kbuild .o.cmd file (its deps_<object>
    block, $(wildcard ...) entries left out), or None without one."""
    obj, deps = None, []
    for line in text.splitlines():
        if obj is None:
            m = re.match(r"deps_(\S+) := \\$", line)
            if m:
                obj = m.group(1)
            continue
        item = line.strip().rstrip("\\").strip()
        if not item:
            break
        if not item.startswith("$("):
            deps.append(item)
    return (obj, deps) if obj else None


def srcpath(path):
    """A path as the build printed it, relative to the source tree: the
    build directory is a direct child of it, so kbuild writes '../mm/rmap.c'."""
    return path[3:] if path.startswith("../") else path


def objects_including(build_out, headers):
    """Objects compiled in a build directory whose .o.cmd lists one of the
    headers (paths relative to the source tree), sorted.  The build
    directory is a direct child of the source tree, so a source file is
    listed as '../<path>'; a path without '../' is a generated file of the
    build directory."""
    want = set(headers)
    found = []
    for d, _, files in os.walk(build_out):
        for name in files:
            if not name.startswith(".") or not name.endswith(".o.cmd") \
                    or name.endswith(".mod.o.cmd"):
                continue
            parsed = cmd_deps((Path(d) / name).read_text(errors="replace"))
            if parsed and want & {p[3:] for p in parsed[1] if p.startswith("../")}:
                found.append(parsed[0])
    return sorted(found)


def buildable(build_out, obj):
    """Whether 'make OBJ' works in a build directory: the object has a
    directory, does not climb out of it (arch/x86/kvm/../../../virt/kvm/...,
    built by its directory), is not a module's .mod.o, and kbuild descended
    into its directory (built-in.a or modules.order there; arch/x86/boot and
    arch/x86/realmode/rm have neither)."""
    d = os.path.dirname(obj)
    if not d or "/../" in f"/{obj}" or obj.endswith(".mod.o"):
        return False
    return (build_out / d / "built-in.a").exists() \
        or (build_out / d / "modules.order").exists()


# --quick: what a lab variant builds instead of the whole kernel.
QUICK_DIRS = ("mm/", "arch/{srcarch}/mm/")


def variant_dirs(v, quick):
    """The directories a variant builds without --full: its own, or with
    quick QUICK_DIRS for a lab variant; () means the whole kernel."""
    if v.dirs or not quick or v.base != "lab":
        return v.dirs
    return QUICK_DIRS


def goals(v, t, build_out, full, c_files, headers, quick=False):
    """What make builds for a variant (see the module docstring); [] is
    make's default target."""
    dirs = variant_dirs(v, quick)
    if full or not dirs:
        return []
    dirs = built_dirs(v, t, quick, c_files)
    objs = [o for o in objects_including(build_out, headers)
            if buildable(build_out, o) and not o.startswith(tuple(dirs))]
    return dirs + objs


# --- configs ---------------------------------------------------------------

def debian_config(t):
    """Debian's config for a target (debian.config_path())."""
    return debian.config_path(t.deb_arch)


def config_inputs(v, t, flavour):
    """The text that decides a variant's .config in one tree."""
    parts = [v.base] + list(v.lines)
    if v.base == "lab":
        parts += [f.read_text() for f in build.fragments(t.name, "default", flavour)]
    elif v.base == "debian":
        parts.append(debian_config(t).read_text())
    elif v.base == "defconfig":
        parts.append((config.source_tree(flavour) / "arch" / t.srcarch /
                      "configs/defconfig").read_text())
    return "\n".join(parts)


def check_lines(dotconfig, frags):
    """Every option the fragments set, the later fragment winning, holds in
    the final .config."""
    want = {}
    for f in frags:
        want.update(build.parse_fragment(f))
    have = build.parse_dotconfig(dotconfig)
    bad = [f"{k}={val} ended up as {k}={have.get(k, 'n')}"
           for k, val in want.items() if have.get(k, "n") != val]
    if bad:
        raise LabError("config lines did not stick (a dependency is missing, or "
                       "something selects the option):\n  " + "\n  ".join(bad))


def write_config(v, t, flavour, build_out, log):
    """Write a variant's .config into a build directory: its base, then its
    lines (written to lab-check.config) merged with merge_config.sh, then
    olddefconfig; every line is checked."""
    src = config.source_tree(flavour)
    base = build.make_cmd(t, src, build_out, flavour)
    env = dict(os.environ, **build.BUILD_ENV)
    extra = build_out / "lab-check.config"
    extra.write_text("".join(line + "\n" for line in v.lines))
    frags = [extra]
    if v.base == "lab":
        frags = build.fragments(t.name, "default", flavour) + [extra]
        run(base + ["tinyconfig"], env=env, log=log)
    elif v.base == "defconfig":
        run(base + ["defconfig"], env=env, log=log)
    elif v.base == "debian":
        shutil.copyfile(debian_config(t), build_out / ".config")
    else:
        raise LabError(f"variant {v.leaf}: unknown base '{v.base}'")
    build.merge_fragments(base, src, build_out, frags, env, log)
    check_lines(build_out / ".config", frags)


def configure(v, t, flavour, build_out, log):
    """write_config() unless the build directory already has this config,
    made with this compiler (kbuild takes the compiler's capabilities into
    the .config, so that lines checked with another may no longer hold)."""
    want = hashlib.sha256((config_inputs(v, t, flavour) + "\n" + json.dumps(
        build.toolchain(t.cross), sort_keys=True)).encode()).hexdigest()
    build.stamped_config(build_out, want,
                         lambda: write_config(v, t, flavour, build_out, log),
                         CONFIG_STAMP)


# Kbuild hands single targets on to sub-makes inside one recipe, which
# make runs as 'sh -c <recipe>'; one argument may not exceed 128 kB
# (MAX_ARG_STRLEN), so a long list of objects is built in several makes.
GOALS_PER_MAKE = 500


def make(t, flavour, build_out, targets, log, extra=()):
    """make in a build directory, each target's output grouped (-Otarget) so
    that a compile's warnings follow its own line; True on success.  [] is
    make's default target; more than GOALS_PER_MAKE targets take several
    makes, and the first that fails ends the build."""
    cmd = build.make_cmd(t, config.source_tree(flavour), build_out, flavour) + \
        ["-Otarget"] + list(extra)
    env = dict(os.environ, **build.BUILD_ENV)
    targets = list(targets)
    for i in range(0, max(len(targets), 1), GOALS_PER_MAKE):
        start = log.stat().st_size if log.exists() else 0
        p = run(cmd + targets[i:i + GOALS_PER_MAKE], env=env, log=log, check=False)
        if p.returncode != 0:
            build.raise_if_stopped(p.returncode, log_since(log, start), log)
            return False
    return True


# --- warnings --------------------------------------------------------------

STEP = re.compile(r"^  ([A-Z][A-Z0-9_]*)(?: \[M\])?\s+(\S+)\s*$")
LOCATED = re.compile(r"^(?P<file>[^\s:]+):\d+:(?:\d+:)? (?P<kind>warning|error): "
                     r"(?P<text>.*)$")
UNLOCATED = re.compile(r"^(?!make(\[\d+\])?:)(?P<file>[^\s:]+): (?P<kind>warning|error): "
                       r"(?P<text>.*)$")
MODPOST = re.compile(r"^(?P<kind>WARNING|ERROR): modpost: (?P<text>.*)$")
OFFSET = re.compile(r"\+0x[0-9a-f]+\b")


def normalise(line, tool=""):
    """The comparable form of a warning line (see the module docstring), or
    None when the line is not a warning."""
    m = LOCATED.match(line) or UNLOCATED.match(line)
    if m:
        where = f"{srcpath(m['file'])}: {m['kind']}"
    else:
        m = MODPOST.match(line)
        if not m:
            return None
        where = f"modpost: {m['kind'].lower()}"
    text = OFFSET.sub("+0x..", m["text"]).replace("\u2018", "'").replace("\u2019", "'")
    return f"{tool}{where}: {text.strip()}"


def parse_log(text):
    """{step: {normalised warning: line as printed}} of a build log; a step
    is a kbuild line such as '  CC      mm/rmap.o' ('CC mm/rmap.o'), and the
    lines before the first step belong to ''.  Warnings under a CHECK step
    are sparse's."""
    steps = {"": {}}
    step = ""
    for line in text.splitlines():
        m = STEP.match(line)
        if m:
            step = f"{m.group(1)} {m.group(2)}"
            steps.setdefault(step, {})
            continue
        key = normalise(line, "sparse: " if step.startswith("CHECK ") else "")
        if key:
            steps[step].setdefault(key, line)
    return steps


def merged(steps):
    """{normalised: line} over the steps of a parse_log() or a record."""
    all_ = {}
    for warns in steps.values():
        for key, line in warns.items():
            all_.setdefault(key, line)
    return all_


def record_warnings(build_out, text):
    """Update a build directory's warning record with a build log (each step
    in the log replaces its entry) and return all warnings on record."""
    f = build_out / RECORD
    rec = json.loads(f.read_text()) if f.exists() else {}
    for step, warns in parse_log(text).items():
        if warns:
            rec[step] = warns
        else:
            rec.pop(step, None)
    f.write_text(json.dumps(rec, indent=1, sort_keys=True))
    return merged(rec)



def new_warnings(stock, patched):
    """Lines of the warnings patched has and stock has not, sorted; the
    ones in KNOWN_FALSE are left out (see known_warnings())."""
    return sorted(line for key, line in patched.items()
                  if key not in stock and key not in KNOWN_FALSE)


def known_warnings(stock, patched):
    """[(line, reason)] of the new warnings that KNOWN_FALSE explains."""
    return sorted((line, KNOWN_FALSE[key]) for key, line in patched.items()
                  if key not in stock and key in KNOWN_FALSE)


def log_since(log, start):
    """The text a log gained after byte offset start."""
    return log.read_bytes()[start:].decode(errors="replace")


def cmd_file(build_out, obj):
    return build_out / os.path.dirname(obj) / f".{os.path.basename(obj)}.cmd"


def extra_pass(t, flavour, build_out, objs, log, sparse=True):
    """W=1 and (with sparse) sparse, C=2, on the objects of the changed .c
    files that this build compiled; each is deleted first so that it
    compiles again.  Returns (ok, {normalised: line})."""
    objs = [o for o in objs if cmd_file(build_out, o).exists()]
    if not objs:
        return True, {}
    for o in objs:
        (build_out / o).unlink(missing_ok=True)
    start = log.stat().st_size
    ok = make(t, flavour, build_out, objs, log,
              extra=["W=1", "C=2"] if sparse else ["W=1"])
    return ok, merged(parse_log(log_since(log, start)))


# --- a leaf ----------------------------------------------------------------

def tree(flavour):
    """The git tree id of a source tree's HEAD: its content alone, the same
    on every machine that applies the same series to the same source (a
    commit id also holds the time 'git am' ran)."""
    return out(["git", "-C", str(config.source_tree(flavour)), "rev-parse", "HEAD^{tree}"])


def stamp_key(inputs):
    """sha256 over a JSON dict of everything a verdict depends on."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _load(path, key):
    """What a stamp or record file holds, if it was stored under key."""
    if not path.exists():
        return None
    stored = json.loads(path.read_text())
    return stored if stored.get("key") == key else None


def _save(path, key, result, inputs, stored=None, **extra):
    """Write a stamp or record: the key, when it was stored (@stored, or
    now), @extra, the inputs the key was made of and the verdict."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = stored or time.strftime("%Y-%m-%d %H:%M:%S")
    path.write_text(json.dumps({"key": key, "stored": stored,
                                **extra, "inputs": inputs, "result": result},
                               indent=1) + "\n")
    return path


def load_stamp(path, key):
    """The verdict stored under key, or None."""
    stored = _load(path, key)
    return stored["result"] if stored else None


def load_stamp_entry(path, key):
    """What the stamp at @path holds (verdict, inputs, date, time taken,
    lab commit) if it was stored under @key, or None."""
    return _load(path, key)


def save_stamp(path, key, result, inputs=None, took=None):
    """Store a verdict under key, with the inputs the key was made of, how
    long judging it took (seconds) and the lab commit that judged it."""
    return _save(path, key, result, inputs, took=None if took is None else round(took),
                 lab=lab_commit())


def lab_commit():
    """The lab's commit, 12 hex digits ('' outside a git checkout)."""
    return subprocess.run(["git", "-C", str(config.REPO), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def record_path(v):
    """Where 'lab check --record' keeps a leaf's verdict in the repository."""
    return config.CHECK_RECORDS / f"{v.arch}-{v.name}.json"


def load_record(v, key):
    """The verdict kept in the repository for leaf @v under @key, as stored
    (its result, inputs, date and time taken), or None."""
    return _load(record_path(v), key)


def save_record(v, key, result, inputs, took):
    """Keep a leaf's verdict in the repository: the key, the inputs it is
    made of, the verdict, when it was judged, how long that took (seconds)
    and the lab commit that judged it."""
    return _save(record_path(v), key, result, inputs, leaf=v.leaf, took=round(took),
                 lab=lab_commit())


def keep_stamp(v, key, entry):
    """Keep in the repository the verdict a stamp of this machine holds for
    leaf @v under @key (load_stamp_entry()), as judged: its date, time taken
    and lab commit, None where the stamp predates recording them.  False,
    keeping nothing, when the stamp lacks the inputs a record must show."""
    if not entry.get("inputs"):
        return False
    _save(record_path(v), key, entry["result"], entry["inputs"], stored=entry["stored"],
          leaf=v.leaf, took=entry.get("took"), lab=entry.get("lab"))
    return True


def verdict(status, detail="", error="", new=(), no_sparse="", known=()):
    """A leaf's verdict; no_sparse says why sparse could not run (its own
    SKIP row, <leaf>/sparse); known lists the new warnings KNOWN_FALSE
    explains, as (line, reason)."""
    return {"status": status, "detail": detail, "error": error, "new": list(new),
            "no_sparse": no_sparse, "known": [list(k) for k in known]}


def error_line(context):
    """The line of a first_error() block that names the error (a compiler's
    'error:', modpost's 'ERROR: modpost:')."""
    lines = context.splitlines()
    return next((l for l in lines if "error:" in l or l.startswith("ERROR: modpost: ")),
                lines[-1] if lines else "")


def build_variant(v, t, full, quick=False):
    """Configure and build both trees, then the W=1/sparse pass; a verdict."""
    c_files = for_arch(changed("*.c"), t.srcarch)
    headers = changed("*.h")
    ok, warns, logs = {}, {}, {}
    for flavour in ("patched", "stock"):
        build_out = build_dir(v, flavour)
        build_out.mkdir(parents=True, exist_ok=True)
        log = config.log_dir() / f"check-{v.arch}-{v.name}-{flavour}.log"
        log.write_text("")
        say(f"{v.leaf}: building {flavour} (log: {log})")
        configure(v, t, flavour, build_out, log)
        start = log.stat().st_size
        ok[flavour] = make(t, flavour, build_out,
                           goals(v, t, build_out, full, c_files, headers, quick),
                           log)
        warns[flavour] = record_warnings(build_out, log_since(log, start))
        logs[flavour] = log
    if not ok["patched"]:
        return failed_build(logs["patched"], logs["stock"] if not ok["stock"] else None)
    notes = [] if full or not variant_dirs(v, quick) else ["directories only"]
    if not ok["stock"]:
        return verdict("pass", ", ".join(notes + [f"the stock build failed (log: "
                                                  f"{logs['stock']}), warnings not compared"]))
    modules_failed = module_check(v, t, full, quick, notes)
    extra, no_sparse = {}, ""
    for sparse in (True, False):
        extra, failed, errs = {}, {}, {}
        for flavour in ("patched", "stock"):
            log = config.log_dir() / \
                f"check-{v.arch}-{v.name}-{flavour}-{'w1' if sparse else 'w1-only'}.log"
            log.write_text("")
            done, extra[flavour] = extra_pass(t, flavour, build_dir(v, flavour),
                                              objects_of(c_files), log, sparse)
            if not done:
                errs[flavour] = build.first_error(log)
                failed[flavour] = error_line(errs[flavour])
        if not failed:
            break
        same = failed.get("patched") is not None and \
            failed.get("patched") == failed.get("stock")
        if sparse and same:
            # a tool that cannot handle this arch (Debian 12's sparse and
            # riscv's -march): W=1 alone still runs, and sparse gets its
            # own SKIP row
            no_sparse = f"the W=1/sparse pass fails on stock the same way: {failed['stock']}"
            continue
        if "patched" in failed and not same:
            what = "W=1/sparse" if sparse else "W=1"
            return verdict("fail", f"{what} build failed: {failed['patched']}",
                           errs["patched"], no_sparse=no_sparse)
        notes.append(f"the {'W=1/sparse' if sparse else 'W=1'} pass failed on stock "
                     f"({failed['stock']}), its warnings not compared")
        extra = {}
        break
    if extra:
        warns = {f: {**extra[f], **warns[f]} for f in warns}
    new = new_warnings(warns["stock"], warns["patched"])
    known = known_warnings(warns["stock"], warns["patched"])
    if known:
        notes.append(f"{len(known)} known false warning{'s' * (len(known) != 1)}")
    if new:
        notes.insert(0, f"{len(new)} new warning{'s' * (len(new) != 1)}")
    if modules_failed:
        notes.insert(0, modules_failed)
    if new or modules_failed:
        return verdict("fail", ", ".join(notes), new=new, no_sparse=no_sparse,
                       known=known)
    return verdict("pass", ", ".join(notes), no_sparse=no_sparse, known=known)


def built_dirs(v, t, quick, c_files):
    """The directories goals() builds without --full."""
    dirs = [d.format(srcarch=t.srcarch) for d in variant_dirs(v, quick)]
    return dirs + [d for d in dirs_of(c_files) if d not in dirs]


def module_check(v, t, full, quick, notes):
    """The module-symbol check of a built leaf (modsyms), on what both
    builds made: appends what it did, or why it could not check, to notes;
    returns the failure's text, or "" when it passed or could not apply."""
    patched = build_dir(v, "patched")
    if not modules_on(patched):
        notes.append("the config builds no modules: module symbols not checked")
        return ""
    if not full and variant_dirs(v, quick):
        notes.append("no modpost in a directory build: module symbols not checked "
                     "(--full builds the modules)")
        return ""
    try:
        missing, n = modsyms.missing_exports(f"{t.cross}nm", patched, build_dir(v, "stock"))
    except LabError as e:
        return f"module symbols not checked: {e}"
    if missing:
        return (f"{len(missing)} symbol{'s' * (len(missing) != 1)} that a module needs "
                "and the series' Module.symvers does not export: " +
                "; ".join(f"{m}: {sym} ({why})" for m, sym, why in missing))
    if not n:
        notes.append(f"no module in the build ({modsyms.ORDER} is empty): "
                     "module symbols not checked")
        return ""
    notes.append(f"module symbols: what {n} module{'s' * (n != 1)} "
                 f"need{'s' * (n == 1)} is exported (Module.symvers of both trees)")
    return ""


def modules_on(build_out):
    """Whether a build directory's config builds modules."""
    dotconfig = Path(build_out) / ".config"
    return dotconfig.exists() and "\nCONFIG_MODULES=y\n" in "\n" + dotconfig.read_text()


def failed_build(log, stock_log=None):
    """The verdict on a patched build that failed: SKIP when the stock build
    (stock_log, when it failed too) stopped at the same error, else FAIL."""
    err = build.first_error(log)
    line = error_line(err)
    if stock_log is not None:
        stock_line = error_line(build.first_error(stock_log))
        if normalise(stock_line) and normalise(stock_line) == normalise(line):
            return verdict("skip", f"the stock build fails the same way: {line}", err)
    return verdict("fail", f"build failed: {line}", err)


# What a leaf's verdict covers beside the build and its warnings; a
# stored verdict without one of them is stale.
CHECKS = ["module symbols (Module.symvers)"]

# The lab's own code that decides a leaf's verdict: a stored verdict
# holds only for the code that judged it.  The known-false table is an
# input of its own (stamp_inputs()), of the leaves that compare warnings.
CHECK_CODE = ("lab/kernel/check.py", "lab/kernel/modsyms.py", "lab/kernel/build.py",
              "lab/commands/check.py")


def tools(v, t):
    """build.toolchain() of a leaf's arch, and sparse's version where the
    leaf runs sparse (the leaves that build a config of their own: not
    each-commit, the boot leaves or the mutation)."""
    found = build.toolchain(t.cross)
    if v.base not in ("each-commit", "debian-boot", "mutation", "commit-tests"):
        found["sparse"] = build.tool_version("sparse")
    return found


def stamp_inputs(v, t, full, quick=False):
    dirs = variant_dirs(v, quick)
    inputs = {"patched": tree("patched"), "stock": tree("stock"),
              "series": source.series_hash(), "variant": dataclasses.asdict(v),
              "full": bool(full and dirs), "dirs": list(dirs),
              "tools": tools(v, t), "code": build.code_hash(CHECK_CODE)}
    if v.base in ("each-commit", "commit-tests"):
        inputs["config"] = build.config_hash(t.name, "default", "patched")
    elif v.base == "debian-boot":
        inputs["config"] = {f: build.config_hash(t.name, config.DEBIAN_VARIANT, f)
                            for f in config.FLAVOURS}
    elif v.base == "mutation":
        inputs["config"] = build.config_hash(t.name, "nosplit", "patched")
    else:
        inputs["config"] = {f: stamp_key({"text": config_inputs(v, t, f)})
                            for f in config.FLAVOURS}
        # a verdict on warnings holds only for the table it was judged by:
        # an entry taken out must fail the leaves that relied on it
        inputs["known_false"] = sorted(KNOWN_FALSE)
        # a verdict from before a check was added did not run it
        inputs["checks"] = CHECKS
    return inputs


def needs(v, t):
    """Programs a leaf needs that are not on PATH."""
    if v.base in ("debian-boot", "mutation", "commit-tests"):
        progs = [f"{t.cross}gcc", config.arch(t.name).qemu]
    else:
        progs = [f"{t.cross}gcc"] + \
            ([f"{t.cross}nm", "sparse"] if v.base != "each-commit" else [])
    return [p for p in progs if not shutil.which(p)]
