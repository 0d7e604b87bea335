# SPDX-License-Identifier: GPL-2.0-only
"""Stats: the numbers of a bench's runs, for the report's tables and plots
and for docs/results.md (history.py): each run's instruction-time, the
runs grouped by arch, workload, kernel and mode, medians, spreads and
changes."""

import re
import statistics
from collections import defaultdict

# The one spread convention of every table, legend and rule: a measurement
# is its median ± half the min-max spread of its runs (plus_minus()).
# The switch-off-against-stock check gives no verdict where the ranges of
# switch off and stock overlap but a side's runs vary by more than this ±
# (relative): a difference that small would not show.
SPREAD_TOLERANCE = 0.01
# a compared counter's median with the switch off against stock's, relative
# (of at least 1: counts of 0 and 1 are within it)
COUNTER_TOLERANCE = 0.01


def instr_time(rec):
    """The measured phase's instruction-time in ns (the workload's own
    time_ns, or benchrun's whole-run time for programs without one)."""
    return rec["metrics"].get("time_ns", rec["total_ns"])


def spread(values):
    """(max - min) / median of a list of measurements."""
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med else 0.0


def plus_minus(st):
    """The ± of a stats() triple: half the min-max spread, relative to the
    median (0.01 for ±1%)."""
    return st[1] / 2


def value(rec, source, key):
    if source == "metrics":
        return rec["metrics"].get(key, 0)
    return rec.get(source, {}).get(key, 0)


def summarize(runs, probe=False):
    """(arch, workload, flavour, mode) -> list of runs: the measured runs,
    or with probe=True the probe runs (kprobes armed, kept out of every
    time and counter figure)."""
    groups = defaultdict(list)
    for r in runs:
        if bool(r.get("probe")) == probe:
            groups[(r["arch"], r["workload"], r["flavour"], r["mode"])].append(r)
    return groups


def present(runs, source, key):
    """Whether a counter shows in any run (benchrun reports non-zero deltas
    only, so a counter an arch does not have, or one that never moved, is
    absent)."""
    if source == "metrics":
        return any(key in r["metrics"] for r in runs)
    return any(key in r.get(source, {}) for r in runs)


def stats(values):
    if not values:
        return None
    return statistics.median(values), spread(values), len(values)


def change(a, b):
    """Relative change of medians; '(noise)' when it is within the larger
    ± (plus_minus(): half the min-max spread) of the two measurements."""
    if not a or not b or not a[0]:
        return "-"
    rel = (b[0] - a[0]) / a[0]
    if min(a[2], b[2]) < 2:
        return f"{rel * 100:+.1f}% (one run: spread unknown)" if rel else "+0.0%"
    noise = abs(rel) <= max(plus_minus(a), plus_minus(b))
    return f"{rel * 100:+.1f}%" + (" (noise)" if noise and rel else "")


def bogo_ops(rec):
    """stress-ng's operations in a dirty-reclaim run, counted once.

    stress-ng shares --vm-ops among its workers, and its count is the
    total; dirtyreclaim reported its --vm-ops times the workers as bogo_ops
    until that was fixed (2026-11-24), and the records of those runs are
    still reported: a record whose bogo_ops is its scale's "N ops" times
    its "W workers" (W > 1) ran N operations."""
    ops = rec["metrics"].get("bogo_ops", 0)
    scale = rec.get("scale") or ""
    workers = re.search(r"\b(\d+) workers?\b", scale)
    n = re.search(r"\b(\d+) ops\b", scale)
    if workers and n and int(workers.group(1)) > 1 and \
            ops == int(workers.group(1)) * int(n.group(1)):
        return int(n.group(1))
    return ops


def ratios(groups, workloads, arch):
    """{workload: median instruction-time with every switch on / off} for the
    workloads measured on an arch."""
    out = {}
    for w in workloads:
        on = [instr_time(r) for r in groups.get((arch, w.name, "patched", "on"), [])]
        off = [instr_time(r) for r in groups.get((arch, w.name, "patched", "off"), [])]
        if on and off:
            out[w.name] = statistics.median(on) / statistics.median(off)
    return out
