# SPDX-License-Identifier: GPL-2.0-only
"""History: docs/results.md, made from the stored runs of each measurement.

A stored measurement is a directory of docs/results/ with a note.md (its
"## date: title" heading and the words around the numbers, typed by
hand: what was run and what it shows) and the runs.json (and boots.json)
of the bench or benches behind it, copied from work/results/bench-*/.
Every number of its section is computed here from those runs, with the
report's own functions: the headline rows (each mode's instruction-time
and the workload's other time metrics, against switch off, with spread
and n), the check of switch off against stock, and the mechanism and
batch tables of the probe runs.  The
sections come newest first (directory names start with the date); then
older.md, the measurements from before the runs were stored, as typed
from their reports.
"""

import json
import posixpath
import re
from pathlib import Path

from ..core.util import LabError
from ..guest import workloads
from . import configcompare, manifest, stats, tables

PREAMBLE = "preamble.md"
OLDER = "older.md"
# what each record of a bench's runs.json and boots.json must have
RUN_KEYS = ("workload", "arch", "flavour", "mode", "metrics", "total_ns")
BOOT_KEYS = ("name", "arch", "flavour", "excluded")


def read_records(f, keys):
    """The list of records a bench's runs.json or boots.json holds; a
    LabError naming f when it is missing, empty, not JSON, or not a list
    of objects with keys."""
    if not f.is_file():
        raise LabError(f"{f} not found")
    text = f.read_text(errors="replace")
    if not text.strip():
        raise LabError(f"{f} is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise LabError(f"{f} is not JSON: {e}") from None
    if not isinstance(data, list):
        raise LabError(f"{f} holds no list of records (a JSON list)")
    for i, r in enumerate(data):
        lacks = [k for k in keys if k not in r] if isinstance(r, dict) else keys
        if lacks:
            raise LabError(f"{f}: record {i} is not one of a bench (no "
                           f"{', '.join(lacks)})")
    return data


def entries(results_dir):
    """The stored measurements, newest first: directories with a note.md."""
    ds = [d for d in Path(results_dir).iterdir() if (d / "note.md").is_file()]
    return sorted(ds, key=lambda d: d.name, reverse=True)


def load(d):
    """(runs, workloads, arches) of a stored measurement."""
    runs = read_records(Path(d) / "runs.json", RUN_KEYS)
    return (runs, *workloads.of_runs(runs, Path(d) / "runs.json"))


def load_boots(d):
    """The boots.json of a bench directory, None when it has none."""
    b = Path(d) / "boots.json"
    return read_records(b, BOOT_KEYS) if b.exists() else None


def refusal(d):
    """Why a stored measurement is refused (manifest.refusals(): its bench
    failed or did not end, runs.json or boots.json changed since, or
    their run counts disagree); [] when it is not."""
    return manifest.refusals(d, read_records(Path(d) / "runs.json", RUN_KEYS),
                             load_boots(d))


def refused(results_dir):
    """{directory name: why} of the stored measurements refused."""
    return {d.name: why for d in entries(results_dir) if (why := refusal(d))}


def failed(d, runs, ws, arches):
    """tables.failed_keys() of a stored measurement: the kernels and modes
    its boots.json (when stored) lists a run left out of, and those without
    a run of a workload it measured (stock's only when its bench booted
    stock: manifest.booted_stock())."""
    return tables.failed_keys(load_boots(d), runs, ws, arches,
                              stock=manifest.booted_stock(d))


def headline(groups, ws, arch, failed=frozenset()):
    """Rows of an arch: per workload and mode, the instruction-time and the
    workload's other instruction-time metrics, stock and switch off
    beside, the change against switch off; a mode with a side in failed
    is one row, FAILED with no figure."""
    rows = []
    for w in ws:
        modes = [m for m in w.modes if m != "off"]
        bad = {m: tables.failed_sides(failed, arch, w, m) for m in modes}
        # the report's own rows, those that are instruction-times
        for label, fn, fmt in tables.metric_rows(w):
            if "instruction-time" not in label:
                continue
            label = label.replace(" (ns, instruction-time)", " (ns)")

            def st(fl, m, fn=fn):
                return stats.stats([fn(r) for r in
                                      groups.get((arch, w.name, fl, m), [])])
            stock, off = st("stock", "stock"), st("patched", "off")
            if not off and not stock:
                continue
            for mode in [m for m in modes if not bad[m]]:
                on = st("patched", mode)
                if not on or (label != "instruction-time" and not on[0] and
                              not (off and off[0])):
                    continue
                rows.append(f"| {arch} | {w.name} | {label} | {fmt(stock)} | {fmt(off)} "
                            f"| {mode} | {fmt(on)} | {stats.change(off, on)} |")
        for mode in [m for m in modes if bad[m]]:
            cell = {side: tables.FAILED if side in bad[mode] else "-"
                    for side in ("stock", "off", mode)}
            rows.append(f"| {arch} | {w.name} | every metric | {cell['stock']} | "
                        f"{cell['off']} | {mode} | {cell[mode]} | {tables.FAILED} |")
    return rows


def check_rows(groups, ws, arch, failed=frozenset()):
    """Rows of an arch: per workload measured on both kernels, the bench's
    switch-off-against-stock check (tables.off_vs_stock_check() of every
    measure, tables.check_cell(): the time and each measure that is not OK
    on a line of its own); FAILED when a run of switch off or stock was
    left out or did not arrive."""
    rows = []
    for w in ws:
        if tables.failed_sides(failed, arch, w, "off") & {"stock", "off"}:
            rows.append(f"| {arch} | {w.name} | {tables.FAILED} |")
            continue
        c = tables.off_vs_stock_check(groups, arch, w)
        if c is not None:
            rows.append(f"| {arch} | {w.name} | {tables.check_cell(c)} |")
    return rows


_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def note_text(d, link_base="results"):
    """A stored measurement's note.md, its relative links rewritten to hold
    from results.md: the note links from its own directory (@d), the page
    from @link_base's parent.  Links to a web address or to an anchor of
    the page stay as they are."""
    def fix(m):
        target = m.group(2)
        if re.match(r"[a-z]+:", target) or target.startswith(("#", "/")):
            return m.group(0)
        return m.group(1) + posixpath.normpath(f"{link_base}/{d.name}/{target}") + m.group(3)
    return _LINK.sub(fix, (d / "note.md").read_text()).rstrip()


def section(d, link_base="results"):
    """The Markdown of one stored measurement: a refused one (refusal())
    gives its words and why it is refused, no table of its runs; the
    others say what their runs can be checked against
    (manifest.describe())."""
    link = f"[{d.name}/report.md]({link_base}/{d.name}/report.md)"
    why = refusal(d)
    if why:
        out = [note_text(d, link_base), "",
               f"**Refused**: {'; '.join(why)}. No table is made from its runs here, "
               "and the README takes no figure from it: the measurement needs "
               "making again.", ""]
        if (d / "report.md").exists():
            out += [f"The report its bench wrote: {link}.", ""]
        return "\n".join(out).rstrip() + "\n"
    runs, ws, arches = load(d)
    with_stock = manifest.booted_stock(d)
    bad = failed(d, runs, ws, arches)
    groups = stats.summarize(runs)
    probes = stats.summarize(runs, probe=True)
    out = [note_text(d, link_base), ""]
    rows = [row for a in arches for row in headline(groups, ws, a, bad)]
    if rows:
        out += ["| arch | workload | metric | stock | switch off | mode | switch on "
                "| change |", "|---|---|---|---|---|---|---|---|"] + rows + [""]
    if bad:
        out += [f"{tables.FAILED}: a run of that kernel and mode was left out or did "
                "not arrive; the row gives no figure.", ""]
    checks = [row for a in arches for row in check_rows(groups, ws, a, bad)] \
        if with_stock else []
    if not with_stock:
        out += ["Switch off against stock: not checked: this bench booted no stock "
                "kernel (no `--stock`).", ""]
    if checks:
        out += ["| arch | workload | switch off vs stock |", "|---|---|---|"] + checks + [""]
    compared = configcompare.section(d, (runs, ws, arches), entries(d.parent), refusal,
                                     load, link_base)
    if compared:
        out += [compared]
    for a in arches:
        for table in (tables.mechanism_table(probes, ws, a, bad),
                      tables.batch_table(probes, ws, a, bad)):
            if table:
                out += [table]
    out += [manifest.describe(d), ""]
    if (d / "report.md").exists():
        out += [f"Whole report: {link}.", ""]
    return "\n".join(out).rstrip() + "\n"


def history(results_dir, link_base="results"):
    """docs/results.md's text."""
    results_dir = Path(results_dir)
    parts = [(results_dir / PREAMBLE).read_text().rstrip() + "\n"]
    parts += [section(d, link_base) for d in entries(results_dir)]
    older = results_dir / OLDER
    if older.exists():
        parts.append(older.read_text().rstrip() + "\n")
    return "\n".join(parts)
