# SPDX-License-Identifier: GPL-2.0-only
"""Report: a bench's report.md, report.html and PNG plots from its runs
(the numbers in stats.py, the tables in tables.py, the plots in
plots.py, the HTML in htmlpage.py)."""

from ..core.util import say
from . import htmlpage, plots, tables
from .stats import summarize

# What the measured time is called: instruction-time for the lab's guests
# (-icount), "time" for runs of run-here.sh on a machine of its own (runs
# with clock "native"; lab/commands/here.py).
GUEST_TIME = "instruction-time"
NATIVE_TIME = "time"


def write(outdir, runs, workloads, arches, in_series, boots=None, provenance=None,
          stock=True):
    """report.md, report.html, summary.png and workloads.png of a bench's
    runs in outdir; return report.html's path.  A kernel and mode with a run
    that boots (boots.json) lists as left out, or that has no run kept,
    gives no figure: its rows say FAILED and the plots leave it out.
    provenance: a line on what the runs can be checked against (the
    directory's manifest.json, or that it has none).  stock: the bench
    booted the stock kernels (lab bench --stock), so each workload's stock
    runs are expected and switch off is checked against them."""
    native = bool(runs) and all(r.get("clock") == "native" for r in runs)
    label = NATIVE_TIME if native else GUEST_TIME
    stock = stock and not native
    failed = tables.failed_keys(boots, runs, workloads, arches, stock=stock)
    groups = summarize(runs)
    probes = summarize(runs, probe=True)
    shown = tables.without_failed(groups, failed, workloads)
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
    if provenance:
        md += [provenance, ""]
    for w in workloads:
        scale = next((r["scale"] for r in runs if r["workload"] == w.name), "")
        md.append(f"- **{w.name}**: {w.what}; scale: {scale}")
    md.append("")
    if boots is not None:
        md.append(tables.boots_section(boots))
    md.append(tables.missing_section(tables.missing_runs(runs, workloads, arches,
                                                         stock=stock)))
    summary = plots.plot_summary(shown, workloads, arches, outdir / "summary.png", label)
    if summary:
        md.append(f"![change per workload]({summary.name})\n")
    panels = plots.plot(shown, workloads, arches, outdir / "workloads.png", label)
    if panels:
        md.append(f"![each workload, both arches]({panels.name})\n")
    for arch in arches:
        md.append(tables.markdown(groups, workloads, arch, in_series, label, failed,
                                  with_stock=stock))
        mech = tables.mechanism_table(probes, workloads, arch, failed)
        if mech:
            md.append(mech)
        batches = tables.batch_table(probes, workloads, arch, failed)
        if batches:
            md.append(batches)
    text = "\n".join(md)
    (outdir / "report.md").write_text(text)
    body = htmlpage.markdown_to_html(text)
    (outdir / "report.html").write_text(
        "<!doctype html><meta charset=utf-8><title>foliobatch bench</title>"
        "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
        "padding:3px 6px}</style>" + body)
    print(text)
    say(f"report: {outdir / 'report.md'}, {outdir / 'report.html'}")
    return outdir / "report.html"
