# SPDX-License-Identifier: GPL-2.0-only
"""Workloads doc: the table of docs/bench.md's workloads, made from their
declarations in lab/guest/workloads.py ('lab report --history' writes it;
tests/test_workloadsdoc.py fails when the doc's block is stale)."""

from ..core import config
from ..guest import workloads
from . import blocks

DOC = config.REPO / "docs" / "bench.md"
BEGIN = "<!-- workloads: made from lab/guest/workloads.py by 'lab report --history'; do not edit -->"
END = "<!-- /workloads -->"


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _modes(w):
    return ", ".join(w.modes)


def _setup(w):
    parts = []
    if w.thp:
        parts.append("4 KB pages only" if w.thp == "none" else f"THP {w.thp}")
    if w.lru:
        parts.append(f"{w.lru} LRU")
    if w.swap:
        parts.append(f"swap on {'a RAM disk' if w.swap == 'ram' else w.swap}")
    if w.boot:
        parts.append(", ".join(f"{k} {v}" for k, v in sorted(w.boot.items())))
    return "; ".join(parts) or "-"


def table(ws=None):
    """The markdown table of every declared workload, in declaration order."""
    ws = workloads.WORKLOADS if ws is None else ws
    rows = ["| workload | what it runs | scale (`--quick`, and the main job) | modes | "
            "switches | arches | setup |",
            "|---|---|---|---|---|---|---|"]
    for w in ws:
        what = w.what + (f" **Retired**: {w.retired}" if w.retired else "")
        rows.append(f"| `{w.name}` | {_cell(what)} | {_cell(w.scale)} "
                    f"({_cell(w.quick_scale)}) | {_modes(w)} | "
                    f"{', '.join(w.switches()) or '-'} | "
                    f"{', '.join(w.arches) or 'every arch'} | {_cell(_setup(w))} |")
    return "\n".join(rows)


def block():
    return f"{BEGIN}\n{table()}\n{END}"


def updated(text):
    """docs/bench.md's text with its workloads block made anew."""
    return blocks.replace(text, BEGIN, END, block(), "workloads")
