"""Report: Markdown tables, PNG plots and one HTML page from bench runs."""

import html
import re
import statistics
from collections import defaultdict

from ..core.util import say

OFF_VS_STOCK_TOLERANCE = 0.02   # instruction-time, relative
# a compared counter's median with the switch off against stock's, relative
# (of at least 1: counts of 0 and 1 are within it)
COUNTER_TOLERANCE = 0.01

# What the measured time is called: instruction-time for the lab's guests
# (-icount), "time" for runs of run-here.sh on a machine of its own (runs
# with clock "native"; lab/commands/here.py).  write() sets it for one
# report.
TIME = "instruction-time"


def instr_time(rec):
    """The measured phase's instruction-time in ns (the workload's own
    time_ns, or benchrun's whole-run time for programs without one)."""
    return rec["metrics"].get("time_ns", rec["total_ns"])


def spread(values):
    """(max - min) / median of a list of measurements."""
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med else 0.0


def _value(rec, source, key):
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


def _stats(values):
    if not values:
        return None
    return statistics.median(values), spread(values), len(values)


def _fmt_time(st):
    if not st:
        return "-"
    med, spread, n = st
    return f"{med / 1e9:.4f} s ±{spread * 50:.2f}% (n={n})"


def _fmt_num(st):
    if not st:
        return "-"
    med, spread, n = st
    return f"{med:,.0f}" if spread < 0.001 else f"{med:,.0f} (±{spread * 50:.1f}%)"


def _change(a, b):
    """Relative change of medians; '(noise)' when it is within the larger
    min-max spread of the two measurements."""
    if not a or not b or not a[0]:
        return "-"
    rel = (b[0] - a[0]) / a[0]
    if min(a[2], b[2]) < 2:
        return f"{rel * 100:+.1f}% (one run: spread unknown)" if rel else "+0.0%"
    noise = abs(rel) <= max(a[1], b[1])
    return f"{rel * 100:+.1f}%" + (" (noise)" if noise and rel else "")


def _label(label):
    """A workload metric's label in this report's time (its own time
    metrics say instruction-time)."""
    return label.replace("instruction-time", TIME) if TIME != "instruction-time" else label


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


def _fmt_rate(st):
    if not st:
        return "-"
    med, spread, n = st
    return f"{med:.1f}" if spread < 0.001 else f"{med:.1f} (±{spread * 50:.1f}%)"


def metric_rows(w):
    rows = [(TIME, lambda r: instr_time(r), _fmt_time)]
    if TIME == "instruction-time":
        rows.append(("TCG wall time (s)", lambda r: r.get("wall_s") or 0,
                     lambda st: "-" if not st else f"{st[0]:.1f}"))
    for label, source, key, *_ in w.metrics:
        rows.append((_label(label), lambda r, s=source, k=key: _value(r, s, k), _fmt_num))
    if w.name in ("dirty-reclaim", "dirty-reclaim-8cpu"):
        rows.append((f"bogo ops per {TIME.replace('time', 'second')}",
                     lambda r: bogo_ops(r) / (instr_time(r) / 1e9), _fmt_rate))
    return rows


def off_vs_stock(groups, arch, w):
    """Does switch-off behave like stock: the medians of its time within
    OFF_VS_STOCK_TOLERANCE of stock's, and of each compared counter within
    COUNTER_TOLERANCE?"""
    off = groups.get((arch, w.name, "patched", "off"), [])
    stock = groups.get((arch, w.name, "stock", "stock"), [])
    if not off or not stock:
        return "not measured", None
    t_off = statistics.median(instr_time(r) for r in off)
    t_stock = statistics.median(instr_time(r) for r in stock)
    dt = (t_off - t_stock) / t_stock if t_stock else 0.0
    diffs = []
    for label, source, key, *opts in w.metrics:
        if opts and not opts[0]:
            continue      # interrupt counts vary with timing; shown, not compared
        a = statistics.median(_value(r, source, key) for r in off)
        b = statistics.median(_value(r, source, key) for r in stock)
        if abs(a - b) > COUNTER_TOLERANCE * max(abs(b), 1):
            diffs.append(f"{label} {a:,.0f} vs {b:,.0f}")
    noise = max(_stats([instr_time(r) for r in off])[1], _stats([instr_time(r) for r in stock])[1])
    text = f"{TIME} {dt * 100:+.2f}%" + (
        "; " + "; ".join(diffs) if diffs else
        f"; {', '.join(_compared(w))} within {COUNTER_TOLERANCE:.0%}" if _compared(w)
        else "")
    if noise > OFF_VS_STOCK_TOLERANCE:
        # The runs themselves vary more than the tolerance: no verdict.
        return text + f"; runs vary by {noise:.0%}", None
    ok = abs(dt) <= OFF_VS_STOCK_TOLERANCE and not diffs
    if min(len(off), len(stock)) < 2:
        # A verdict, but on one run: whether the workload repeats is unknown.
        return text + "; one run on a side, spread unknown", ok
    return text, ok


def _compared(w):
    """The labels of a workload's counters that the switch-off check
    compares with stock."""
    return [label for label, source, key, *opts in w.metrics if not opts or opts[0]]


def markdown(groups, workloads, arch, in_series):
    out = [f"### {arch}", "",
           "| workload | metric | stock | switch off | mode | switch on | change | seed |",
           "|---|---|---|---|---|---|---|---|"]
    checks, absent = [], []
    for w in workloads:
        if not any(k[0] == arch and k[1] == w.name for k in groups):
            continue
        missing = [s for s in w.switches() if not in_series(s)]
        name = w.name + (" (not in series: stock in every mode)" if missing else "")
        runs = [r for k, rs in groups.items() if k[0] == arch and k[1] == w.name
                for r in rs]
        gone = {_label(label) for label, source, key, *_ in w.metrics
                if not present(runs, source, key)}
        absent += [f"{w.name}: {label}" for label in sorted(gone)]
        for label, fn, fmt in metric_rows(w):
            if label in gone:
                continue
            st = lambda fl, m: _stats([fn(r) for r in groups.get((arch, w.name, fl, m), [])])
            stock, off = st("stock", "stock"), st("patched", "off")
            for mode in [m for m in w.modes if m != "off"]:
                on = st("patched", mode)
                seed = w.seed if label == TIME and mode == "on" else ""
                out.append(f"| {name} | {label} | {fmt(stock)} | {fmt(off)} | {mode} | "
                           f"{fmt(on)} | {_change(off, on)} | {seed} |")
        text, ok = off_vs_stock(groups, arch, w)
        verdict = "INCONCLUSIVE" if ok is None else "OK" if ok else "DIFFERS"
        if ok is not None and "one run on a side" in text:
            verdict += " (one run)"
        checks.append(f"| {w.name} | {verdict} | {text} |")
    if absent:
        out += ["", f"Counters left out on {arch}: no run of the workload shows "
                "them (the arch has no such counter, or it never moved): "
                + "; ".join(absent) + "."]
    if TIME == "time":      # run-here.sh: one foliobatch kernel, no stock runs
        return "\n".join(out) + "\n"
    out += ["", f"Switch off against stock ({arch}; OK = the median {TIME} within "
            f"{OFF_VS_STOCK_TOLERANCE:.0%} of stock's and the median of each compared "
            f"counter within {COUNTER_TOLERANCE:.0%} of stock's; INCONCLUSIVE = the "
            f"runs themselves vary by more than {OFF_VS_STOCK_TOLERANCE:.0%}):", "",
            "| workload | check | detail |", "|---|---|---|"] + checks
    return "\n".join(out) + "\n"


def mechanism_table(probes, workloads, arch):
    """The mechanism counts of the probe runs of an arch: calls of each
    workload's kernel functions, stock, switch off and on, and what a
    perfect batch would reach with the switch on; '' without probe runs."""
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
            # kernel had it
            failed = {k for k, rs in runs.items()
                      if any(m.function in r.get("kprobe_failed", ()) for r in rs)}
            if not any(rs for k, rs in runs.items() if k not in failed):
                continue

            def count(key, ev=m.event):
                rs = runs[key]
                if key in failed or not rs:
                    return None
                return rs[0].get("kprobe", {}).get(ev, 0)

            def calls(key):
                n = count(key)
                return "n/a" if key in failed else "-" if n is None else f"{n:,}"

            def ratio(a, b):
                return f"{a / b:.1f}" if a is not None and b else "-"

            on = runs[("patched", "on")]
            lim = m.limit(on[0]) if m.limit and on else None
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


def batch_table(probes, workloads, arch):
    """The dirty-reclaim batches of an arch's probe runs, from the traced
    events (bench.Histogram): how many folios each pageout batch held when
    it was flushed (full at BATCH_LIMIT, or ended by the end of the list
    shrink_folio_list() was given), and what the lists held: the folios
    isolated per list and what reclaim did with them.  '' without such
    runs."""
    rows = []
    for w in workloads:
        if not getattr(w, "histograms", None):
            continue
        for fl, mode in (("patched", "on"), ("patched", "off"), ("stock", "stock")):
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

            name = "stock" if fl == "stock" else mode
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


def plot_summary(groups, workloads, arches, path):
    """One chart: switch on / off instruction-time per workload and arch,
    the seed's ratio marked where the seed gives one."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_arch = {a: ratios(groups, workloads, a) for a in arches}
    names = [w.name for w in workloads if any(w.name in per_arch[a] for a in arches)]
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(names) + 2), 4.2))
    width = 0.8 / len(arches)
    colours = ["#4477aa", "#ee6677", "#228833"]
    for i, a in enumerate(arches):
        xs = [j + (i - (len(arches) - 1) / 2) * width for j in range(len(names))]
        ax.bar(xs, [per_arch[a].get(n, 0) for n in names], width, label=f"{a}: on / off",
               color=colours[i % len(colours)])
        seeds = [(x, w.seed_ratio[a]) for x, n in zip(xs, names)
                 for w in workloads if w.name == n and a in w.seed_ratio]
        if seeds:
            ax.scatter([x for x, _ in seeds], [v for _, v in seeds], marker="_", s=400,
                       color="black", zorder=3,
                       label="seed (real hardware)" if i == 0 else None)
    ax.axhline(1.0, color="#999999", linewidth=0.8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"{TIME}, switch on / off")
    ax.set_title("Change per workload (below 1: the series is faster)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# one colour per mode, the same in every panel: stock grey, switch off
# light, the seed's modes dark; modes of their own (seed 000's
# "referenced", "unmap") in between
MODE_COLOURS = {"stock": "#999999", "off": "#88bbdd", "on": "#1f4e99",
                "referenced": "#ddaa33", "unmap": "#bb5566"}
ARCH_MARKERS = {"x86_64": "o", "arm64": "s"}
# the smallest half-range of a panel's y axis around 1.0
PANEL_MIN_RANGE = 0.05


def panel_points(groups, w, arch):
    """[(mode, median / off's median, low, high)] of a workload on an arch:
    each mode's instruction-time against the same boot's switch off, with
    the min and max of its runs; [] without runs with the switch off."""
    off = [instr_time(r) for r in groups.get((arch, w.name, "patched", "off"), [])]
    if not off:
        return []
    base = statistics.median(off)
    out = []
    for fl, m in [("stock", "stock")] + [("patched", m) for m in w.modes]:
        vals = [instr_time(r) / base for r in groups.get((arch, w.name, fl, m), [])]
        if vals:
            out.append((m, statistics.median(vals), min(vals), max(vals)))
    return out


def plot(groups, workloads, arches, path):
    """One panel per workload: for each arch, every mode's instruction-time
    as a fraction of the switch-off median of the same boot (so 1.0 is
    switch off, and a 10% change is a tenth of the panel's scale, whatever
    the workload's length), median with min-max bars; the seed's ratio
    for the arch drawn as a black bar across the arch's column."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = [w for w in workloads if any(panel_points(groups, w, a) for a in arches)]
    if not ws:
        return None
    cols = min(3, len(ws))
    nrows = -(-len(ws) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.4 * cols, 3.3 * nrows),
                             squeeze=False)
    for ax in axes.flat[len(ws):]:
        ax.set_visible(False)
    used = set()
    for ax, w in zip(axes.flat, ws):
        ticks, labels = [], []
        for i, a in enumerate(arches):
            pts = panel_points(groups, w, a)
            if not pts:
                continue
            n = len(pts)
            xs = [i + (j - (n - 1) / 2) * 0.8 / max(n, 1) for j in range(n)]
            for x, (m, med, lo, hi) in zip(xs, pts):
                ax.errorbar([x], [med], yerr=[[med - lo], [hi - med]],
                            fmt=ARCH_MARKERS.get(a, "D"), markersize=7, capsize=3,
                            color=MODE_COLOURS.get(m, "#117733"),
                            label=m if m not in used else None)
                used.add(m)
            if a in w.seed_ratio and w.seed_ratio[a]:
                ax.hlines(w.seed_ratio[a], i - 0.45, i + 0.45, colors="black",
                          linewidth=2, label="seed" if "seed" not in used else None)
                used.add("seed")
            on = next((med for m, med, _, _ in pts if m == "on"), None)
            ticks.append(i)
            labels.append(a if on is None else f"{a}\non {100 * (on - 1):+.1f}%")
        ax.axhline(1.0, color="#bbbbbb", linewidth=0.8, zorder=0)
        # at least 0.95..1.05, so that noise of a few tenths of a percent
        # does not fill the panel as a real change would
        lo, hi = ax.get_ylim()
        ax.set_ylim(min(lo, 1 - PANEL_MIN_RANGE), max(hi, 1 + PANEL_MIN_RANGE))
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_xlim(-0.6, len(arches) - 0.4)
        ax.set_title(w.name, fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", color="#eeeeee")
    # each label was given once (used), so the panels' legends add up
    handles, names = [], []
    for ax in axes.flat:
        h, n = ax.get_legend_handles_labels()
        handles += h
        names += n
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=8,
               frameon=False)
    fig.suptitle(f"{TIME} per mode / switch off, median and min-max "
                 "(below 1: faster; black bar: the seed's figure)", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")


def _inline(text):
    """A line of Markdown text as HTML: `code` and **bold**, the rest
    escaped."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def markdown_to_html(md):
    """The report's Markdown as HTML: headings, paragraphs, bullet lists,
    tables and images in the order they come (the subset report.md uses)."""
    out, block = [], None

    def close():
        nonlocal block
        if block:
            out.append(f"</{block}>")
        block = None

    def open_(tag):
        nonlocal block
        if block != tag:
            close()
            out.append(f"<{tag}>")
            block = tag

    first_row = False
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
            cells = [c.replace("\\|", "|") for c in cells]
            if all(c and set(c) <= {"-", ":"} for c in cells):
                continue
            if block != "table":
                open_("table")
                first_row = True
            tag = "th" if first_row else "td"
            first_row = False
            out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells)
                       + "</tr>")
            continue
        image = _IMAGE.match(line.strip())
        heading = re.match(r"^(#{1,6}) (.*)$", line)
        if image:
            close()
            out.append(f'<p><img src="{html.escape(image.group(2))}" '
                       f'alt="{html.escape(image.group(1))}" style="max-width:100%"></p>')
        elif heading:
            close()
            level = min(len(heading.group(1)), 3)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.startswith("- "):
            open_("ul")
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            close()
            out.append(f"<p>{_inline(line)}</p>")
        else:
            close()
    close()
    return "\n".join(out)


def missing_runs(runs, workloads, arches, stock=True):
    """["arch/flavour workload mode", ...]: what a bench of workloads on
    arches planned and has no run kept for (probe runs aside), e.g. after
    a boot that failed or an interrupt; no stock entries when stock is
    False (run-here.sh runs one kernel)."""
    have = {(r["arch"], r.get("flavour", "patched"), r["workload"], r["mode"])
            for r in runs if not r.get("probe")}
    out = []
    for arch in arches:
        for w in workloads:
            if not w.runs_on(arch):
                continue
            want = [("patched", m) for m in w.modes] + ([("stock", "stock")] if stock else [])
            out += [f"{arch}/{f} {w.name} {m}" for f, m in want
                    if (arch, f, w.name, m) not in have]
    return out


def missing_section(missing):
    out = ["### Missing", ""]
    if not missing:
        out.append("None: every workload has runs in every mode on every arch.")
    else:
        out += ["Planned but without a run kept (a boot that failed or did not "
                "finish, an interrupted bench, or every run of it left out); "
                "their rows are absent below:", ""]
        out += [f"- {m}" for m in missing]
    return "\n".join(out) + "\n"


def boots_section(boots):
    """The boots of a bench, each with its kernel reports (count and first
    line) and its runs kept and left out, then every run left out and
    why; boots is boots.json's list (bench.boot_bench())."""
    out = ["### Boots", "",
           "Kernel reports: lines of a boot's console that lab.results.kernel_reports() "
           "finds (oops, BUG, WARNING, lockdep, ...); a boot with one makes `lab bench` "
           "exit 1.", "",
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
                "the workload's setup) are not its mode.", "",
                "| boot | workload | mode | rep | why |", "|---|---|---|---|---|"]
        for b, e in gone:
            why = "; ".join(e["excluded"]).replace("|", "\\|")
            out.append(f"| {b['name']} | {e['workload']} | {e['mode']} | {e['rep']} | "
                       f"{why} |")
    return "\n".join(out) + "\n"


def write(outdir, runs, workloads, arches, in_series, boots=None):
    global TIME
    native = bool(runs) and all(r.get("clock") == "native" for r in runs)
    TIME = "time" if native else "instruction-time"
    groups = summarize(runs)
    probes = summarize(runs, probe=True)
    if native:
        hosts = sorted({f"{r.get('machine', '?')} ({r['arch']}, {r.get('cpus', '?')} "
                        f"CPUs{', ' + r['cpu'] if r.get('cpu') else ''}), kernel "
                        f"{r.get('kernel', '?')}" for r in runs})
        clock = ("Time: CLOCK_MONOTONIC on the machine itself (run-here.sh), in "
                 "real time, median of n runs, ± half the min-max "
                 "spread; " + "; ".join(hosts) + ". One foliobatch kernel runs every "
                 "mode, so there is no stock column.")
    else:
        clock = ("Instruction-time: guest CLOCK_MONOTONIC under qemu -icount "
                 "shift=0,sleep=off (1 ns per guest instruction), median of n runs, "
                 "± half the min-max spread. TCG wall time beside it.")
    md = ["# foliobatch bench", "",
          clock + " Change: switch on (or the named mode) against switch off on "
          "the same kernel and boot.", ""]
    for w in workloads:
        scale = next((r["scale"] for r in runs if r["workload"] == w.name), "")
        md.append(f"- **{w.name}**: {w.what}; scale: {scale}")
    md.append("")
    if boots is not None:
        md.append(boots_section(boots))
    md.append(missing_section(missing_runs(runs, workloads, arches, stock=not native)))
    summary = plot_summary(groups, workloads, arches, outdir / "summary.png")
    if summary:
        md.append(f"![change per workload]({summary.name})\n")
    panels = plot(groups, workloads, arches, outdir / "workloads.png")
    if panels:
        md.append(f"![each workload, both arches]({panels.name})\n")
    for arch in arches:
        md.append(markdown(groups, workloads, arch, in_series))
        mech = mechanism_table(probes, workloads, arch)
        if mech:
            md.append(mech)
        batches = batch_table(probes, workloads, arch)
        if batches:
            md.append(batches)
    text = "\n".join(md)
    (outdir / "report.md").write_text(text)
    body = markdown_to_html(text)
    (outdir / "report.html").write_text(
        "<!doctype html><meta charset=utf-8><title>foliobatch bench</title>"
        "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
        "padding:3px 6px}</style>" + body)
    print(text)
    say(f"report: {outdir / 'report.md'}, {outdir / 'report.html'}")
    return outdir / "report.html"
