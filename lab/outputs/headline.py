# SPDX-License-Identifier: GPL-2.0-only
"""Headline: the README's result tables, computed from stored runs.

docs/results/headline.toml declares which stored measurement (a directory
of docs/results/ with its runs.json) gives each figure of each series;
this module computes the figures from those runs with stats.py's
functions (median, ± half the min-max spread, change against switch
off, the switch-off-against-stock check of the figure's measure and of
the workload's time and counters) and makes two Markdown tables:
the gains, and the controls where a series cannot batch.  'lab report
--history' puts the gains into README.md between BEGIN and END, and the
controls with the whole legend into docs/known-costs.md between
CONTROLS_BEGIN and CONTROLS_END; a host test fails when either table is
not the one the declarations make.
"""

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..core.util import LabError
from ..guest import workloads
from . import blocks, history, manifest, stats, tables

BEGIN = "<!-- headline: made by 'lab report --history' from docs/results/headline.toml; do not edit -->"
END = "<!-- /headline -->"
# the controls and the whole legend, in docs/known-costs.md
CONTROLS_BEGIN = ("<!-- controls: made by 'lab report --history' from "
                  "docs/results/headline.toml; do not edit -->")
CONTROLS_END = "<!-- /controls -->"
DECLARATIONS = "headline.toml"
# what the link of a figure from a measurement stored without a manifest says
NO_MANIFEST = "no manifest"


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One figure of a series: a measure of a workload on an arch, from the
    runs of a stored measurement, switch off against mode."""
    series: str
    arch: str
    results: str
    workload: str
    measure: str = "time"
    label: str = ""
    mode: str = "on"
    control: bool = False
    main: bool = True


SERIES_KEYS = {"name", "switch", "upstream", "figure"}


def declared(results_dir):
    """([(series name, switch, upstream)], [Figure]) of headline.toml; a
    LabError for a key it does not know."""
    path = Path(results_dir) / DECLARATIONS
    data = tomllib.loads(path.read_text())
    series, figures = [], []
    for s in data.get("series", []):
        unknown = sorted(set(s) - SERIES_KEYS)
        if unknown or not {"name", "switch"} <= set(s):
            raise LabError(f"{path}: a series has keys {', '.join(unknown) or '-'} "
                           f"it should not, or lacks name or switch")
        series.append((s["name"], s["switch"], s.get("upstream", "")))
        for f in s.get("figure", []):
            try:
                figures.append(Figure(series=s["name"], **f))
            except TypeError as e:
                raise LabError(f"{path}: series {s['name']}: {e}") from None
    return series, figures


@dataclass(frozen=True)
class Stored:
    """A stored measurement's runs, grouped once for all its figures:
    (arch, workload, flavour, mode) -> the measured runs, and -> the probe
    runs (stats.summarize()); failed: the keys whose runs did not all
    arrive as planned (history.failed()); manifest: whether its runs were
    checked against the sha256 of a manifest.json (stored before benches
    wrote one: not)."""
    runs: list
    groups: dict
    probes: dict
    failed: frozenset = frozenset()
    manifest: bool = False


def _stored(results_dir, name, cache):
    if name not in cache:
        d = Path(results_dir) / name
        if not (d / "runs.json").is_file():
            raise LabError(f"{d}/runs.json not found: headline.toml names a "
                           "measurement that is not stored")
        why = history.refusal(d)
        if why:
            raise LabError(f"{d}: refused: {'; '.join(why)}; headline.toml takes "
                           "figures from it")
        if not manifest.booted_stock(d):
            raise LabError(f"{d}: its bench booted no stock kernel (no --stock): "
                           "headline.toml takes figures from it, and the README's "
                           "tables check switch off against stock")
        runs, ws, arches = history.load(d)
        cache[name] = Stored(runs, stats.summarize(runs), stats.summarize(runs, probe=True),
                             frozenset(history.failed(d, runs, ws, arches)),
                             manifest.read(d) is not None)
    return cache[name]


def _values(m, fig, flavour, mode):
    """The figure's values in the runs of a kernel flavour and mode of a
    Stored m: one per measured run, or for a kprobe count the probe run's."""
    source, _, key = fig.measure.partition(".")
    probe = source == "kprobe"
    group = (m.probes if probe else m.groups).get((fig.arch, fig.workload, flavour, mode), [])
    if probe:
        return [r.get("kprobe", {})[key] for r in group[:1] if key in r.get("kprobe", {})]
    if fig.measure == "time":
        return [stats.instr_time(r) for r in group]
    return [stats.value(r, source, key) for r in group]


def _check_measure(runs, fig):
    """A LabError unless the figure's measure is "time" or shows in the
    runs of its workload (a misspelt key would read as zeros)."""
    if fig.measure == "time":
        return
    source, _, key = fig.measure.partition(".")
    mine = [r for r in runs if r["arch"] == fig.arch and r["workload"] == fig.workload]
    if source not in ("metrics", "vmstat", "irq", "kprobe") or not key or \
            not stats.present(mine, source, key):
        raise LabError(f"headline.toml: no {fig.measure} in the {fig.arch} "
                       f"{fig.workload} runs of {fig.results}")


def _label(fig):
    if fig.label:
        return fig.label
    if fig.measure == "time":
        return "instruction-time"
    source, _, key = fig.measure.partition(".")
    w = workloads.BY_NAME[fig.workload]
    for label, src, k, *_ in w.metrics:
        if (src, k) == (source, key):
            return label
    return key


def _fmt(fig, st):
    """A median with its spread: a time in s, ms or ns, a count as is."""
    if not st:
        return "-"
    med, spread, n = st
    timed = fig.measure == "time" or fig.measure.endswith("_ns")
    if timed and med >= 1e8:
        text = f"{med / 1e9:.4f} s"
    elif timed and med >= 1e5:
        text = f"{med / 1e6:.2f} ms"
    else:
        text = f"{med:,.0f}" + (" ns" if timed else "")
    if n < 2:
        return text + " (one run)"
    return text + f" ±{stats.plus_minus(st) * 100:.2f}%"


def _off_vs_stock(m, fig):
    """The switch-off-against-stock check of a figure (tables.
    off_vs_stock_check() on the workload's whole time, the figure's own
    measure and the workload's compared counters) in one cell
    (tables.check_cell()): its verdict, then on a line of its own each of
    the time, the measure and each compared counter more than 1% from
    stock's."""
    measures = [] if fig.measure == "time" else \
        [(_label(fig),) + tuple(fig.measure.split(".", 1))]
    c = tables.off_vs_stock_check(m.groups, fig.arch, workloads.BY_NAME[fig.workload],
                                  measures, m.probes)
    return tables.check_cell(c, [label for label, *_ in measures])


def _when(name, runs):
    scale = "quick" if any(r.get("quick") for r in runs) else "full"
    return f"{name[:10]}, {scale}"


def _row(results_dir, fig, cache, on_vs_stock=False, base="docs/results"):
    if fig.workload not in workloads.BY_NAME:
        raise LabError(f"headline.toml: {fig.workload} is not a workload of this lab")
    w = workloads.BY_NAME[fig.workload]
    if fig.mode not in w.modes:
        raise LabError(f"headline.toml: {fig.workload} has no mode {fig.mode} "
                       f"(its modes: {', '.join(w.modes)})")
    m = _stored(results_dir, fig.results, cache)
    what = f"{fig.workload}: {_label(fig)}" + (f" ({fig.mode})" if fig.mode != "on" else "")
    link = f"[{_when(fig.results, m.runs)}]({base}/{fig.results}/report.md)" + \
        ("" if m.manifest else f" ({NO_MANIFEST})")
    bad = tables.failed_sides(m.failed, fig.arch, w, fig.mode)
    if bad:
        # a run of the figure's kernel and mode, of switch off or of stock
        # was left out or did not arrive: no figure from that measurement
        cell = {side: tables.FAILED if side in bad else "-"
                for side in ("off", fig.mode)}
        vs_stock = f"{tables.FAILED} | " if on_vs_stock else ""
        return (f"| {fig.arch} | {what} | {cell['off']} | {cell[fig.mode]} | "
                f"{tables.FAILED} | {vs_stock}{tables.FAILED if 'stock' in bad else '-'} | "
                f"{link} |")
    _check_measure(m.runs, fig)
    off = stats.stats(_values(m, fig, "patched", "off"))
    on = stats.stats(_values(m, fig, "patched", fig.mode))
    if not off or not on:
        raise LabError(f"headline.toml: {fig.results} has no {fig.arch} "
                       f"{fig.workload} runs of {fig.measure} with the switch off "
                       f"and {fig.mode}")
    vs_stock = ""
    if on_vs_stock:
        # a control: what the default (switch on) costs against stock
        stock = stats.stats(_values(m, fig, "stock", "stock"))
        vs_stock = f"{stats.change(stock, on) if stock else '-'} | "
    return (f"| {fig.arch} | {what} | {_fmt(fig, off)} | {_fmt(fig, on)} | "
            f"{stats.change(off, on)} | {vs_stock}{_off_vs_stock(m, fig)} | {link} |")


def _table(results_dir, series, figures, cache, upstream, on_vs_stock=False,
           base="docs/results"):
    """The Markdown table of @figures: with @upstream, upstream's figure in
    a last column; with @on_vs_stock (the controls), the change of switch
    on against stock beside the change against switch off."""
    head = "| series | switch | arch | workload: measure | switch off | switch on | change " \
           + ("| switch on vs stock " if on_vs_stock else "") \
           + "| switch off vs stock | measured |" + (" upstream |" if upstream else "")
    rule = "|---" * (9 + upstream + on_vs_stock) + "|"
    rows = [head, rule]
    for name, switch, up in series:
        mine = [f for f in figures if f.series == name]
        for i, fig in enumerate(mine):
            first = i == 0
            row = (f"| {name if first else ''} | {f'`{switch}`' if first else ''} "
                   + _row(results_dir, fig, cache, on_vs_stock, base))
            rows.append(row + (f" {up if first else ''} |" if upstream else ""))
    return "\n".join(rows)


# the whole legend of both tables (docs/known-costs.md's block)
LEGEND = (
    "Each figure is the median of the runs of one mode, ± half their min-max "
    "spread; times are instruction-time (guest time under QEMU `-icount`, 1 ns "
    "per guest instruction, independent of the host); the change is switch "
    "off -> on, same kernel, same boots (both modes run in each), and '(noise)' "
    "when it is within the larger ± of the two; 'switch off vs stock' is the "
    "bench's check of the workload's whole time and of the row's measure, each "
    "on a line of its own: DIFFERS when the ranges (min..max) of switch off's "
    "and stock's runs, each side's from two boots, do not overlap, whatever "
    "their spread, no verdict when they overlap and a side's "
    f"runs vary by more than ±{stats.SPREAD_TOLERANCE:.0%}, OK when they overlap "
    "and neither does; and of the workload's compared counters, each more than "
    f"{stats.COUNTER_TOLERANCE:.0%} from stock's on a line of its own with both "
    "medians (DIFFERS). A measurement is refused, and gives no figure, when "
    "its bench failed, when its runs.json no longer matches the sha256 its "
    "manifest.json records, or when its runs.json and boots.json disagree on "
    f"run counts; '{NO_MANIFEST}': stored before benches recorded one, its run "
    "counts agree but its runs.json cannot be checked against a sha256. "
    "Upstream's figures were measured on real hardware at a larger scale: "
    "compare direction and rough size, not values.")


def readme_block(results_dir, cache=None):
    """The README's headline lines: a short legend and the gains, with
    upstream's figures beside them, each figure computed from its runs;
    the controls and the whole legend are controls_block()'s.  @cache:
    {measurement: Stored} shared with controls_block(), so that a
    measurement both tables take from is loaded and checked once."""
    series, figures = declared(results_dir)
    gains = _table(results_dir, series, [f for f in figures if not f.control],
                   {} if cache is None else cache, 1)
    return "\n".join([
        BEGIN,
        "Median ± half the min-max spread of one mode's runs, in instruction-time "
        "(guest time under QEMU `-icount`); the change is switch off -> on in the "
        "same boots, '(noise)' within the larger ±; 'switch off vs stock': OK, "
        "DIFFERS (the ranges of switch off's and stock's runs do not overlap) or "
        f"no verdict (they overlap, and runs vary by more than "
        f"±{stats.SPREAD_TOLERANCE:.0%}). The whole legend, and the controls where "
        "a series cannot batch, with the default against stock: "
        "[docs/known-costs.md](docs/known-costs.md#controls).",
        "",
        gains,
        END])


def controls_block(results_dir, cache=None):
    """docs/known-costs.md's lines: the whole legend of both tables and the
    controls, where a series cannot batch, with switch on (the default)
    against stock beside switch off against on; @cache as readme_block()'s."""
    series, figures = declared(results_dir)
    controls = _table(results_dir, series, [f for f in figures if f.control],
                      {} if cache is None else cache, 0, on_vs_stock=True, base="results")
    return "\n".join([
        CONTROLS_BEGIN,
        LEGEND,
        "",
        "Where a series cannot batch (small folios, mixed layouts, old entries, "
        "moves whose time is the copy), it should cost nothing; 'switch on vs "
        "stock' is the change of the default against stock 6.12, medians of the "
        "same measure:",
        "",
        controls,
        CONTROLS_END])


def replace_block(text, block):
    """text with its headline block replaced by block (ValueError if it has
    none)."""
    return blocks.replace(text, BEGIN, END, block, "headline")


def replace_controls(text, block):
    """text with its controls block replaced by block (ValueError if it has
    none)."""
    return blocks.replace(text, CONTROLS_BEGIN, CONTROLS_END, block, "controls")


def not_current(results_dir, tree):
    """{directory: its manifest's patches_tree (or 'no manifest')} of the
    measurements headline.toml takes figures from whose series is not the
    patches tree @tree (git rev-parse HEAD:patches), or whose kernels are
    not the lab's own (a manifest's variant other than 'default': 'lab
    bench --kernel-config debian'), or that booted no stock kernel (a bench
    without --stock: the tables' switch-off-against-stock column has
    nothing to compare), or where a kernel ran its runs in one boot
    (one_boot_kernels(): the check of switch off against stock takes two
    boots a side): the README's tables take only measurements of the
    current series on the lab's kernels, against stock, two boots each."""
    _, figures = declared(results_dir)
    out = {}
    for name in sorted({f.results for f in figures}):
        m = manifest.read(Path(results_dir) / name)
        got = (m or {}).get("patches_tree") or "no manifest"
        variant = (m or {}).get("variant", "default")
        if got != tree:
            out[name] = got
        elif variant != "default":
            out[name] = f"{got}, on the {variant} kernels"
        elif not manifest.booted_stock(Path(results_dir) / name):
            out[name] = f"{got}, without stock (no --stock)"
        elif (one := one_boot_kernels(Path(results_dir) / name)):
            out[name] = f"{got}, one boot of {', '.join(one)}"
    return out


def one_boot_kernels(directory):
    """The boot groups of a measurement (a boots.json name less its
    '-r<rep>': arch, flavour and boot arguments) whose runs come from one
    boot."""
    path = Path(directory) / "boots.json"
    if not path.exists():
        return ["every kernel (no boots.json)"]
    groups = {}
    for b in json.loads(path.read_text()):
        groups.setdefault(re.sub(r"-r-?\d+$", "", b["name"]), set()).add(b["name"])
    return sorted(g for g, names in groups.items() if len(names) < 2)
