# SPDX-License-Identifier: GPL-2.0-only
"""Distro: where the lab's kernels differ from Debian's, and why.

The lab's default kernels start from tinyconfig and take, from Debian's
pinned configs (linux-config-6.12, the source's version), every option
that changes the measured code (configs/*.config).  What still differs is
listed here, option by option, for the Kconfig files of the memory
manager, the arch's memory and TLB code, preemption, the tick and static
keys (KCONFIG_FILES), with the options named in EXTRA from elsewhere.

  lab_config()   the patched default kernel's .config values for an arch,
                 made by kconfig alone (tinyconfig, the fragments,
                 olddefconfig) in WORK/kconfig-<arch>: no kernel build;
  differences()  [(option, lab value, Debian value, has a prompt)] of the
                 options of the files that differ;
  reasons()      configs/differences.tsv: option glob, arches, reason;
  problems()     each option with a prompt that differs with no reason,
                 and each reason that matches no difference (stale);
  render()       docs/configs.md.

An option without a prompt (a helper selected or defaulted by others) is
not given a reason of its own: its row says which it follows.  A host
test (tests/test_distro.py) regenerates the table and fails when the doc
is stale or a difference has no reason.
"""

import fnmatch
import re
from pathlib import Path

from ..core import config
from ..core.util import LabError
from . import build

KCONFIG_FILES = {
    "x86_64": ("mm/Kconfig", "mm/Kconfig.debug", "arch/Kconfig", "kernel/Kconfig.preempt",
               "kernel/Kconfig.hz", "arch/x86/Kconfig", "arch/x86/Kconfig.debug"),
    "arm64": ("mm/Kconfig", "mm/Kconfig.debug", "arch/Kconfig", "kernel/Kconfig.preempt",
              "kernel/Kconfig.hz", "arch/arm64/Kconfig"),
}
# options of other files that decide measured code: memcg charging, NUMA
# balancing, the swap and THP basics
EXTRA = ("MEMCG", "NUMA_BALANCING", "NUMA_BALANCING_DEFAULT_ENABLED", "CGROUPS", "SWAP",
         "DEBUG_VM", "MMU_NOTIFIER", "KVM")
REASONS = config.CONFIGS / "differences.tsv"
DOC = config.REPO / "docs" / "configs.md"

_CONFIG_RE = re.compile(r"^\s*(?:menu)?config\s+(\w+)\s*$")
_PROMPT_RE = re.compile(r'^\s*(?:(?:bool|tristate|int|hex|string)\s+"|prompt\s+")')
_BLOCK_END_RE = re.compile(r"^\s*(?:(?:menu)?config|choice|endchoice|menu|endmenu|if|endif|"
                           r"source|comment)\b")


def kconfig_options(src, files):
    """{option: has a prompt} of the options the Kconfig files declare, in
    order (a later declaration with a prompt gives it one)."""
    opts = {}
    for rel in files:
        current = None
        for line in (Path(src) / rel).read_text().splitlines():
            m = _CONFIG_RE.match(line)
            if m:
                current = m.group(1)
                opts.setdefault(current, False)
                continue
            if current and _BLOCK_END_RE.match(line):
                current = None
            elif current and _PROMPT_RE.match(line):
                opts[current] = True
    return opts


def dotconfig_values(path):
    """{option: value} of a .config ("n" for 'is not set'), names without
    CONFIG_."""
    return {k.removeprefix("CONFIG_"): v for k, v in build.parse_fragment(Path(path)).items()}


def lab_config(arch_name, flavour="patched"):
    """The .config of the lab's default kernel of arch_name (path), made by
    kconfig alone in WORK/kconfig-<arch>-<flavour> from the flavour's
    source tree: what 'lab build' configures (build.write_config()),
    without the build."""
    src = config.source_tree(flavour)
    if not (src / "Makefile").exists():
        raise LabError(f"no source tree in {src}: run 'lab source apply'")
    out = config.WORK / f"kconfig-{arch_name}-{flavour}"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "kconfig.log"
    log.write_text("")
    build.write_config(arch_name, "default", flavour, out, log)
    return out / ".config"


def differences(arch_name, lab, debian, src):
    """[(option, lab value, Debian value, has a prompt)] of the options of
    KCONFIG_FILES[arch_name] and EXTRA whose values differ ('-': absent)
    between the .config values lab and debian."""
    opts = kconfig_options(src, KCONFIG_FILES[arch_name])
    for o in EXTRA:
        opts.setdefault(o, True)
    return [(o, lab.get(o, "-"), debian.get(o, "-"), prompt) for o, prompt in opts.items()
            if lab.get(o, "-") != debian.get(o, "-")]


def reasons(path=REASONS):
    """[(option glob, arches glob, reason)] of configs/differences.tsv."""
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise LabError(f"{path}:{n}: want 'option glob<TAB>arches<TAB>reason'")
        rows.append(tuple(p.strip() for p in parts))
    return rows


def reason_of(option, arch_name, table):
    """The reason of the first row of table matching option on arch_name,
    or None."""
    for glob, arches, why in table:
        if fnmatch.fnmatchcase(option, glob) and fnmatch.fnmatchcase(arch_name, arches):
            return why
    return None


def problems(diffs, table):
    """'arch: OPTION ...' for each option with a prompt that differs with no
    reason, and for each reason row that matches no difference of any arch
    it names (diffs: {arch: differences()})."""
    bad = []
    used = set()
    for arch_name, rows in diffs.items():
        for o, lab, deb, prompt in rows:
            if not prompt:
                continue
            for i, (glob, arches, _) in enumerate(table):
                if fnmatch.fnmatchcase(o, glob) and fnmatch.fnmatchcase(arch_name, arches):
                    used.add(i)
                    break
            else:
                bad.append(f"{arch_name}: {o} (lab {lab}, Debian {deb}) differs with "
                           f"no reason in {REASONS.name}")
    for i, (glob, arches, _) in enumerate(table):
        if i not in used:
            bad.append(f"{REASONS.name}: '{glob}' ({arches}) matches no option that "
                       "differs: stale")
    return bad


def render(diffs, table, versions):
    """docs/configs.md from diffs ({arch: differences()}), the reasons and
    versions ({arch: the Debian config's package and name})."""
    out = ["# The lab's kernels against Debian's configs", "",
           "<!-- made by 'lab report --configs' (lab/kernel/distro.py); do not edit -->", "",
           "The lab's default kernels (tinyconfig plus `configs/common.config` and the",
           "arch's fragment) against Debian's pinned configs: every option of the",
           "Kconfig files below whose value differs, with its reason",
           "(`configs/differences.tsv`). Options that Debian builds as modules (`m`)",
           "are off or built in here: the lab boots without modules. An option",
           "without a prompt follows from others and has no reason of its own.", ""]
    for arch_name, rows in diffs.items():
        prompted = [r for r in rows if r[3]]
        helpers = [r for r in rows if not r[3]]
        out += [f"## {arch_name}", "",
                f"Debian's config: {versions[arch_name]}. Files: " +
                ", ".join(f"`{f}`" for f in KCONFIG_FILES[arch_name]) +
                "; and " + ", ".join(f"`{o}`" for o in EXTRA) + ".", "",
                f"{len(prompted)} options with a prompt differ, and {len(helpers)} "
                "without one.", "",
                "| option | lab | Debian | why |", "|---|---|---|---|"]
        for o, lab, deb, _ in prompted:
            out.append(f"| `{o}` | {lab} | {deb} | {reason_of(o, arch_name, table) or '?'} |")
        out += ["", "Without a prompt (selected or defaulted by the options above): " +
                ", ".join(f"`{o}` ({lab} / {deb})" for o, lab, deb, _ in helpers) + ".", ""]
    return "\n".join(out)


def generate():
    """(text of docs/configs.md, problems()) from the pinned Debian configs
    and the lab's configs as kconfig makes them now."""
    from . import check
    diffs, versions = {}, {}
    for arch_name in config.ARCHES:
        t = check.TARGETS[arch_name]
        deb_path = check.debian_config(t)
        versions[arch_name] = f"`{deb_path.parent.name}/{deb_path.name}`"
        lab = dotconfig_values(lab_config(arch_name))
        diffs[arch_name] = differences(arch_name, lab, dotconfig_values(deb_path),
                                       config.source_tree("patched"))
    table = reasons()
    return render(diffs, table, versions), problems(diffs, table)
