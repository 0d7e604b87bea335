"""Results: parse the guest's KTAP and scan its console for kernel reports.

A plan prints one KTAP result per program; each program's own output is
indented by four spaces, so the results of its subtests are the lines
'    ok N name' / '    not ok N name'.  Leaves are the unit of counting: a
program's subtests, or the program itself when it reports none.
"""

import re
from collections import Counter
from dataclasses import dataclass

TOP_RE = re.compile(r"^(not ok|ok) (\d+) (\S+)(?:\s+#\s*(.*))?$")
SUB_RE = re.compile(r"^    (not ok|ok) (\d+) (.*?)(?:\s+#\s*(SKIP|TODO|XFAIL)\b(.*))?$",
                    re.IGNORECASE)
START_RE = re.compile(r"^# lab: start ([^:\s]+):")
TOOK_RE = re.compile(r"^# lab: (\S+) took (\d+(?:\.\d+)?) s$")

# Kernel reports that fail a boot.  Only lines printed by the kernel (with a
# printk timestamp) count, so a program that prints "WARNING" does not.
KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\]\s(.*)$")
REPORTS = [
    re.compile(p) for p in (
        r"\bBUG: ", r"kernel BUG at", r"^Oops", r"Internal error: Oops",
        r"Unable to handle kernel", r"general protection fault",
        r"^WARNING: ", r"------------\[ cut here \]------------",
        r"Kernel panic", r"\bKASAN\b", r"\bUBSAN\b",
        r"possible (circular|recursive) locking", r"inconsistent lock state",
        r"Bad rss-counter", r"Bad page (state|map)", r"page_table_check",
        r"soft lockup", r"hard LOCKUP", r"blocked for more than \d+ seconds",
        r"rcu: INFO: rcu_\w+ detected stall",
    )
]


@dataclass
class Result:
    name: str          # "<program>/<subtest>" or "<program>"
    status: str        # pass | fail | skip
    detail: str = ""
    program: str = ""
    errors: tuple = ()  # the program's own output lines that say ERROR


def parse(text):
    """Return the list of leaf Results in a console text."""
    results = []
    subs = []
    errors = []
    current = None
    for line in text.splitlines():
        m = START_RE.match(line)
        if m:
            current, subs, errors = m.group(1), [], []
            continue
        if current and "ERROR" in line:
            errors.append(line.strip())
        m = SUB_RE.match(line)
        if m and current:
            status = "fail" if m.group(1).lower() == "not ok" else "pass"
            directive = (m.group(4) or "").upper()
            if directive == "SKIP":
                status = "skip"
            subs.append(Result(f"{current}/{m.group(3).strip()}", status,
                               (m.group(5) or "").strip(), current))
            continue
        m = TOP_RE.match(line)
        if m:
            prog = m.group(3)
            ok = m.group(1) == "ok"
            directive = m.group(4) or ""
            results.extend(_unique(subs))
            if not subs:
                status = "pass" if ok else "fail"
                if ok and directive.upper().startswith("SKIP"):
                    status = "skip"
                results.append(Result(prog, status, directive, prog, tuple(errors)))
            elif not ok and not any(s.status == "fail" for s in subs):
                results.append(Result(f"{prog}/<exit status>", "fail", directive, prog,
                                      tuple(errors)))
            current, subs = None, []
    if current:
        # The program never reported: the guest died or the plan was cut off.
        results.extend(_unique(subs))
        results.append(Result(f"{current}/<did not finish>", "fail",
                              "no result line", current))
    return results


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
    """Kernel report lines (oops, BUG, WARNING, KASAN, lockdep, ...)."""
    found = []
    for line in text.splitlines():
        m = KERNEL_LINE.match(line)
        if not m:
            continue
        msg = m.group(1)
        if any(p.search(msg) for p in REPORTS):
            found.append(line.strip())
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
