# SPDX-License-Identifier: GPL-2.0-only
"""Config comparison: the same workloads on the lab's kernels and on
Debian's own configs (lab bench --kernel-config debian), side by side.

A stored measurement of the debian build variant (its manifest's
"variant") is set against the newest stored measurement of the lab's
kernels that is not refused, has the same patches tree and measured every
workload of it at the same scale.  Each row is one workload and mode of an arch: the
instruction-time of stock, switch off and switch on, and the change of on
against off, on each config, and how far the change moved.  Every number
is computed from the two directories' runs.json.
"""

from pathlib import Path

from ..core import config
from . import manifest, stats, tables


def variant_of(d):
    """The build variant a stored measurement ran on ("default" for one
    whose manifest predates the field or is missing)."""
    m = manifest.read(d) or {}
    return m.get("variant") or "default"


def counterpart(d, runs, candidates, refused, load):
    """The lab-config measurement a Debian-config one (@d, whose runs are
    @runs) is compared with: the first of @candidates (newest first) that
    is not @d, of the default variant, of @d's patches tree, not refused
    (@refused: a function of a directory), and with a run of every (arch,
    workload, scale) @d has (a workload whose scale changed since measures
    other work); None when there is none.  @load: history.load.  The
    manifest's checks come before the ones that read runs.json."""
    tree = (manifest.read(d) or {}).get("patches_tree")
    wanted = {(r["arch"], r["workload"], r.get("scale")) for r in runs}
    for c in candidates:
        if c == d or variant_of(c) != "default" or tree is None:
            continue
        if (manifest.read(c) or {}).get("patches_tree") != tree or refused(c):
            continue
        have = {(r["arch"], r["workload"], r.get("scale")) for r in load(c)[0]}
        if wanted <= have:
            return c
    return None


def _time(groups, arch, w, flavour, mode):
    return stats.stats([stats.instr_time(r) for r in
                        groups.get((arch, w.name, flavour, mode), [])])


def _moved(lab, deb):
    """How many points the change of on against off moved, Debian's config
    against the lab's; '-' when either is missing."""
    if not all(s and s[0] for s in (lab[1], lab[2], deb[1], deb[2])):
        return "-"
    a = (lab[2][0] - lab[1][0]) / lab[1][0]
    b = (deb[2][0] - deb[1][0]) / deb[1][0]
    return f"{(b - a) * 100:+.1f} points"


def rows(lab_runs, deb_runs, ws, arches):
    """The table's rows: per arch, workload and mode other than off, the
    instruction-times (stock / off / on) and the change on each config."""
    lab_g, deb_g = stats.summarize(lab_runs), stats.summarize(deb_runs)
    out = []
    for arch in arches:
        for w in ws:
            fmt = {label: f for label, _, f in tables.metric_rows(w)}["instruction-time"]
            for mode in [m for m in w.modes if m != "off"]:
                sides = []
                for g in (lab_g, deb_g):
                    sides.append((_time(g, arch, w, "stock", "stock"),
                                  _time(g, arch, w, "patched", "off"),
                                  _time(g, arch, w, "patched", mode)))
                lab, deb = sides
                if not deb[2] and not deb[1]:
                    continue
                cells = []
                for s in (lab, deb):
                    cells.append(" / ".join(fmt(x) for x in s))
                    cells.append(stats.change(s[1], s[2]))
                out.append(f"| {arch} | {w.name} | {mode} | {cells[0]} | {cells[1]} "
                           f"| {cells[2]} | {cells[3]} | {_moved(lab, deb)} |")
    return out


def section(d, loaded, candidates, refused, load, link_base="results"):
    """The Markdown table of a Debian-config measurement against its
    lab-config counterpart, or a line saying there is none; '' for a
    measurement of another variant.  @loaded: history.load(d), which the
    caller has read already."""
    if variant_of(d) != config.DEBIAN_VARIANT:
        return ""
    deb_runs, ws, arches = loaded
    c = counterpart(d, deb_runs, candidates, refused, load)
    if c is None:
        return ("No stored measurement of the lab's kernels with the same patches "
                "tree and workloads to compare this one with.\n")
    lab_runs, _, _ = load(c)
    body = rows(lab_runs, deb_runs, ws, arches)
    head = [f"The lab's config ([{Path(c).name}]({link_base}/{Path(c).name}/report.md)) against "
            "Debian's: instruction-time of stock / switch off / switch on, and the "
            "change of on against off, on each; the last column is how far that "
            "change moved on Debian's config.", "",
            "| arch | workload | mode | lab config: stock / off / on | lab: on vs off "
            "| Debian config: stock / off / on | Debian: on vs off | moved |",
            "|---|---|---|---|---|---|---|---|"]
    return "\n".join(head + body) + "\n"
