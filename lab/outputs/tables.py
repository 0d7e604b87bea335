# SPDX-License-Identifier: GPL-2.0-only
"""Tables: the Markdown of a bench report (report.py) and of docs/results.md
(history.py): per arch, each workload's metrics by kernel and mode with
the change against switch off, the switch-off-against-stock check, the
mechanism counts and reclaim batches of the probe runs, the boots and
the runs missing or left out.

label is what the measured time is called: "instruction-time" for the
lab's guests (-icount), "time" for runs of run-here.sh on a machine of
its own (lab/commands/here.py); report.write() chooses it.
"""

import statistics

from .stats import (COUNTER_TOLERANCE, SPREAD_TOLERANCE, bogo_ops, change, instr_time,
                    plus_minus, present, stats, value)

def _fmt_time(st):
    if not st:
        return "-"
    med, spread, n = st
    return f"{med / 1e9:.4f} s ±{plus_minus(st) * 100:.2f}% (n={n})"


def _fmt_num(st):
    if not st:
        return "-"
    med, spread, n = st
    return f"{med:,.0f}" if spread < 0.001 else f"{med:,.0f} (±{plus_minus(st) * 100:.1f}%)"


def _fmt_rate(st):
    if not st:
        return "-"
    med, spread, n = st
    return f"{med:.1f}" if spread < 0.001 else f"{med:.1f} (±{plus_minus(st) * 100:.1f}%)"


def _label(label, time_label):
    """A workload metric's label in a report whose time is time_label (its
    own time metrics say instruction-time)."""
    return label.replace("instruction-time", time_label) \
        if time_label != "instruction-time" else label


def metric_rows(w, time_label="instruction-time"):
    """[(label, value of a run, formatter of its stats)] of a workload's
    rows: its time, the TCG wall time beside instruction-time, its own
    metrics and, for the stress-ng dirty-reclaim workloads, the rate."""
    rows = [(time_label, lambda r: instr_time(r), _fmt_time)]
    if time_label == "instruction-time":
        rows.append(("TCG wall time (s)", lambda r: r.get("wall_s") or 0,
                     lambda st: "-" if not st else f"{st[0]:.1f}"))
    for label, source, key, *_ in w.metrics:
        rows.append((_label(label, time_label), lambda r, s=source, k=key: value(r, s, k),
                     _fmt_num))
    if w.name in ("dirty-reclaim", "dirty-reclaim-8cpu"):
        rows.append((f"bogo ops per {time_label.replace('time', 'second')}",
                     lambda r: bogo_ops(r) / (instr_time(r) / 1e9), _fmt_rate))
    return rows


def _rel(a, b):
    """The relative change of a against b; None when b is 0 and a is not."""
    return (a - b) / b if b else (0.0 if a == b else None)


def _ranged(label, off, stock, fmt):
    """A measure of switch off against stock, judged by the ranges of its
    runs: DIFFERS (False) when the ranges (min..max) do not overlap,
    whatever their spread; no verdict (None) when they overlap but a side
    varies by more than ±SPREAD_TOLERANCE; else OK (True).  off and stock
    are the values of the runs; [] on a side makes no verdict."""
    item = {"label": label, "rule": "range", "fmt": fmt, "off": stats(off),
            "stock": stats(stock), "apart": False, "noise": 0.0,
            "one_run": min(len(off), len(stock)) < 2}
    if not off or not stock:
        return dict(item, rel=None, ok=None, one_run=False)
    item["rel"] = _rel(item["off"][0], item["stock"][0])
    item["apart"] = max(off) < min(stock) or max(stock) < min(off)
    item["noise"] = max(plus_minus(item["off"]), plus_minus(item["stock"]))
    item["ok"] = False if item["apart"] else \
        None if item["noise"] > SPREAD_TOLERANCE else True
    return item


def _counted(label, off, stock, fmt):
    """A compared counter of switch off against stock: DIFFERS (False) when
    its median is more than COUNTER_TOLERANCE from stock's (of at least 1),
    else OK (True)."""
    o, s = stats(off), stats(stock)
    beyond = abs(o[0] - s[0]) > COUNTER_TOLERANCE * max(abs(s[0]), 1)
    return {"label": label, "rule": "counter", "fmt": fmt, "off": o, "stock": s,
            "rel": _rel(o[0], s[0]), "apart": beyond, "noise": 0.0,
            "one_run": min(o[2], s[2]) < 2, "ok": not beyond}


def _worst(oks):
    """A verdict of several: False when one is, else None when one is, else
    True."""
    oks = list(oks)
    return False if False in oks else None if None in oks else True


def off_vs_stock_check(groups, arch, w, measures=None, probes=None,
                       time_label="instruction-time"):
    """The switch-off-against-stock check of a workload on an arch, as data:
    None when either side has no runs, else {"items": one per measure
    compared (below), "dt": the relative change of the median time,
    "diffs": the compared counters more than COUNTER_TOLERANCE from
    stock's, labelled with both medians, "noise": the larger ± of the two
    times, "one_run": whether a side has one run, "ok": the worst verdict
    of the items, True (OK), False (DIFFERS) or None (no verdict)}.

    Compared: the workload's time and each of measures, (label, source,
    key) of stats.value() or of a probe run's kprobe count, by the ranges
    of their runs (_ranged()); measures None: the workload's counters that
    are not held to COUNTER_TOLERANCE (compare=False) and show in its runs
    on the arch.  Each compared counter (compare left True) that shows in
    those runs by its median (_counted()); one that shows in none is 0 on
    both sides."""
    off = groups.get((arch, w.name, "patched", "off"), [])
    stock = groups.get((arch, w.name, "stock", "stock"), [])
    if not off or not stock:
        return None
    mine = off + stock
    if measures is None:
        measures = [(_label(label, time_label), source, key)
                    for label, source, key, *opts in w.metrics
                    if opts and not opts[0] and present(mine, source, key)]

    def values(fl, mode, source, key):
        if source == "kprobe":
            # the one probe run of the kernel and mode: its count (an armed
            # event it does not list made no calls), none when the kernel
            # could not probe the event's function
            fns = {f for m in w.mechanisms for ev, f in m.probes if ev == key}
            rs = (probes or {}).get((arch, w.name, fl, mode), [])[:1]
            return [r.get("kprobe", {}).get(key, 0) for r in rs
                    if not fns & set(r.get("kprobe_failed", ()))]
        rs = off if fl == "patched" else stock
        return [value(r, source, key) for r in rs]

    items = [_ranged(time_label, [instr_time(r) for r in off],
                     [instr_time(r) for r in stock], _fmt_time)]
    for label, source, key in measures:
        items.append(_ranged(label, values("patched", "off", source, key),
                             values("stock", "stock", source, key), _fmt_num))
    counters = [_counted(label, values("patched", "off", source, key),
                         values("stock", "stock", source, key), _fmt_num)
                for label, source, key, *opts in w.metrics
                if (not opts or opts[0]) and present(mine, source, key)]
    items += counters
    return {"items": items, "dt": items[0]["rel"],
            "diffs": [f"{c['label']} {c['off'][0]:,.0f} vs {c['stock'][0]:,.0f}"
                      for c in counters if not c["ok"]],
            "noise": items[0]["noise"], "one_run": items[0]["one_run"],
            "ok": _worst(i["ok"] for i in items)}


VERDICT = {True: "OK", False: "DIFFERS", None: "INCONCLUSIVE"}


def item_reason(item):
    """Why a compared measure has its verdict, in a few words: 'ranges
    apart', 'ranges overlap', 'ranges overlap, runs vary by ±7.69%', 'more
    than 1% from stock's', 'within 1%', or 'not measured on a side'."""
    if item["off"] is None or item["stock"] is None:
        return "not measured on " + ("switch off" if item["off"] is None else "stock")
    if item["rule"] == "counter":
        return f"more than {COUNTER_TOLERANCE:.0%} from stock's" if item["apart"] \
            else f"within {COUNTER_TOLERANCE:.0%}"
    if item["apart"]:
        return "ranges apart"
    if item["ok"] is None:
        return f"ranges overlap, runs vary by ±{item['noise'] * 100:.2f}%"
    return "ranges overlap"


def item_change(item):
    """A compared measure's relative change, switch off against stock:
    '+0.78%', or '-' where it has none (a side unmeasured, or stock's 0)."""
    return "-" if item["rel"] is None else f"{item['rel'] * 100:+.2f}%"


def off_vs_stock(groups, arch, w, time_label="instruction-time"):
    """Does switch-off behave like stock: off_vs_stock_check() as (text,
    ok), the text one '; '-separated phrase per measure compared (its
    label, change and reason) and '; one run on a side, spread unknown'
    when a side has one run."""
    c = off_vs_stock_check(groups, arch, w, time_label=time_label)
    if c is None:
        return "not measured", None
    text = "; ".join(
        (f"{i['label']} {i['off'][0]:,.0f} vs {i['stock'][0]:,.0f} ({item_reason(i)})"
         if i["rule"] == "counter" and i["apart"] else
         f"{i['label']} {item_change(i)} ({item_reason(i)})")
        for i in c["items"])
    if c["one_run"]:
        # a verdict, but on one run: whether the workload repeats is unknown
        text += "; one run on a side, spread unknown"
    return text, c["ok"]


WORDS = {True: "OK", False: "DIFFERS", None: "no verdict"}


def check_cell(c, shown=()):
    """A check of off_vs_stock_check() in one table cell (the README's
    headline, docs/results.md): its verdict, 'OK', 'DIFFERS' or 'no verdict'
    ('; one run' when a side of a measure has one run), then, each on a line
    of its own, the time's change and reason ('instruction-time +0.78%,
    ranges apart'), each measure of shown (labels) and each other measure
    that is not OK ('TLB shootdowns -11.54%, ranges overlap, runs vary by
    ±14.21%'), and each compared counter more than 1% from stock's with
    both medians ('pgsteal_file 209,152 vs 213,120 (-1.86%)'); 'not
    measured' for None."""
    if c is None:
        return "not measured"
    lines = [WORDS[c["ok"]] + ("; one run" if any(i["one_run"] for i in c["items"])
                               else "")]
    for n, i in enumerate(c["items"]):
        if i["rule"] == "counter":
            if i["apart"]:
                lines.append(f"{i['label']} {i['off'][0]:,.0f} vs "
                             f"{i['stock'][0]:,.0f} ({item_change(i)})")
        elif n == 0 or i["label"] in shown or i["ok"] is not True:
            lines.append(f"{i['label']} {item_change(i)}, {item_reason(i)}")
    return "<br>".join(lines)


def check_rows(groups, arch, w, time_label="instruction-time"):
    """The rows of a workload in the report's switch-off-against-stock
    table: one per measure compared, each with its verdict, its reason, and
    switch off's and stock's median ± half their spread (a counter more
    than 1% from stock's on a row of its own, like every measure)."""
    c = off_vs_stock_check(groups, arch, w, time_label=time_label)
    if c is None:
        return [f"| {w.name} | not measured | - | - | - | - |"]
    rows = []
    for i in c["items"]:
        word = VERDICT[i["ok"]] + (" (one run)" if i["one_run"] else "")
        rows.append(f"| {w.name} | {word}: {item_reason(i)} | {i['label']} | "
                    f"{i['fmt'](i['off'])} | {i['fmt'](i['stock'])} | {item_change(i)} |")
    return rows


CHECK_LEGEND = (
    "each measure of the workload, switch off's runs against stock's, "
    "median ± half the min-max spread (n runs): the {time} and every counter "
    "not held to {counter:.0%} by its ranges: DIFFERS when the ranges (min..max) "
    "of the two, over all the boots of each side (the boot table), do not "
    "overlap, whatever their spread; INCONCLUSIVE when they "
    "overlap and a side's runs vary by more than ±{spread:.0%}; OK when they "
    "overlap and neither does. Each compared counter by its median: DIFFERS when "
    "it is more than {counter:.0%} from stock's, OK within. (one run): a side has "
    "one run, whose spread is unknown. A workload's verdict is the worst of its "
    "rows")


def markdown(groups, workloads, arch, in_series, time_label="instruction-time",
             failed=frozenset(), with_stock=True):
    """The table of an arch: per workload, metric and mode, stock, switch
    off, the mode and the change; then the switch-off-against-stock check.
    A mode with a side in failed (failed_keys()) has one row, FAILED with
    no figure, and so does the check when switch off or stock failed.
    Without with_stock (a bench that booted no stock kernel) the stock column
    is '-' and a sentence says that switch off was not checked against
    stock, in place of the check."""
    out = [f"### {arch}", "",
           "| workload | metric | stock | switch off | mode | switch on | change | seed |",
           "|---|---|---|---|---|---|---|---|"]
    checks, absent, failing = [], [], False
    for w in workloads:
        if not any(k[0] == arch and k[1] == w.name for k in set(groups) | set(failed)):
            continue
        missing = [s for s in w.switches() if not in_series(s)]
        name = w.name + (" (not in series: stock in every mode)" if missing else "")
        runs = [r for k, rs in groups.items() if k[0] == arch and k[1] == w.name
                for r in rs]
        gone = {_label(label, time_label) for label, source, key, *_ in w.metrics
                if not present(runs, source, key)}
        absent += [f"{w.name}: {label}" for label in sorted(gone)]
        modes = [m for m in w.modes if m != "off"]
        bad = {m: failed_sides(failed, arch, w, m) for m in modes}
        for label, fn, fmt in metric_rows(w, time_label):
            if label in gone:
                continue
            st = lambda fl, m: stats([fn(r) for r in groups.get((arch, w.name, fl, m), [])])
            stock, off = st("stock", "stock"), st("patched", "off")
            for mode in [m for m in modes if not bad[m]]:
                on = st("patched", mode)
                seed = w.seed if label == time_label and mode == "on" else ""
                out.append(f"| {name} | {label} | {fmt(stock)} | {fmt(off)} | {mode} | "
                           f"{fmt(on)} | {change(off, on)} | {seed} |")
        for mode in [m for m in modes if bad[m]]:
            failing = True
            cell = {side: FAILED if side in bad[mode] else "-"
                    for side in ("stock", "off", mode)}
            out.append(f"| {name} | every metric | {cell['stock']} | {cell['off']} | "
                       f"{mode} | {cell[mode]} | {FAILED} | |")
        if failed_sides(failed, arch, w, "off") & {"stock", "off"}:
            checks.append(f"| {w.name} | {FAILED} | every measure | - | - | a run of "
                          "switch off or stock was left out or did not arrive |")
            continue
        checks += check_rows(groups, arch, w, time_label)
    if failing:
        out += ["", f"{FAILED}: a run of that kernel and mode on {arch} was left out "
                "(Runs left out) or did not arrive (Missing); the row gives no figure."]
    if absent:
        out += ["", f"Counters left out on {arch}: no run of the workload shows "
                "them (the arch has no such counter, or it never moved): "
                + "; ".join(absent) + "."]
    if time_label == "time":    # run-here.sh: one foliobatch kernel, no stock runs
        return "\n".join(out) + "\n"
    if not with_stock:
        out += ["", f"Switch off against stock ({arch}): not checked: this bench "
                "booted no stock kernel (`lab bench --stock` builds and boots one, "
                "and checks every workload's switch off against it)."]
        return "\n".join(out) + "\n"
    out += ["", f"Switch off against stock ({arch}): " + CHECK_LEGEND.format(
                time=time_label, counter=COUNTER_TOLERANCE, spread=SPREAD_TOLERANCE)
            + ".", "",
            "| workload | check | measure | switch off | stock | off vs stock |",
            "|---|---|---|---|---|---|"] + checks
    return "\n".join(out) + "\n"


def mechanism_table(probes, workloads, arch, failed=frozenset()):
    """The mechanism counts of the probe runs of an arch: calls of each
    workload's kernel functions, stock, switch off and on, and what a
    perfect batch would reach with the switch on; '' without probe runs.
    A kernel and mode in failed (failed_keys()) says FAILED, with no count
    and no ratio that needs it."""
    rows = []
    for w in workloads:
        for m in w.mechanisms:
            if arch not in m.arches:
                continue
            runs = {fl_mode: probes.get((arch, w.name) + fl_mode, [])
                    for fl_mode in (("stock", "stock"), ("patched", "off"),
                                    ("patched", "on"))}
            # a kernel without the function (stock has no batched helper)
            # could not set the kprobe: n/a there, the row goes when no
            # kernel had it; so is a patched kernel that could not probe an
            # also-function (the one a switch calls instead), whose calls
            # went unmeasured; stock has none to call
            nokprobe = {k for k, rs in runs.items()
                        if any(f in r.get("kprobe_failed", ())
                               for r in rs
                               for f in (m.function,) + (m.also if k[0] == "patched"
                                                         else ()))}
            bad = {k for k in runs if (arch, w.name) + k in failed}
            if not any(rs for k, rs in runs.items() if k not in nokprobe) and not bad:
                continue

            def count(key):
                # benchrun prints the counters that moved: an armed event it
                # does not list made no calls; the also-functions of a kernel
                # that has none of them (stock) are no calls either
                rs = runs[key]
                if key in nokprobe or key in bad or not rs:
                    return None
                kp = rs[0].get("kprobe", {})
                return sum(kp.get(ev, 0) for ev, _ in m.probes)

            def calls(key):
                n = count(key)
                return FAILED if key in bad else "n/a" if key in nokprobe else \
                    "-" if n is None else f"{n:,}"

            def ratio(a, b):
                return f"{a / b:.1f}" if a is not None and b else "-"

            on = runs[("patched", "on")]
            lim = m.limit(on[0]) if m.limit and on and ("patched", "on") not in bad \
                else None
            limit = f"{lim:,}" if lim is not None else "-"
            off_n, on_n = count(("patched", "off")), count(("patched", "on"))
            rows.append(f"| {w.name} | {m.label} | {calls(('stock', 'stock'))} | "
                        f"{calls(('patched', 'off'))} | {calls(('patched', 'on'))} | "
                        f"{ratio(off_n, on_n)} | {limit} | {ratio(on_n, lim)} |")
    if not rows:
        return ""
    return "\n".join([
        f"Mechanisms ({arch}): calls of the kernel functions the series changes, "
        "counted by kprobes in one probe run per mode (kprobes armed only there, "
        "so they cost no measured run anything); off / on: switch off's calls "
        "over switch on's; limit: what a perfect batch would reach with the "
        "switch on; on / limit: switch on's calls over that.", "",
        "| workload | counter | stock | switch off | switch on | off / on | limit "
        "| on / limit |",
        "|---|---|---|---|---|---|---|---|"] + rows) + "\n"


# the pageout batch's limit (PAGEOUT_BATCH in mm/vmscan.c: a folio_batch)
BATCH_LIMIT = 31
BATCH_BUCKETS = ((1, 1), (2, 7), (8, 15), (16, 23), (24, 30), (31, 31))


def _hist_sum(hist, key):
    """(events, sum of values) of a field's histogram {value: count}."""
    h = hist.get(key, {})
    return sum(h.values()), sum(int(v) * c for v, c in h.items())


def batch_table(probes, workloads, arch, failed=frozenset()):
    """The dirty-reclaim batches of an arch's probe runs, from the traced
    events (bench.Histogram): how many folios each pageout batch held when
    it was flushed (full at BATCH_LIMIT, or ended by the end of the list
    shrink_folio_list() was given), and what the lists held: the folios
    isolated per list and what reclaim did with them.  '' without such
    runs; a kernel and mode in failed (failed_keys()) is a row that says
    FAILED, with no figure."""
    rows = []
    for w in workloads:
        if not getattr(w, "histograms", None):
            continue
        for fl, mode in (("patched", "on"), ("patched", "off"), ("stock", "stock")):
            name = "stock" if fl == "stock" else mode
            if (arch, w.name, fl, mode) in failed:
                rows.append(f"| {w.name} | {name} | {FAILED} |" + " - |" * 11)
                continue
            rs = [r for r in probes.get((arch, w.name, fl, mode), []) if "hist" in r]
            if not rs:
                continue
            r = rs[0]
            h = r["hist"]
            nb, folios = _hist_sum(h, "pobatch.nr")
            sizes = h.get("pobatch.nr", {})
            buckets = " / ".join(
                f"{sum(c for v, c in sizes.items() if lo <= int(v) <= hi):,}"
                for lo, hi in BATCH_BUCKETS)
            full = sum(c for v, c in sizes.items() if int(v) >= BATCH_LIMIT)
            nl, scanned = _hist_sum(h, "mm_vmscan_lru_shrink_inactive.nr_scanned")

            def per_list(field):
                return f"{_hist_sum(h, 'mm_vmscan_lru_shrink_inactive.' + field)[1] / nl:.1f}" \
                    if nl else "-"

            if nb:
                batch = (f"{nb:,} | {folios / nb:.1f} | {full:,} | {nb - full:,} | "
                         f"{buckets}")
            else:
                batch = ("n/a" if fl == "stock" else "0") + " | - | - | - | -"
            if nl:
                lists = (f"{nl:,} | {scanned / nl:.1f} | {per_list('nr_reclaimed')} | "
                         f"{per_list('nr_activate_anon')} | {per_list('nr_ref_keep')} | "
                         f"{per_list('nr_unmap_fail')}")
            else:
                lists = "0 | - | - | - | - | -"
            rows.append(f"| {w.name} | {name} | {batch} | {lists} | "
                        f"{r.get('hist_lost', 0):,} |")
    if not rows:
        return ""
    return "\n".join([
        f"Reclaim batches ({arch}): one probe run per mode, traced (the "
        "shrink_pageout_batch() kprobe with the batch's size, and the "
        "vmscan:mm_vmscan_lru_shrink_inactive event of each list reclaim was "
        f"given). A batch is flushed when it holds {BATCH_LIMIT} folios (full) or "
        "when shrink_folio_list() reaches the end of its list; no batch is bigger "
        "than the dirty anonymous folios of one list. Sizes: batches of 1 / 2-7 / "
        "8-15 / 16-23 / 24-30 / 31 folios. Per list: the folios isolated for it "
        "(nr_scanned), then reclaimed, activated, kept as referenced, and left "
        "mapped; lost: events the trace buffer overwrote.", "",
        "| workload | mode | batches | mean batch | full | ended by the list | sizes "
        "| lists | folios per list | reclaimed | activated | kept (referenced) "
        "| unmap failed | lost |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"] + rows) + "\n"


def _missing_keys(runs, workloads, arches, stock=True):
    """[(arch, workload, flavour, mode)] that a bench of workloads on arches
    planned and has no run kept for (probe runs aside); no stock entries
    when stock is False (run-here.sh runs one kernel)."""
    have = {(r["arch"], r.get("flavour", "patched"), r["workload"], r["mode"])
            for r in runs if not r.get("probe")}
    out = []
    for arch in arches:
        for w in workloads:
            if not w.runs_on(arch):
                continue
            want = [("patched", m) for m in w.modes] + ([("stock", "stock")] if stock else [])
            out += [(arch, w.name, f, m) for f, m in want
                    if (arch, f, w.name, m) not in have]
    return out


def missing_runs(runs, workloads, arches, stock=True):
    """["arch/flavour workload mode", ...]: what a bench of workloads on
    arches planned and has no run kept for (probe runs aside), e.g. after
    a boot that failed or an interrupt; no stock entries when stock is
    False (run-here.sh runs one kernel)."""
    return [f"{a}/{f} {w} {m}" for a, w, f, m in
            _missing_keys(runs, workloads, arches, stock)]


FAILED = "FAILED"


def failed_keys(boots, runs, workloads, arches, stock=True):
    """{(arch, workload, flavour, mode)} (the keys of stats.summarize())
    whose runs did not all arrive as planned: each one boots.json lists as
    left out (probe runs too; a non-zero exit or a signal, a setup step
    that failed, knobs that read back other than the mode, a run that never
    reported), and each mode with no run kept at all of a workload that has
    runs on the arch (a boot that failed or was cut short).  A workload
    with no run on an arch has no row there; the Missing list names it."""
    out = {(b["arch"], e["workload"], b["flavour"], e["mode"])
           for b in boots or () for e in b["excluded"]}
    measured = {(r["arch"], r["workload"]) for r in runs} | {k[:2] for k in out}
    out |= {k for k in _missing_keys(runs, workloads, arches, stock) if k[:2] in measured}
    return out


def failed_sides(failed, arch, w, mode):
    """The sides of a row (mode and switch off of the patched kernel,
    stock) that failed_keys() names, as {"stock", "off", mode}."""
    sides = {"stock": ("stock", "stock"), "off": ("patched", "off"),
             mode: ("patched", mode)}
    return {side for side, (fl, m) in sides.items() if (arch, w.name, fl, m) in failed}


def without_failed(groups, failed, workloads):
    """groups less every group of a row that failed: a mode that failed, and
    every mode of a workload whose switch off or stock failed (the row's
    base), so that no plot shows a figure the tables refuse."""
    gone = set()
    for arch, name, fl, m in failed:
        w = next((w for w in workloads if w.name == name), None)
        base = (fl, m) in (("stock", "stock"), ("patched", "off"))
        for mode in (list(w.modes) + ["stock"] if base and w else [m]):
            gone.add((arch, name, mode))
    return {k: rs for k, rs in groups.items() if (k[0], k[1], k[3]) not in gone}


def missing_section(missing):
    out = ["### Missing", ""]
    if not missing:
        out.append("None: every workload has runs in every mode on every arch.")
    else:
        out += ["Planned but without a run kept (a boot that failed or did not "
                "finish, an interrupted bench, or every run of it left out); "
                "their rows below say FAILED, or are absent where the workload "
                "has no run on the arch at all:", ""]
        out += [f"- {m}" for m in missing]
    return "\n".join(out) + "\n"


def boots_section(boots):
    """The boots of a bench, each with its kernel reports (count and first
    line) and its runs kept and left out, then every run left out and
    why; boots is boots.json's list (bench.boot_bench())."""
    out = ["### Boots", "",
           "Kernel reports: lines of a boot's console that lab.results.kernel_reports() "
           "finds (oops, BUG, WARNING, lockdep, ...); a boot with one, or with a run "
           "left out, makes `lab bench` exit 1.", "",
           "A stock boot is reused from an earlier bench while its kernel, guest image, "
           "plan and QEMU are the same (instruction-time repeats exactly under -icount); "
           "the last column names the stored boot (`lab bench --no-cache` boots afresh).", "",
           "| boot | runs kept | runs left out | kernel reports | first kernel report "
           "| reused from |",
           "|---|---|---|---|---|---|"]
    for b in boots:
        first = b.get("first_report", "").replace("|", "\\|")
        out.append(f"| {b['name']} | {b['runs']} | {len(b['excluded'])} | "
                   f"{b['kernel_reports']} | {first or '-'} | {b.get('reused') or '-'} |")
    gone = [(b, e) for b in boots for e in b["excluded"]]
    out += ["", "### Runs left out", ""]
    if not gone:
        out.append("None: every run exited 0, its setup printed no failure and "
                   "its knobs read back as its mode.")
    else:
        out += ["A run is left out when it exited non-zero, when a setup step "
                "before it printed \"# lab: could not ...\", or when the knobs "
                "benchrun read back before it (the mode's switches, no "
                "/sys/kernel/mm/foliobatch on stock, the THP sizes and MGLRU of "
                "the workload's setup) are not its mode, or when it never reported. "
                "Each fails the bench, and the rows of its kernel and mode say "
                "FAILED.", "",
                "| boot | workload | mode | rep | why |", "|---|---|---|---|---|"]
        for b, e in gone:
            why = "; ".join(e["excluded"]).replace("|", "\\|")
            out.append(f"| {b['name']} | {e['workload']} | {e['mode']} | {e['rep']} | "
                       f"{why} |")
    return "\n".join(out) + "\n"
