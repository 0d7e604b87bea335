# SPDX-License-Identifier: GPL-2.0-only
"""Plots: the PNG charts of a bench report (report.py): the switch on /
off ratio of every workload, and a panel per workload with every mode
against switch off.  label names the measured time (tables.py)."""

import statistics

from .stats import instr_time, ratios

def plot_summary(groups, workloads, arches, path, time_label="instruction-time"):
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
    ax.set_ylabel(f"{time_label}, switch on / off")
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


def plot(groups, workloads, arches, path, time_label="instruction-time"):
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
    fig.suptitle(f"{time_label} per mode / switch off, median and min-max "
                 "(below 1: faster; black bar: the seed's figure)", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
