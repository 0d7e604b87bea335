# SPDX-License-Identifier: GPL-2.0-only
"""The commit-tests leaves of 'lab check' (check/<arch>/commit-tests): the
mprotect and read-side tests at every commit of the series from FIRST on.

The each-commit leaf shows that every commit builds; a bisect also boots
them.  This leaf boots, in the lab config, the kernel of each commit from
patch FIRST (the first of the mprotect series) to the end of the series,
with PROGRAMS' tests (the guest programs of now, the same plan 'lab test'
gives them), and judges each boot alone:

- the boot itself (guest/testboot.boot_problems(): it reached the plan and
  ended, no kernel report, no set-up failure) and a test result on the
  console;
- every result passes, or is a skip that 'lab test' accounts for the
  patched kernel (skips.tsv, or a fixture variant for the stock kernel),
  or is declared in LATER: a test of a behaviour a later patch of the
  series brings, which may fail or skip before that patch and must pass
  from it on;
- at least one result passes.

The images come from the each-commit builds (build.keep_image()); a
commit that did not build there fails this leaf as well.
"""

import fnmatch

from ..core import config
from ..core.util import say
from ..guest import image, results, skips, suites
from ..guest.testboot import boot_and_parse, boot_problems
from ..kernel import build, source
from . import debianboot, test

# The first patch whose commit is booted: 0032, the mprotect series'
# first (the read side, 0043-0045, follows it).
FIRST = 32
PROGRAMS = ("mprotect_batch", "read_batch")
VARIANT = "default"

# Tests of a behaviour a later patch brings: (glob over "<program>/<leaf>",
# the patch from which it must pass, why).  Before that patch such a
# result may fail or skip; from it on it is judged as any other.
LATER = ()

# The lab's code that decides the verdict, beside the guest's side (stamp
# inputs of 'lab check').
CODE = ("lab/commands/committests.py", "lab/commands/test.py")


def stamp_inputs(arch_name):
    """As a boot leaf's (debianboot.stamp_inputs()), with this leaf's code."""
    return debianboot.stamp_inputs(arch_name, CODE)


def later(name, patch, table=None):
    """The LATER entry that lets result @name ("<program>/<leaf>") not pass
    at the commit of patch number @patch, or None."""
    for glob, first, why in LATER if table is None else table:
        if patch < first and fnmatch.fnmatchcase(name, glob):
            return glob, first, why
    return None


def judge(arch_name, patch, parsed, problems, table=None):
    """Rows (status, name, detail) of the boot of patch number @patch's
    commit: @parsed its results (results.parse()), @problems its
    boot_problems().  Fails: each problem, no result at all, no result
    that passed, and each result that neither passed nor is accounted for
    (module docstring)."""
    prefix = f"{arch_name}/commit-{patch:04d}"
    rows = [("fail", f"{prefix}/{what}", detail) for what, detail in problems]
    if not parsed:
        rows.append(("fail", f"{prefix}/results", "no test result on the console"))
    for r in parsed:
        name = f"{prefix}/{r.name}"
        if r.status in ("pass", "xfail"):
            rows.append((r.status, name, r.detail))
            continue
        put_off = later(r.name, patch, table)
        if put_off:
            rows.append(("later", name, f"{r.status}: {r.detail} (LATER: from patch "
                         f"{put_off[1]:04d}, {put_off[2]})"))
            continue
        if r.status == "skip":
            if skips.other_kernel(r.detail) == "stock":
                rows.append(("variant", name, r.detail))
                continue
            status, detail = skips.account(f"{arch_name}/{VARIANT}/patched/{r.name}",
                                           r.detail)
            rows.append((status, name, detail))
            continue
        rows.append(("fail", name, r.detail or r.status))
    if parsed and not any(s == "pass" for s, _, _ in rows):
        rows.append(("fail", f"{prefix}/passed", "no test passed"))
    return rows


def commit_images(arch_name):
    """[(patch number, commit, image path)] of the series' commits from
    FIRST on, as the each-commit builds keep them (build.commit_image())."""
    patched = source.apply()
    commits = source.out(["git", "-C", str(patched), "rev-list", "--reverse",
                          f"{source.BASE_TAG}..HEAD"]).split()
    out = config.source_tree("bisect") / f"out-{arch_name}-{VARIANT}"
    want = build.config_hash(arch_name, VARIANT, "patched")
    tools = build.tools_key(config.arch(arch_name).cross)
    found = []
    for n, c in enumerate(commits, 1):
        if n < FIRST:
            continue
        tree = source.out(["git", "-C", str(patched), "rev-parse", f"{c}^{{tree}}"])
        found.append((n, c, build.commit_image(out, build.built_key(tree, want, tools))))
    return found


def verdict(rows, booted):
    """(status, detail, error) of the leaf from every commit's rows."""
    bad = [f"{n}: {d}" for s, n, d in rows if s == "fail"]
    passed = sum(1 for s, _, _ in rows if s == "pass")
    put_off = sum(1 for s, _, _ in rows if s == "later")
    accounted = sum(1 for s, _, _ in rows if s in ("skip", "variant"))
    what = (f"{booted} commits booted, {passed} results passed, {accounted} skips "
            f"accounted for, {put_off} results of later patches")
    if bad:
        return "fail", f"{len(bad)} failed: {bad[0]}", "\n".join(bad)
    return "pass", what, ""


def leaf(arch_name):
    """A check verdict's (status, detail, error) for check/<arch>/commit-tests."""
    failed = build.each_commit(arch_name, VARIANT)
    if failed:
        return ("fail", "does not build at " + " ".join(c[:12] for c in failed), "")
    image.build(arch_name)
    plan = suites.test_plan(arch_name, own=True, upstream=False, only=set(PROGRAMS),
                            variant=VARIANT)
    rows = []
    images = commit_images(arch_name)
    for n, c, kernel in images:
        if not kernel.exists():
            rows.append(("fail", f"{arch_name}/commit-{n:04d}/image",
                         f"{c[:12]}: no image kept by its each-commit build"))
            continue
        b = boot_and_parse(arch_name, "patched", VARIANT, plan, f"commit-{n:04d}",
                           kernel=kernel, **test.TEST_BOOT)
        these = judge(arch_name, n, results.parse(b.text()), boot_problems(b))
        say(f"{arch_name} commit {n:04d} {c[:12]}: "
            f"{sum(1 for s, _, _ in these if s == 'fail')} failed")
        rows += these
    return verdict(rows, len(images))
