# SPDX-License-Identifier: GPL-2.0-only
"""docs/bench.md's workload table is made from lab/guest/workloads.py: every
declared workload has its row, and the block is what the declarations
give now."""

from lab.guest import workloads
from lab.outputs import blocks, workloadsdoc


def test_the_doc_has_every_workload_as_declared():
    text = workloadsdoc.DOC.read_text()
    assert blocks.pattern(workloadsdoc.BEGIN, workloadsdoc.END).search(text)
    assert workloadsdoc.updated(text) == text, \
        "docs/bench.md's workloads are stale: lab report --history"
    block = blocks.pattern(workloadsdoc.BEGIN, workloadsdoc.END).search(text).group(0)
    for w in workloads.WORKLOADS:
        assert f"| `{w.name}` |" in block, w.name
    assert len(workloads.WORKLOADS) >= 30


def test_a_workload_added_or_changed_makes_the_doc_stale(monkeypatch):
    text = workloadsdoc.DOC.read_text()
    w = workloads.WORKLOADS[0]
    monkeypatch.setattr(w, "what", w.what + " (changed)")
    assert workloadsdoc.updated(text) != text
