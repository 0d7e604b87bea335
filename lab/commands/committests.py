# SPDX-License-Identifier: GPL-2.0-only
"""The commit-tests leaves of 'lab check' (check/<arch>/commit-tests): the
mprotect and read-side tests at every commit of the series from FIRST on.

The each-commit leaf shows that every commit builds; a bisect also boots
them.  This leaf boots, in the lab config, the kernel of each commit from
patch FIRST (the first of the mprotect series) to the end of the series,
from the image its each-commit build kept (build.keep_image()), with the
tests of PROGRAMS (the guest programs of now, without the probes of what
'lab test' leaves out).

A program runs as on the stock kernel (LAB_FLAVOUR=stock, commit_plan())
until the series holds the first of its switches the arch shows
(switch_patches()): before it, the commit is stock 6.12 as far as the
program can tell.  From then on it runs as on the patched kernel, and a
test whose switch a later patch adds fails at its set-up
("patched kernel without <switch>", absent_switches()): that result is
put off to the patch that adds the switch.  Each boot is judged alone
(judge()):

- the boot itself (testboot.boot_problems(): it reached the plan and
  ended, every program started, no kernel report, no set-up failure), a
  test result on the console, and on arm64 the CPU features the series'
  paths need (suites.CPU_FEATURES);
- every result passes, or is a skip that skips.tsv declares, or a fixture
  variant for the kernel the program does not run as, or failed for want
  of a switch a later patch adds, or is declared in LATER: a test of a
  behaviour a later patch of the series brings, which may fail or skip
  before that patch when the program runs as patched, and must pass from
  it on.  A
  program's own leaves (it did not finish, it reported another count than
  its plan, it ran no test) are never excused;
- at least one result passes, and every commit from FIRST was booted.
"""

import fnmatch
import re

from ..core import config
from ..core.tally import Tally
from ..core.util import LabError, say
from ..guest import image, results, skips, suites
from ..guest.testboot import boot_and_parse, boot_problems
from ..kernel import build, source
from . import debianboot, test

# The first patch whose commit is booted: 0032, the mprotect series'
# first (the read side, 0043-0045, follows it).
FIRST = 32
# The programs booted, each with the switches whose paths its tests run.
PROGRAMS = {"mprotect_batch": ("mprotect_batch",),
            "read_batch": ("contpte_early_exit", "mincore_batch", "mbind_batch")}
VARIANT = "default"

# Tests of a behaviour a later patch brings: (glob over "<program>/<leaf>",
# the patch from which it must pass, why).  Before that patch such a
# result may fail or skip; from it on it is judged as any other.  Read
# from the tests against the patches; the functions a test probes must
# exist for its kprobes to be set.
LATER = (
    ("mprotect_batch/mech.*.private_lookups", 37,
     "one page lookup per batch of exclusive anonymous pages comes with 0037"),
    ("mprotect_batch/pkey.*", 37,
     "it also counts the lookups, one per batch of exclusive anonymous pages "
     "from 0037 (booted: 0035 fails only there)"),
    ("mprotect_batch/mech.*.contpte_unfolds", 39,
     "arm64's batched protection change comes with 0039"),
    ("mprotect_batch/numa.*", 42, "the batched NUMA scan comes with 0042"),
    ("mprotect_batch/numaskip.*", 42,
     "the NUMA scan's skip checks are counted where 0041-0042 put them"),
    ("mprotect_batch/mech.*.walk_choice", 54,
     "it probes mprotect_starts_large() (0038), __change_protection() (0046) "
     "and change_ptes_unbatched() (0053), and arm64's shared layout takes 0054's walk"),
)

# A patch that adds a switch: its line in mm/foliobatch.c's table.
SWITCH_RE = re.compile(r"^\+\s*FOLIOBATCH_SWITCH\((\w+),", re.M)
# guest/include/lab_test.h lab_env_setup() on a patched kernel without the
# test's switch, and the harness's line that starts a test.
ABSENT_RE = re.compile(r"patched kernel without /sys/kernel/mm/foliobatch/(\w+)")
HARNESS_RUN_RE = re.compile(r"^#\s+RUN\s+(\S+) \.\.\.")
# What guest/lib.sh's lab_run prints for a program whose tests failed: the
# harness's own exit status then, KSFT_FAIL.
FAILED_EXIT = "exit 1"

# The lab's code that decides the verdict, beside the guest's side (stamp
# inputs of 'lab check'): the judge and the plan, the boot (QEMU's
# machine and arguments), how the commits and patches are counted, and
# the helper that hashes them.
CODE = ("lab/commands/committests.py", "lab/commands/test.py",
        "lab/commands/debianboot.py", "lab/core/config.py", "lab/kernel/source.py")


def stamp_inputs(arch_name):
    """As a boot leaf's (debianboot.stamp_inputs()), with this leaf's code."""
    return debianboot.stamp_inputs(arch_name, CODE)


def patch_number(path):
    """The number of a patch file of the series, from its name (0032-...)."""
    m = re.match(r"(\d{4})-", path.name)
    if not m:
        raise LabError(f"{path.name}: a patch of the series is not named NNNN-...")
    return int(m.group(1))


def switch_patches(files=None):
    """{switch: the number of the patch that adds it} over the series
    (@files: its patch files, in order)."""
    added = {}
    for f in source.series_files() if files is None else files:
        for name in SWITCH_RE.findall(f.read_text()):
            added.setdefault(name, patch_number(f))
    return added


def program_flavour(arch_name, program, patch, added):
    """The kernel @program runs as at the commit of patch number @patch:
    'stock' until the series holds one of its switches that @arch_name
    shows (@added: switch_patches()), 'patched' from then on."""
    shown = [s for s in PROGRAMS[program] if s not in config.HIDDEN_SWITCHES[arch_name]]
    unknown = [s for s in shown if s not in added]
    if unknown:
        raise LabError(f"{program}: no patch of the series adds {', '.join(unknown)}")
    return "patched" if any(added[s] <= patch for s in shown) else "stock"


def commit_plan(plan, flavours):
    """@plan with each program that runs as stock (@flavours: {program:
    program_flavour()}) run with LAB_FLAVOUR=stock, and patched put back
    after it."""
    out = []
    for line in plan.splitlines():
        words = line.split()
        if line.startswith("lab_run ") and flavours.get(words[1]) == "stock":
            out += ["export LAB_FLAVOUR=stock", line, "export LAB_FLAVOUR=patched"]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def absent_switches(text):
    """{"<program>/<test>": switch} of the tests of a console that stopped
    at their set-up for want of their switch (ABSENT_RE)."""
    out, prog, test = {}, None, None
    for line in results.console_lines(text):
        m = results.START_RE.match(line)
        if m:
            prog, test = m.group(1), None
            continue
        m = HARNESS_RUN_RE.match(line.strip())
        if m:
            test = m.group(1)
            continue
        m = ABSENT_RE.search(line)
        if m and prog and test:
            out[f"{prog}/{test}"] = m.group(1)
            continue
        if results.SUB_RE.match(line) or results.TOP_RE.match(line):
            test = None
    return out


def program_exits(text):
    """{program: what its own result line says after '#'} of the programs
    of a console whose result line is 'not ok' ('exit 1', 'exit 139',
    'timeout', ...)."""
    out = {}
    for line in results.console_lines(text):
        m = results.TOP_RE.match(line)
        if m and m.group(1) == "not ok":
            out[m.group(3)] = (m.group(4) or "").strip()
    return out


def later(name, patch, table=None):
    """The LATER entry that lets result @name ("<program>/<leaf>") not pass
    at the commit of patch number @patch, or None; never for a program's
    own leaves (results.PROGRAM_LEAVES)."""
    prog, _, leaf = name.partition("/")
    if not leaf or leaf in results.PROGRAM_LEAVES:
        return None
    for glob, first, why in LATER if table is None else table:
        if patch < first and fnmatch.fnmatchcase(name, glob):
            return glob, first, why
    return None


def judge(arch_name, patch, parsed, problems, flavours=None, absent=None, added=None,
          table=None, exits=None):
    """Rows (status, name, detail) of the boot of patch number @patch's
    commit: @parsed its results (results.parse()), @problems its
    boot_problems(), @flavours {program: 'stock' or 'patched'}, the kernel
    each program ran as (default patched), @absent its absent_switches(),
    @added switch_patches(), @exits its program_exits().  Fails: each
    problem, no result at all, no result that passed, each result that
    neither passed nor is accounted for (module docstring), and a program
    whose failed tests were all put off but that ended otherwise than a
    harness whose tests failed does (FAILED_EXIT): results.parse() makes
    no row of its exit then."""
    prefix = f"{arch_name}/commit-{patch:04d}"
    rows = [("fail", f"{prefix}/{what}", detail) for what, detail in problems]
    if not parsed:
        rows.append(("fail", f"{prefix}/results", "no test result on the console"))
    for r in parsed:
        name = f"{prefix}/{r.name}"
        flavour = (flavours or {}).get(suites.base_program(r.program or r.name), "patched")
        if r.status in ("pass", "xfail"):
            rows.append((r.status, name, r.detail))
            continue
        sw = (absent or {}).get(r.name)
        prog = suites.base_program(r.program or r.name)
        if r.status == "fail" and sw in PROGRAMS.get(prog, ()) and \
                (added or {}).get(sw, 0) > patch:
            rows.append(("later", name, f"{r.detail or 'fail'}: no {sw} yet, patch "
                         f"{added[sw]:04d} adds it"))
            continue
        other = skips.other_kernel(r.detail) if r.status == "skip" else None
        if other and other != flavour:
            rows.append(("variant", name, f"{r.detail} (run as {flavour})"))
            continue
        # a program that runs as stock tests stock's behaviour, which no
        # later patch brings
        put_off = later(r.name, patch, table) if flavour == "patched" else None
        if put_off:
            rows.append(("later", name, f"{r.status}: {r.detail} (LATER: from patch "
                         f"{put_off[1]:04d}, {put_off[2]})"))
            continue
        if r.status == "skip":
            status, detail = skips.account(f"{arch_name}/{VARIANT}/{flavour}/{r.name}",
                                           r.detail)
            rows.append((status, name, detail))
            continue
        rows.append(("fail", name, r.detail or r.status))
    for prog, how in sorted((exits or {}).items()):
        if how != FAILED_EXIT and not any(s == "fail" and n.startswith(f"{prefix}/{prog}/")
                                          for s, n, _ in rows):
            rows.append(("fail", f"{prefix}/{prog}/<exit status>",
                         f"ended '{how}', not as a harness whose tests failed"))
    if parsed and not any(s == "pass" for s, _, _ in rows):
        rows.append(("fail", f"{prefix}/passed", "no test passed"))
    return rows


def commit_images(arch_name):
    """[(patch number, commit, image path)] of the series' commits from
    FIRST on, as the each-commit builds keep them (build.commit_image());
    the numbers are the patch files'."""
    patched = source.apply()
    commits = source.out(["git", "-C", str(patched), "rev-list", "--reverse",
                          f"{source.BASE_TAG}..HEAD"]).split()
    files = source.series_files()
    if len(commits) != len(files):
        raise LabError(f"{patched} has {len(commits)} commits over {source.BASE_TAG}, "
                       f"the series {len(files)} patches")
    out = config.source_tree("bisect") / f"out-{arch_name}-{VARIANT}"
    want = build.config_hash(arch_name, VARIANT, "patched")
    tools = build.tools_key(config.arch(arch_name).cross)
    found = []
    for f, c in zip(files, commits):
        n = patch_number(f)
        if n < FIRST:
            continue
        tree = source.out(["git", "-C", str(patched), "rev-parse", f"{c}^{{tree}}"])
        found.append((n, c, build.commit_image(out, build.built_key(tree, want, tools))))
    return found


def verdict(rows, booted, expected):
    """(status, detail, error) of the leaf from every commit's rows: fail
    when a row fails, or when fewer commits booted than were expected
    (none at all included)."""
    bad = [f"{n}: {d}" for s, n, d in rows if s == "fail"]
    if booted < expected or not expected:
        bad.append(f"{booted} of {expected} commits booted")
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
    base = suites.test_plan(arch_name, own=True, upstream=False, only=set(PROGRAMS),
                            variant=VARIANT, probes=False)
    added = switch_patches()
    rows, booted = [], 0
    images = commit_images(arch_name)
    for n, c, kernel in images:
        prefix = f"{arch_name}/commit-{n:04d}"
        if not kernel.exists():
            rows.append(("fail", f"{prefix}/image",
                         f"{c[:12]}: no image kept by its each-commit build"))
            continue
        flavours = {p: program_flavour(arch_name, p, n, added) for p in PROGRAMS}
        b = boot_and_parse(arch_name, "patched", VARIANT, commit_plan(base, flavours),
                           f"commit-{n:04d}", kernel=kernel, **test.TEST_BOOT)
        booted += 1
        text = b.text()
        these = judge(arch_name, n, results.parse(text), boot_problems(b), flavours,
                      absent_switches(text), added, exits=program_exits(text))
        if arch_name in suites.CPU_FEATURES:
            t = Tally()
            test.cpu_features(t, prefix, b, want=suites.CPU_FEATURES[arch_name])
            these += t.rows
        say(f"{arch_name} commit {n:04d} {c[:12]}: "
            f"{sum(1 for s, _, _ in these if s == 'fail')} failed "
            f"({', '.join(f'{p} as {f}' for p, f in flavours.items())})")
        rows += these
    return verdict(rows, booted, len(images))
