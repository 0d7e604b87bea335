# SPDX-License-Identifier: GPL-2.0-only
"""Build: configure and build one kernel out of tree, with ccache.

One build directory per (arch, variant, flavour), a direct child of the
flavour's source tree (see config.build_dir).  The config is tinyconfig plus
configs/common.config, configs/<arch>.config and, for the debug variant,
configs/debug.config and configs/<arch>-debug.config where there is one (the
nosplit variant adds configs/nosplit.config to that); every option the
fragments set is checked afterwards, a later fragment's value over an
earlier one's.  The debian variant starts instead from Debian's own config
and merges configs/debian-boot*.config (lab/kernel/debian.py); it builds
the kernel image only, not the modules, and its build directory keeps the
list of options that differ from Debian's (DEBIAN_CHANGES).
"""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

from ..core import config
from ..core.util import LabError, Timer, ccache_stats, run, say, spawn
from . import debian

BUILD_ENV = {
    # Reproducible strings: keep ccache hits for init/version.c across builds.
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 2026",
    "KBUILD_BUILD_USER": "lab",
    "KBUILD_BUILD_HOST": "foliobatch",
}


def fragments(arch_name, variant, flavour="stock"):
    """Config fragments of a build, in merge order."""
    if variant == config.DEBIAN_VARIANT:
        frags = debian.fragments(arch_name)
        if flavour != "stock":
            frags.append(config.CONFIGS / "patched.config")
        return frags
    frags = [config.CONFIGS / "common.config", config.CONFIGS / f"{arch_name}.config"]
    if variant in config.DEBUG_VARIANTS:
        frags.append(config.CONFIGS / "debug.config")
        arch_debug = config.CONFIGS / f"{arch_name}-debug.config"
        if arch_debug.exists():
            frags.append(arch_debug)
    if variant == "nosplit":
        frags.append(config.CONFIGS / "nosplit.config")
    elif variant not in ("default", "debug"):
        raise LabError(f"unknown variant '{variant}' (known: {', '.join(config.VARIANTS)})")
    if flavour != "stock":
        frags.append(config.CONFIGS / "patched.config")
    return frags


def parse_fragment(path):
    """Return {CONFIG_X: value} for a fragment; 'n' for '=n' and 'is not set'."""
    want = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        m = re.match(r"# (CONFIG_\w+) is not set$", line)
        if m:
            want[m.group(1)] = "n"
            continue
        if not line or line.startswith("#"):
            continue
        key, _, val = line.partition("=")
        want[key] = val
    return want


def parse_dotconfig(path):
    have = {}
    for line in path.read_text().splitlines():
        m = re.match(r"(CONFIG_\w+)=(.*)$", line)
        if m:
            have[m.group(1)] = m.group(2)
    return have


def check_config(dotconfig, frags):
    """Every option the fragments set must hold in the final .config; where
    two fragments set one option, the later one's value (as merge_config.sh
    merges them)."""
    have = parse_dotconfig(dotconfig)
    want = {}
    for frag in frags:
        for key, val in parse_fragment(frag).items():
            want[key] = (val, frag.name)
    bad = []
    for key, (val, name) in want.items():
        got = have.get(key, "n")
        if got != val:
            bad.append(f"{key}={val} (from {name}) ended up as {key}={got}")
    if bad:
        raise LabError("config fragment options did not stick (a dependency is "
                       "missing):\n  " + "\n  ".join(bad))


def config_hash(arch_name, variant, flavour="stock"):
    h = hashlib.sha256()
    if variant == config.DEBIAN_VARIANT:
        h.update(debian.config_path(config.arch(arch_name).deb_arch).read_bytes())
    for f in fragments(arch_name, variant, flavour):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def tool_version(cmd):
    """The first line of '<cmd> --version' (gcc, ld, sparse), or a line
    saying the program is missing."""
    try:
        p = subprocess.run([cmd, "--version"], capture_output=True, text=True)
    except OSError:
        return f"{cmd}: not found"
    lines = (p.stdout or p.stderr).splitlines()
    return lines[0].strip() if lines else f"{cmd}: no version (exit {p.returncode})"


def toolchain(cross):
    """{program: version} of what compiles and links a kernel for the arch
    of CROSS_COMPILE=@cross: the host's gcc (kbuild's host programs:
    modpost, objtool, fixdep), the arch's gcc and its binutils (ld)."""
    return {prog: tool_version(prog) for prog in ("gcc", f"{cross}gcc", f"{cross}ld")}


def code_hash(paths):
    """sha256 over the lab's own source files @paths (relative to the lab's
    checkout, config.REPO), as they are now, committed or not."""
    h = hashlib.sha256()
    for rel in paths:
        h.update(rel.encode() + b"\0" + (config.REPO / rel).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def make_cmd(a, src, out, flavour, jobs=None):
    cc = f"{a.cross}gcc"
    cmd = ["make", "-C", str(src), f"O={out}", f"ARCH={a.karch}",
           f"-j{jobs or os.cpu_count()}", f"LOCALVERSION=-{flavour}"]
    if a.cross:
        cmd.append(f"CROSS_COMPILE={a.cross}")
    if shutil.which("ccache"):
        cmd.append(f"CC=ccache {cc}")
    return cmd


CONFIG_STAMP = ".lab-config"


def config_current(out, want, stamp=CONFIG_STAMP):
    """Whether out/.config was made from the config inputs whose hash is
    want: the hash that configure() and each_commit() (and 'lab check',
    under its own @stamp name) leave in out/@stamp once they have written
    the .config, and remove before they write a new one."""
    path = out / stamp
    return (out / ".config").exists() and path.exists() \
        and path.read_text().strip() == want


def stamped_config(out, want, write, stamp=CONFIG_STAMP):
    """Call write() to make out/.config unless config_current(out, want,
    @stamp); then stamp the new .config with want.  The old stamp goes
    first, so that a write cut short cannot leave it over a .config it no
    longer describes."""
    if config_current(out, want, stamp):
        return
    (out / stamp).unlink(missing_ok=True)
    write()
    (out / stamp).write_text(want + "\n")


def merge_fragments(base, src, out, frags, env, log):
    """Merge the fragments @frags into out/.config with merge_config.sh and
    run olddefconfig; @base is make_cmd()'s command for the tree @src."""
    run([str(src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(out),
         str(out / ".config")] + [str(f) for f in frags], env=env, log=log)
    run(base + ["olddefconfig"], env=env, log=log)


# In a debian variant's build directory: every option whose value differs
# from Debian's config (debian.changes()).
DEBIAN_CHANGES = "lab-debian-changes.txt"


def write_config(arch_name, variant, flavour, out, log):
    """Write out/.config of a lab kernel: tinyconfig (the debian variant:
    Debian's config), then the fragments merged and
    checked (every line they set must hold)."""
    src = config.source_tree(flavour)
    frags = fragments(arch_name, variant, flavour)
    a = config.arch(arch_name)
    base = make_cmd(a, src, out, flavour)
    env = dict(os.environ, **BUILD_ENV)
    if variant == config.DEBIAN_VARIANT:
        deb_path = debian.config_path(a.deb_arch)
        shutil.copyfile(deb_path, out / ".config")
    else:
        run(base + ["tinyconfig"], env=env, log=log)
    merge_fragments(base, src, out, frags, env, log)
    check_config(out / ".config", frags)
    if variant == config.DEBIAN_VARIANT:
        rows = debian.changes(parse_fragment(deb_path), parse_dotconfig(out / ".config"))
        (out / DEBIAN_CHANGES).write_text(
            f"# {arch_name}/{variant}/{flavour}: options whose value differs from "
            f"Debian's {deb_path.name}\n# option Debian lab\n" +
            "".join(f"{o} {d} {f}\n" for o, d, f in rows))
        say(f"{arch_name}/{variant}/{flavour}: {len(rows)} options differ from "
            f"Debian's config ({out / DEBIAN_CHANGES})")


def configure(arch_name, variant, flavour, log):
    out = config.build_dir(arch_name, variant, flavour)
    out.mkdir(parents=True, exist_ok=True)
    stamped_config(out, config_hash(arch_name, variant, flavour),
                   lambda: write_config(arch_name, variant, flavour, out, log))
    return out


# What make and gcc print when a job was ended by a signal from outside
# (a kill, the OOM killer, Ctrl-C): the build was stopped, it did not fail.
STOPPED = re.compile(r"^(?:make(?:\[\d+\])?: \*\*\* \[.*\] (?:Terminated|Killed|Interrupt|Hangup)"
                     r"|\S+: fatal error: (?:Killed|Terminated|Interrupt|Hangup) signal "
                     r"terminated program \S+)\s*$", re.M)


def stopped(returncode, text):
    """Why a make that exited with @returncode and printed @text was stopped
    from outside (a signal to make or to one of its jobs), or "" when it
    ran to its end, failed or not."""
    if returncode < 0:
        return f"make ended by {signal.Signals(-returncode).name}"
    m = STOPPED.search(text)
    return m.group(0).strip() if m else ""


def raise_if_stopped(returncode, text, log):
    """LabError when a failed make was stopped from outside (stopped()): no
    verdict on the source can come from it, so nothing is to be stored."""
    why = stopped(returncode, text)
    if why:
        raise LabError(f"build stopped from outside, not failed: {why} (log: {log}); "
                       "no verdict is stored")


def first_error(log):
    """The first compiler/linker/modpost error in a build log, with a little
    context."""
    lines = log.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if re.search(r"(error:|Error \d|undefined reference|\*\*\* |^ERROR: modpost: )", line):
            return "\n".join(lines[max(0, i - 3):i + 4])
    return "\n".join(lines[-15:])


class _Ahead:
    """A kernel that build_ahead() builds: done when its build ended."""

    def __init__(self):
        self.done = threading.Event()
        self.image = None
        self.error = None


_ahead = {}
_ahead_lock = threading.Lock()
# CPU priority of the builds made ahead: below the QEMU boots they overlap
# with, so that those keep their speed and the builds fill the idle CPU
AHEAD_NICE = 10


def build_ahead(kernels):
    """Build kernels, (arch, variant, flavour) tuples, one after the other in
    a background thread at a lower CPU priority, so that they overlap with
    the boots of the kernels before them; build() of one of them waits for
    it and returns its image or raises its error."""
    todo = []
    with _ahead_lock:
        for k in kernels:
            if k not in _ahead:
                _ahead[k] = _Ahead()
                todo.append((k, _ahead[k]))

    def work():
        for (arch_name, variant, flavour), entry in todo:
            try:
                entry.image = _build(arch_name, variant, flavour, nice=AHEAD_NICE)
            except LabError as e:
                entry.error = e
            except Exception as e:  # noqa: BLE001 - handed to the waiter
                entry.error = LabError(f"build of {'/'.join((arch_name, variant, flavour))} "
                                       f"failed: {e!r}")
            finally:
                entry.done.set()

    if todo:
        say("building ahead: " + ", ".join("/".join(k) for k, _ in todo))
        threading.Thread(target=work, name="build-ahead", daemon=True).start()


def build(arch_name, variant="default", flavour="patched", jobs=None):
    """Configure and build; return the path of the bootable image."""
    with _ahead_lock:
        entry = _ahead.pop((arch_name, variant, flavour), None)
    if entry is not None:
        if not entry.done.is_set():
            say(f"waiting for the build of {arch_name}/{variant}/{flavour}")
        entry.done.wait()
        if entry.error:
            raise entry.error
        return entry.image
    return _build(arch_name, variant, flavour, jobs)


def _build(arch_name, variant, flavour, jobs=None, nice=0):
    if flavour not in config.FLAVOURS + config.SCRATCH_TREES:
        raise LabError(f"unknown flavour '{flavour}' (known: {', '.join(config.FLAVOURS)})")
    a = config.arch(arch_name)
    if a.cross and not shutil.which(f"{a.cross}gcc"):
        raise LabError(f"{a.cross}gcc not found: apt-get install gcc-aarch64-linux-gnu")
    src = config.source_tree(flavour)
    if not (src / "Makefile").exists():
        raise LabError(f"no source tree at {src}; run 'lab source apply'")
    log = config.log_dir() / f"build-{arch_name}-{variant}-{flavour}.log"
    log.write_text("")
    t = Timer()
    say(f"building {arch_name}/{variant}/{flavour} (log: {log})")
    out = configure(arch_name, variant, flavour, log)
    env = dict(os.environ, **BUILD_ENV)
    cmd = make_cmd(a, src, out, flavour, jobs)
    if variant == config.DEBIAN_VARIANT:
        # the image only: Debian's modules are configured, not built
        cmd.append(os.path.basename(a.image))
    if nice:
        cmd = ["nice", "-n", str(nice)] + cmd
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = spawn(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
        last = time.monotonic()
        while p.poll() is None:
            time.sleep(2)
            if time.monotonic() - last >= 30:
                last = time.monotonic()
                n = sum(1 for l in open(log, errors="replace") if l.startswith("  CC "))
                say(f"  {arch_name}/{variant}/{flavour}: {n} objects compiled, {t}")
    if p.returncode != 0:
        raise LabError(f"build of {arch_name}/{variant}/{flavour} failed "
                       f"(full log: {log}); first error:\n{first_error(log)}")
    image = out / a.image
    if not image.exists():
        raise LabError(f"build finished but {image} is missing (log: {log})")
    say(f"built {image} in {t}")
    return image


def image_path(arch_name, variant="default", flavour="patched"):
    a = config.arch(arch_name)
    return config.build_dir(arch_name, variant, flavour) / a.image


def has_function(arch_name, variant, flavour, name):
    """Whether the built kernel's System.map lists the function @name, as
    itself or as a clone gcc made of it (@name.isra.N, @name.constprop.N,
    as the guest's kprobe set-up takes it); False when the kernel has no
    System.map."""
    path = config.build_dir(arch_name, variant, flavour) / "System.map"
    if not path.exists():
        return False
    want = re.compile(rf"[0-9a-f]+ [tT] {re.escape(name)}"
                      r"(\.(isra|constprop)\.[0-9]+)*")
    with open(path) as f:
        return any(want.fullmatch(line.rstrip("\n")) for line in f)


def start_state(arches, variant="default", ccache=None):
    """What a run found when it started, for its record: the files in
    ccache (@ccache: its counters then, read now when None) and the
    kernels of @arches and @variant already built.  A cold run (a new
    machine) is one with neither: outputs/jobtime.py and
    outputs/testsummary.py tell it from a warm one by them."""
    if ccache is None:
        ccache = ccache_stats()
    return {"ccache_files": ccache.get("files_in_cache", 0),
            "kernels_built": [f"{a}/{f}" for a in arches for f in config.FLAVOURS
                              if image_path(a, variant, f).exists()]}


# Beside the bisect build directory: one empty file per commit tree that
# built there, named by built_key(), and in IMAGES_DIR the boot image that
# build made, under the same name (commit_image()).
BUILT_DIR = "built"
IMAGES_DIR = "images"

# The lab's own code that decides whether a commit builds (the make
# command, the config steps, each_commit() itself).
EACH_COMMIT_CODE = ("lab/kernel/build.py",)


def tools_key(cross):
    """A hash over what decides a commit's build beside its tree and the
    config: toolchain(@cross) and the lab's EACH_COMMIT_CODE."""
    return hashlib.sha256(json.dumps({"tools": toolchain(cross),
                                      "code": code_hash(EACH_COMMIT_CODE)},
                                     sort_keys=True).encode()).hexdigest()[:16]


def built_key(tree_hash, config_hash_, tools_key_):
    """The name of the stamp of a commit that built: its tree (the source,
    whatever commit carries it), the config fragments' hash and
    tools_key() (the compilers, binutils and the lab's build code)."""
    return f"{tree_hash}-{config_hash_}-{tools_key_}"


def commit_image(out, key):
    """The boot image kept of the commit tree that built under @key
    (built_key()) in the bisect build directory @out."""
    return out / IMAGES_DIR / key


def keep_image(out, image, key):
    """Copy the boot image a commit's build made (@image, relative to @out)
    to commit_image(); the image is what a later boot of that commit needs
    without building it again."""
    src = out / image
    if not src.exists():
        raise LabError(f"{src}: the build of {key} made no boot image")
    dst = commit_image(out, key)
    dst.parent.mkdir(exist_ok=True)
    shutil.copyfile(src, dst)


def each_commit(arch_name, variant="default"):
    """Build every commit of the series in a scratch worktree (bisectability).

    The worktree WORK/src/bisect shares the repository of the source trees;
    its build directory is a direct child of it, so ccache hits what the
    stock and patched builds compiled.  A commit whose tree built before in
    the same config (a stamp in BUILT_DIR, and its image kept in IMAGES_DIR
    by keep_image()) is not built again: a change to
    one patch builds that commit and the ones after it, and a run cut off
    goes on where it stopped; a new compiler or binutils, or a change to
    the lab's build code (EACH_COMMIT_CODE), builds every commit again.
    Returns the list of failed commits.
    """
    from . import source
    patched = source.apply()
    tree = config.source_tree("bisect")
    if not tree.exists():
        run(["git", "-C", str(patched), "worktree", "add", "-q", "--detach",
             str(tree), source.BASE_TAG])
    commits = source.out(["git", "-C", str(patched), "rev-list", "--reverse",
                          f"{source.BASE_TAG}..HEAD"]).split()
    a = config.arch(arch_name)
    out = tree / f"out-{arch_name}-{variant}"
    frags = fragments(arch_name, variant, "patched")
    want = config_hash(arch_name, variant, "patched")
    tools = tools_key(a.cross)
    env = dict(os.environ, **BUILD_ENV)
    base = make_cmd(a, tree, out, "bisect")
    failed = []
    built = out / BUILT_DIR
    for c in commits:
        subject = source.out(["git", "-C", str(patched), "log", "-1", "--format=%s", c])
        stamp = built / built_key(
            source.out(["git", "-C", str(patched), "rev-parse", f"{c}^{{tree}}"]), want, tools)
        if stamp.exists() and commit_image(out, stamp.name).exists():
            say(f"builds {arch_name}: {c[:12]} {subject} (this tree built before, "
                "in this config, with these tools)")
            continue
        run(["git", "-C", str(tree), "checkout", "-q", "--detach", c], quiet=True)
        log = config.log_dir() / f"bisect-{arch_name}-{c[:12]}.log"
        log.write_text("")
        out.mkdir(parents=True, exist_ok=True)
        # tinyconfig at the first commit, and again whenever a fragment
        # changed since the .config was made (olddefconfig alone would
        # keep the old fragments' choices); the fragments are merged at
        # every commit, so that an option the series adds part-way takes
        # the fragments' value from the commit that adds it
        if not config_current(out, want):
            (out / CONFIG_STAMP).unlink(missing_ok=True)
            run(base + ["tinyconfig"], env=env, log=log)
        merge_fragments(base, tree, out, frags, env, log)
        (out / CONFIG_STAMP).write_text(want + "\n")
        start = log.stat().st_size
        p = run(base, env=env, log=log, check=False)
        ok = p.returncode == 0
        if not ok:
            raise_if_stopped(p.returncode, log.read_bytes()[start:].decode(errors="replace"),
                             log)
        say(f"{'builds' if ok else 'FAILS '} {arch_name}: {c[:12]} {subject}")
        if ok:
            built.mkdir(exist_ok=True)
            keep_image(out, a.image, stamp.name)
            stamp.touch()
        else:
            print(first_error(log))
            failed.append(c)
    return failed
