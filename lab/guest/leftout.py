# SPDX-License-Identifier: GPL-2.0-only
"""Left out: the verdicts of the probes of what a plan leaves out.

A test boot's plan leaves out, with the harness's -T, the tests that
suites.ARCH_LEFT_OUT and BOOT_LEFT_OUT name for its arch and boot, and
then runs exactly those on their own, with -t, as the program
"<program>.left-out" (suites.left_out_probes()).  A table entry is a
claim: "this test can only skip here".  The probe checks the claim in the
guest, so that an entry cannot hide a test the arch or boot can run:

  - each case of a probe must SKIP, with the entry's SKIP message (its
    glob), or as a fixture variant for the other kernel;
  - a case that passes, fails, or skips for another reason fails;
  - each test the probe runs must have at least one case, on one of the
    boot's kernels, that skipped with the entry's message: a probe that
    printed nothing, or only other kernels' variants, confirms nothing.
"""

import fnmatch

from . import results, skips, suites


def is_probe(program):
    return program.endswith(suites.PROBE_SUFFIX)


def _test_name(leaf):
    """The test a leaf ("<program>/<fixture>[.<variant>].<test>") is a case
    of."""
    return leaf.split("/", 1)[1].rsplit(".", 1)[-1]


def judge(arch_name, boot, prefixes, per_flavour, planned=None):
    """(status, name, detail) rows of the probe leaves of one boot's
    kernels: prefixes {flavour: row prefix}, per_flavour {flavour: [Result]}
    (every leaf of the boot; those of other programs are not looked at),
    planned the programs of the boot's plan (None: the probes that
    reported).  A planned probe none of whose tests was confirmed fails
    per test, whatever else the boot reported."""
    probes = suites.left_out_probes(arch_name, boot)
    rows, confirmed = [], set()
    for flavour, leaves in per_flavour.items():
        for r in leaves:
            if not is_probe(r.program):
                continue
            name = f"{prefixes[flavour]}/{r.name}"
            prog = suites.base_program(r.program)
            test = _test_name(r.name)
            why, skip = probes.get(prog, {}).get(test, (None, None))
            if test in results.PROGRAM_LEAVES or r.name == r.program:
                rows.append(("fail", name, r.detail or "the probe program failed"))
            elif why is None:
                rows.append(("fail", name, f"{test} is not left out of {prog} here, "
                             "yet its probe ran it"))
            elif r.status == "pass":
                rows.append(("fail", name, f"left out of the plan ({why}), but it "
                             "passes here: the table hides a test this boot can run"))
            elif r.status != "skip":
                rows.append(("fail", name, f"left out of the plan ({why}), and it "
                             f"{r.status}s here instead of skipping: {r.detail}"))
            elif fnmatch.fnmatchcase(r.detail, skip):
                confirmed.add((prog, test))
                rows.append(("pass", name, ""))
            elif skips.other_kernel(r.detail) not in (None, flavour):
                rows.append(("variant", name, "the other kernel's variant"))
            else:
                rows.append(("fail", name, f"left out of the plan ({why}), but it skips "
                             f"for another reason: {r.detail} (expected: {skip})"))
    if planned is None:
        planned = [r.program for leaves in per_flavour.values() for r in leaves]
    ran = {suites.base_program(p) for p in planned if is_probe(p)}
    for prog, tests in sorted(probes.items()):
        if prog not in ran:
            continue        # not in this plan (lab test --only)
        for test, (why, skip) in sorted(tests.items()):
            if (prog, test) not in confirmed:
                rows.append(("fail", f"{prefixes[next(iter(prefixes))]}/"
                             f"{prog}{suites.PROBE_SUFFIX}/{test}",
                             f"no case of {test} skipped with '{skip}' on this boot: "
                             f"nothing confirms that it is left out for a reason ({why})"))
    return rows
