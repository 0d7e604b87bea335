# SPDX-License-Identifier: GPL-2.0-only
"""Results: parse the guest's KTAP and scan its console for kernel reports.

A plan prints one KTAP result per program; each program's own output is
indented by four spaces, so the results of its subtests are the lines
'    ok N name' / '    not ok N name'.  Leaves are the unit of counting: a
program's subtests, or the program itself when it reports none (unless it
should have: no_tests()).
"""

import json
import re
from collections import Counter
from dataclasses import dataclass

TOP_RE = re.compile(r"^(not ok|ok) (\d+) (\S+)(?:\s+#\s*(.*))?$")
SUB_RE = re.compile(r"^    (not ok|ok) (\d+) (.*?)(?:\s+#\s*(SKIP|TODO|XFAIL)\b(.*))?$",
                    re.IGNORECASE)
# A result with no description, only a directive ('ok 4 # SKIP mbind()
# failed', as kselftest.h's ksft_test_result_skip() prints): the directive
# counts, and the name is the whole text after the number unless a [RUN]
# line named the case.
BARE_DIRECTIVE_RE = re.compile(r"^#\s*(SKIP|TODO|XFAIL)\b(.*)$", re.IGNORECASE)
# The case a kselftest.h program (cow) announces before its result: it
# names the leaf of the result that follows, and a bare directive's detail
# says it too.
RUN_RE = re.compile(r"^    # \[RUN\] (.*?)\s*$")
START_RE = re.compile(r"^# lab: start ([^:\s]+):\s*(\S*)")
# Where the plans run the own test programs from (guest/tests/*.c, all
# built with the kselftest harness): the command of their start line.
OWN_DIR = "/lab/tests/"
# A program's KTAP plan: how many subtest results it will print.
PLAN_RE = re.compile(r"^    1\.\.(\d+)\s*$")
TOOK_RE = re.compile(r"^# lab: (\S+) took (\d+(?:\.\d+)?) s$")

# Kernel reports that fail a boot.  Only text printed by the kernel (after a
# printk timestamp) counts, so a program that prints "WARNING" does not.  The
# serial console is shared: a kernel line can start in the middle of a line a
# program was printing, so a timestamp counts wherever it stands.
KERNEL_TEXT = re.compile(r"\[\s*\d+\.\d+\]\s")
REPORTS = [
    re.compile(p) for p in (
        r"\bBUG: ", r"kernel BUG at", r"^Oops", r"Internal error: Oops",
        r"Unable to handle kernel", r"general protection fault",
        r"^WARNING: ", r"------------\[ cut here \]------------",
        r"Kernel panic", r"\bKASAN\b", r"\bUBSAN\b",
        r"possible (circular|recursive) locking", r"inconsistent lock state",
        r"Bad rss-counter", r"Bad page (state|map)", r"page_table_check",
        r"soft lockup", r"hard LOCKUP", r"blocked for more than \d+ seconds",
        r"rcu: INFO: rcu_\w+ detected stall", r"rcu: .*self-detected stall",
        r"rcu: INFO: rcu_\w+ detected expedited stalls",
        r"rcu_tasks\w* detected stalls on tasks",
        r"\blist_(add|del) corruption", r"^refcount_t: ",
        # dump_page()'s header (gup_test's dump test prints one too; the
        # lab does not run it)
        r"page dumped because", r"\bKFENCE: ",
        # pmd_ERROR()/pte_ERROR(): a page table entry that is not one, as a
        # wrongly freed or retracted PTE table shows
        r"\bbad p(te|md|ud|4d|gd)\b",
        r"Bad swap file entry", r"Bad swap offset entry",
        r"Unused swap file entry", r"Unused swap offset entry",
    )
]


@dataclass
class Result:
    name: str          # "<program>/<subtest>" or "<program>"
    status: str        # pass | fail | skip | xfail (XFAIL or TODO)
    detail: str = ""
    program: str = ""
    # the program's own output lines that report a failure (FAILURE_LINE):
    # for a subtest, those printed since the previous subtest's result
    errors: tuple = ()


# A line of a program's own output that reports a failure: kselftest's and
# uffd's "ERROR: ...", khugepaged's "Fail", uffd's "failed [reason: ...]".
FAILURE_LINE = re.compile(r"ERROR|\bFail(ed)?\b|\bfailed\b|\bFAIL\b")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUMBER = re.compile(r"0x[0-9a-fA-F]+|\d+")


def failure_shape(line):
    """A failure line with colours dropped and numbers (addresses, errno,
    line numbers, counts) as N: what stays the same from run to run."""
    return _NUMBER.sub("N", _ANSI.sub("", line)).strip()


def new_failure_lines(patched, stock):
    """The failure lines of a patched leaf (a Result) whose shape
    (failure_shape()) the same leaf on stock did not print."""
    seen = {failure_shape(e) for e in stock.errors}
    return [e for e in patched.errors if failure_shape(e) not in seen]


# The leaves parse() makes up for a program whose own result line is the
# failure: it ended not ok with no failed subtest, or never reported, or it
# reported another number of subtests than its KTAP plan said, or it ran
# no test at all (no_tests()).
PROGRAM_LEAVES = ("<exit status>", "<did not finish>", "<plan count>", "<no tests>")


def no_tests(own, planned, status):
    """Why a program that ended with status (its own line's: pass, skip or
    fail) and reported no subtest ran no test, or None when its own line
    is its one leaf.  A program that failed is its own failed leaf.
    Otherwise:
      - an own program (own: started from OWN_DIR) is a kselftest harness
        program, which prints a KTAP result for every test it runs: none
        means it ran none (a -t name that is no test, every test left out
        with -T, or no test left in it), with a plan of 1..0 or without;
      - any program whose KTAP plans add up to 1..0 (kselftest.h's
        ksft_set_plan(0)) planned no test.  A program that skips as a
        whole prints '1..0 # SKIP why' (ksft_exit_skip()), which is no
        plan here: it is its own skip, declared or not like any other;
      - a program that prints no KTAP at all (khugepaged: its own lines and
        its exit status) is judged by its exit status, its one leaf."""
    if status == "fail":
        return None
    if own:
        return "the harness program reported no test" + \
            (" (KTAP plan 1..0)" if planned == 0 else "")
    if planned == 0:
        return "KTAP plan 1..0: the program planned no test"
    return None


def _own_status(m):
    """pass, fail or skip from a program's own result line (a TOP_RE match):
    ok with a SKIP directive is a skip."""
    if m.group(1) != "ok":
        return "fail"
    return "skip" if (m.group(4) or "").upper().startswith("SKIP") else "pass"


# The start of a line that kernel output may cut in two and that the verdict
# reads: a result line (a program's own or a subtest's), lab_run's start or
# lab_memstate's line (memstate.py).
_CUTTABLE = re.compile(r"^\s*(?:(?:not )?ok \d|# lab: start |# lab: mem )")


def console_lines(text):
    """The lines of a console text, with a result line that kernel output cut
    in two joined again.  The serial console is shared: a kernel message can
    land in the middle of a line a program was printing ('not ok 1
    reclaim_bat[  812.3] clocksource: ...'), and the rest of the program's
    line ('ch # exit 1') comes after it, on the next line that is not kernel
    text.  The kernel text stays a line of its own, so that kernel_reports()
    still sees it.  Only lines that start like a result or a program start
    are joined; a fragment left at the end of the console is dropped, so
    that its program counts as not finished."""
    out = []
    pending = None
    for line in text.splitlines():
        m = KERNEL_TEXT.search(line)
        if (m and m.start() > 0 and pending is None
                and _CUTTABLE.match(line[:m.start()])):
            pending = line[:m.start()]
            out.append(line[m.start():])
            continue
        if pending is not None and not (m and m.start() == 0):
            out.append(pending + line)
            pending = None
            continue
        out.append(line)
    return out


def program_results(text):
    """{program: "pass" | "fail" | "skip"} from each program's own result
    line in a console text (a program that never reported has none; one
    that reported twice is "fail" if either line was)."""
    out = {}
    for line in console_lines(text):
        m = TOP_RE.match(line)
        if m and out.get(m.group(3)) != "fail":
            out[m.group(3)] = _own_status(m)
    return out


def parse(text):
    """Return the list of leaf Results in a console text."""
    results = []
    subs = []
    errors = []         # the program's failure lines
    since = []          # ... since its last subtest result
    current = None
    own = False         # the program is an own one (no_tests())
    planned = None      # the sum of the program's KTAP plans, if it had one
    announced = ""      # the program's last '# [RUN] ...' case
    for line in console_lines(text):
        m = START_RE.match(line)
        if m:
            if current:
                # the program before never reported: keep what it did
                results.extend(_unfinished(current, subs))
            current, subs, errors, since = m.group(1), [], [], []
            planned, announced = None, ""
            own = m.group(2).startswith(OWN_DIR)
            continue
        m = PLAN_RE.match(line)
        if m and current:
            planned = (planned or 0) + int(m.group(1))
            continue
        m = RUN_RE.match(line)
        if m and current:
            announced = m.group(1)
            continue
        m = SUB_RE.match(line)
        if m and current:
            status = "fail" if m.group(1).lower() == "not ok" else "pass"
            directive = (m.group(4) or "").upper()
            detail = (m.group(5) or "").strip()
            name = m.group(3).strip()
            bare = BARE_DIRECTIVE_RE.match(name)
            if bare and not directive:
                directive, detail = bare.group(1).upper(), bare.group(2).strip()
                if announced:
                    detail = f"{detail} ({announced})"
            if announced:
                # the case, not its outcome ("No leak ..." / "Leak ..."),
                # names the leaf: an expected failure in one run does
                # not shift the names of the leaves after it
                name, announced = announced, ""
            if directive == "SKIP":
                status = "skip"
            elif directive in ("TODO", "XFAIL"):
                # an expected failure (kselftest's XFAIL, KTAP's TODO): what
                # it is, neither a pass nor a failure
                status, detail = "xfail", f"{directive}: {detail}"
            subs.append(Result(f"{current}/{name}", status,
                               detail, current, tuple(since)))
            since = []
            continue
        if current and FAILURE_LINE.search(_ANSI.sub("", line)):
            errors.append(line.strip())
            since.append(line.strip())
        m = TOP_RE.match(line)
        if m:
            prog = m.group(3)
            ok = m.group(1) == "ok"
            directive = m.group(4) or ""
            results.extend(_unique(subs))
            empty = None if subs else no_tests(own, planned, _own_status(m))
            if empty:
                results.append(Result(f"{prog}/{PROGRAM_LEAVES[3]}", "fail",
                                      empty + (f" ({directive})" if directive else ""),
                                      prog, tuple(errors)))
            elif not subs:
                results.append(Result(prog, _own_status(m), directive, prog,
                                      tuple(errors)))
            elif not ok and not any(s.status == "fail" for s in subs):
                results.append(Result(f"{prog}/{PROGRAM_LEAVES[0]}", "fail", directive, prog,
                                      tuple(errors)))
            if planned is not None and planned != len(subs):
                results.append(Result(f"{prog}/{PROGRAM_LEAVES[2]}", "fail",
                                      f"KTAP plan 1..{planned}, {len(subs)} results",
                                      prog, tuple(errors)))
            current, subs, planned, own = None, [], None, False
    if current:
        # The program never reported: the guest died or the plan was cut off.
        results.extend(_unfinished(current, subs))
    return results


def _unfinished(program, subs):
    """The leaves of a program that never printed its own result line: the
    subtests it reported, and a failed '<did not finish>' leaf."""
    return _unique(subs) + [Result(f"{program}/{PROGRAM_LEAVES[1]}", "fail",
                                   "no result line", program)]


def _unique(subs):
    """Number repeated subtest names so each leaf has a stable name."""
    seen = Counter()
    out = []
    for r in subs:
        seen[r.name] += 1
        if seen[r.name] > 1:
            r.name = f"{r.name} #{seen[r.name]}"
        out.append(r)
    return out


def kernel_reports(text):
    """Kernel report lines (oops, BUG, WARNING, KASAN, lockdep, ...): each
    console line with kernel text (after a printk timestamp, at the start of
    the line or in it) that matches REPORTS."""
    found = []
    for line in text.splitlines():
        for m in KERNEL_TEXT.finditer(line):
            msg = line[m.end():]
            # the text up to the next timestamp is this message's
            nxt = KERNEL_TEXT.search(msg)
            if nxt:
                msg = msg[:nxt.start()]
            if any(p.search(msg) for p in REPORTS):
                found.append(line.strip())
                break
    return found


def durations(text):
    """{program: guest seconds} from the '# lab: NAME took S s' lines that
    lab_run prints (a program run twice adds up)."""
    took = Counter()
    for line in text.splitlines():
        m = TOOK_RE.match(line)
        if m:
            took[m.group(1)] += float(m.group(2))
    return dict(took)


# The bench's console lines (guest/bench/*.c and lab_bench of guest/lib.sh):
# "BENCH-START WORKLOAD MODE REP" before a run, "BENCH {json}" its record,
# "BENCH-HIST {json}" a histogram of that run.
BENCH_START_RE = re.compile(r"BENCH-START (\S+) (\S+) (-?\d+)")


def bench_record(line, kind="BENCH"):
    """The JSON object of a console line 'KIND {...}' (kind "BENCH": a run's
    record; "BENCH-HIST": its histogram), or None for any other line.  A line
    that starts so and does not parse raises ValueError."""
    if not line.startswith(kind + " {"):
        return None
    return json.loads(line[len(kind) + 1:])


def bench_start(line):
    """(workload, mode, rep) of a 'BENCH-START' line (rep as printed), or
    None."""
    m = BENCH_START_RE.search(line)
    return m.groups() if m else None
