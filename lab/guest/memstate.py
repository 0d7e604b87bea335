# SPDX-License-Identifier: GPL-2.0-only
"""Memstate: the memory a boot's programs leave behind, and what is a leak.

guest/lib.sh's lab_memstate prints, after dropping the page cache and turning
every swap device off and on, one line before a plan's first program
('<start>') and one after each program:

  # lab: mem NAME free=KB avail=KB anonhuge=KB pt=PAGES held=KB swap=KB buddy=N0,...

What a program left behind is the change from the line before it.  A patched
program leaks when it leaves more behind than the same program on stock, by
more than the stock boot's own tolerance (tolerances()); so does the whole
boot, from '<start>' to its last line.  The lines stay in the console; a
boot's table is also saved with the logs as JSON (save()).
"""

import json
import re

from ..core import config
from . import results

MEM_RE = re.compile(r"^# lab: mem (\S+) (.*)$")
START = "<start>"

# The counters a leak shows in, with their unit and the sign of a loss:
# +1 when a loss makes the counter grow (page tables, swap in use), -1 when
# it makes it fall (MemAvailable).
LEAK_COUNTERS = {"avail": ("kB", -1), "pt": ("pages", +1), "swap": ("kB", +1)}
# The least tolerance of each counter, whatever the stock boot shows: the
# per-CPU page lists, slab and vmalloc move MemAvailable by a few hundred kB
# from one line to the next, and the kernel's own page tables (vmalloc's,
# the vmapped stacks of new processes; never freed) count in
# nr_page_table_pages: 20 pages either way between two programs on both
# kernels in a full run, up to 16 over two short programs.  Swap has none:
# lab_memstate turns every swap device off and on before it reads the swap
# in use, so nothing of it is left ('held' is what was in use before that,
# which the swap cache lets go lazily: not compared), and a swapoff that
# could not free an entry fails the boot by itself.
FLOOR = {"avail": 2048, "pt": 64, "swap": 0}


def parse(text):
    """[(name, {counter: int}, buddy [free blocks per order])] in console
    order, from a console text, with a line that kernel output cut in two
    joined again (results.console_lines()).  A line without every counter
    of LEAK_COUNTERS as a number is not read (unread() names its program),
    so that nothing missing is taken for 0."""
    out = []
    for line in results.console_lines(text):
        m = MEM_RE.match(line.strip())
        if not m:
            continue
        fields = dict(kv.split("=", 1) for kv in m.group(2).split() if "=" in kv)
        try:
            buddy = [int(n) for n in fields.pop("buddy", "").split(",") if n]
            counters = {k: int(v) for k, v in fields.items()}
        except ValueError:
            continue
        if all(c in counters for c in LEAK_COUNTERS):
            out.append((m.group(1), counters, buddy))
    return out


def unread(text):
    """The programs of a console text that reported a result and have no
    readable memory line after them (parse()), and whether the plan's own
    line before its first program ('<start>') is missing."""
    have = {name for name, _, _ in parse(text)}
    ran = {m.group(3) for line in results.console_lines(text)
           if (m := results.TOP_RE.match(line))}
    return sorted(ran - have) + ([] if START in have or not ran else [START])


def left_behind(states):
    """{program: {counter: loss}} of each program of states (parse()): the
    change from the line before it, signed so that a loss is positive
    (LEAK_COUNTERS), and '<boot>' for the first line to the last.  A
    program that ran twice in a boot adds up."""
    out = {}
    for (_, before, _), (name, after, _) in zip(states, states[1:]):
        d = out.setdefault(name, dict.fromkeys(LEAK_COUNTERS, 0))
        for c, (_, sign) in LEAK_COUNTERS.items():
            d[c] += sign * (after[c] - before[c])
    if len(states) > 1:
        first, last = states[0][1], states[-1][1]
        out["<boot>"] = {c: sign * (last[c] - first[c])
                         for c, (_, sign) in LEAK_COUNTERS.items()}
    return out


def tolerances(stock):
    """{counter: tolerance} that a stock boot's table (left_behind()) sets:
    twice the largest change, of either sign, that any one of its programs
    shows, and at least FLOOR.  Twice: the patched and the stock figure of
    a program each move by up to that much on a healthy boot (a full arm64
    run: mremap_test left 40,344 kB of MemAvailable behind on patched and
    3,088 kB on stock, where stock's largest change was 40,996 kB; cow gave
    34,336 kB back on patched right after)."""
    progs = [d for name, d in stock.items() if name != "<boot>"]
    return {c: max([FLOOR[c]] + [2 * abs(d[c]) for d in progs]) for c in LEAK_COUNTERS}


def judge(prefix, stock_text, patched_text):
    """Rows (status, name, detail) of the leak check of a patched boot
    against the stock boot that ran the same plan: a failed
    'PREFIX/<program>/<left behind>' row for each program (and '<boot>' for
    the whole boot) that left more of a counter behind on patched than on
    stock (or than nothing, where stock gave some back), by more than the
    stock boot's tolerance; a failed
    'PREFIX/<memstate>' row when either boot printed no memory line after a
    program, so that a check that could not run is not a pass; one passed
    'PREFIX/<left behind>' row otherwise."""
    stock = left_behind(parse(stock_text))
    patched = left_behind(parse(patched_text))
    missing = [fl for fl, t in (("stock", stock), ("patched", patched)) if not t]
    if missing:
        return [("fail", f"{prefix}/<memstate>",
                 f"no memory line after any program on {' and '.join(missing)}: "
                 "lab_memstate of guest/lib.sh did not run")]
    lost = [f"{fl}: {', '.join(progs)}" for fl, text in (("stock", stock_text),
                                                          ("patched", patched_text))
            if (progs := unread(text))]
    if lost:
        return [("fail", f"{prefix}/<memstate>",
                 "no readable memory line after " + "; ".join(lost) +
                 ": what those programs left behind is not known")]
    tol = tolerances(stock)
    rows = []
    for name, d in patched.items():
        was = stock.get(name)
        if was is None:
            continue
        over = [f"{c} {d[c]:+,} {LEAK_COUNTERS[c][0]} (stock {was[c]:+,}, "
                f"tolerance {tol[c]:,})"
                for c in LEAK_COUNTERS if d[c] - max(was[c], 0) > tol[c]]
        if over:
            rows.append(("fail", f"{prefix}/{name}/<left behind>",
                         "left behind more than on stock: " + "; ".join(over)))
    if not rows:
        rows.append(("pass", f"{prefix}/<left behind>",
                     f"{len(patched) - 1} programs and the whole boot within the stock "
                     "boot's tolerance (" + ", ".join(
                         f"{c} {tol[c]:,} {LEAK_COUNTERS[c][0]}" for c in LEAK_COUNTERS)
                     + ")"))
    return rows


def table(text):
    """The rows of a boot's memory table: each line of parse() with what the
    program left behind (left_behind()), for save()."""
    states = parse(text)
    behind = left_behind(states)
    return [{"program": name, **counters, "buddy": buddy,
             "left_behind": behind.get(name) if name != START else None}
            for name, counters, buddy in states]


def save(name, text):
    """Write the memory table (table()) of boot name (the name of its
    console, work/logs/console-NAME.log) as work/logs/memstate-NAME.json,
    also for a stock boot reused from the cache; return the path."""
    path = config.log_dir() / f"memstate-{name}.json"
    path.write_text(json.dumps(table(text), indent=1) + "\n")
    return path
