# SPDX-License-Identifier: GPL-2.0-only
"""The boot leaves of 'lab check' (check/<arch>/debian-<deb arch>-boot):
the kernel built from Debian's own config, booted.

Both trees are built in the debian variant (lab/kernel/debian.py: Debian's
pinned config, every built-in option as Debian's, the guest's drivers built
in, the image only).  Each kernel boots once with the test plan of every
own test program (the switches test and each series' tests, mechanism and
correctness; no upstream selftest), as 'lab test' boots the lab's own
kernels, and the two boots are judged by the same rules
(guest/verdicts.judge()): every own test passes on both kernels, a skip
must be declared, a boot that does not finish or whose console shows a
kernel report fails.  On arm64 the patched boot must also find the CPU
features the series' paths need (suites.CPU_FEATURES).  The verdict lists
how many options each tree's config has otherwise than Debian's (the list
is in the build directory, build.DEBIAN_CHANGES).
"""

import subprocess
from collections import Counter

from ..core import config
from ..core.tally import Tally
from ..core.util import LabError
from ..guest import image, results, suites
from ..guest.testboot import boot_and_parse, boot_problems
from ..guest.verdicts import judge
from ..kernel import build
from . import test

VARIANT = config.DEBIAN_VARIANT

# The lab's code that decides a boot leaf's verdict, beside the guest's
# programs (stamp inputs of 'lab check'; the guest side is hashed whole).
CODE = ("lab/commands/debianboot.py", "lab/commands/test.py", "lab/kernel/debian.py")
GUEST_CODE_DIRS = ("lab/guest", "guest")


def stamp_inputs(arch_name, code=CODE):
    """What a boot leaf's stored verdict holds for beside the check inputs:
    the lab's code (@code, the repository's files that decide it), every
    file of the guest's side (the test programs, the image, the plan and
    its judges) and QEMU's version."""
    files = list(code)
    for d in GUEST_CODE_DIRS:
        files += subprocess.run(["git", "-C", str(config.REPO), "ls-files", d],
                                capture_output=True, text=True).stdout.split()
    return {"code": build.code_hash(sorted(set(files))),
            "qemu": build.tool_version(config.arch(arch_name).qemu)}


def changes(arch_name, flavour):
    """The rows of a built tree's DEBIAN_CHANGES list (comments left out)."""
    path = config.build_dir(arch_name, VARIANT, flavour) / build.DEBIAN_CHANGES
    if not path.exists():
        raise LabError(f"{path} is missing: the debian variant's config was not written")
    return [line for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def rows_of(arch_name):
    """Build, boot and judge; every row as (status, name, detail)."""
    for flavour in config.FLAVOURS:
        build.build(arch_name, VARIANT, flavour)
    image.build(arch_name)
    plan = suites.test_plan(arch_name, own=True, upstream=False, variant=VARIANT)
    rows, per_flavour = [], {}
    for flavour in config.FLAVOURS:
        b = boot_and_parse(arch_name, flavour, VARIANT, plan, "check", **test.TEST_BOOT)
        prefix = f"{arch_name}/{VARIANT}/{flavour}"
        rows += [("fail", f"{prefix}/{what}", detail) for what, detail in boot_problems(b)]
        per_flavour[flavour] = results.parse(b.text())
        if not per_flavour[flavour]:
            rows.append(("fail", f"{prefix}/results",
                         f"no test result on the console: {b.console}"))
        if flavour == "patched" and arch_name in suites.CPU_FEATURES:
            t = Tally()
            test.cpu_features(t, prefix, b, want=suites.CPU_FEATURES[arch_name])
            rows += t.rows
    rows += [(s, n, d) for s, n, d, _ in judge(arch_name, VARIANT, per_flavour, plan)]
    return rows


# Row statuses that fail a leaf: judge()'s 'regress' is an upstream
# leaf's, and none runs here, but one would fail as anywhere else.
FAILING = ("fail", "regress")


def verdict(rows, n_changes):
    """(status, detail, error) of a boot leaf from its rows: fail when a row
    fails or when no own test passed on a kernel."""
    counts = Counter(s for s, _, _ in rows)
    bad = [f"{n}: {d}" for s, n, d in rows if s in FAILING]
    passed = {fl: sum(1 for s, n, _ in rows if s == "pass" and f"/{fl}/" in n)
              for fl in config.FLAVOURS}
    for fl, n in passed.items():
        if not n:
            bad.append(f"{fl}: no own test passed")
    what = (f"{passed['stock']} stock and {passed['patched']} patched test rows "
            f"passed, {counts['skip']} declared skips; config differs from Debian's "
            f"in {n_changes['stock']} options (stock), {n_changes['patched']} "
            "(patched), the modules not built")
    if bad:
        return "fail", f"{len(bad)} failed: {bad[0]}", "\n".join(bad)
    return "pass", what, ""


def leaf(arch_name):
    """A check verdict's (status, detail, error) for check/<arch>/debian-*-boot."""
    rows = rows_of(arch_name)
    return verdict(rows, {fl: len(changes(arch_name, fl)) for fl in config.FLAVOURS})
