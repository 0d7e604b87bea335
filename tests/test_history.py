# SPDX-License-Identifier: GPL-2.0-only
"""docs/results.md is generated: each stored measurement's tables come
from its runs.json, so a figure typed or edited by hand, or a stored run
changed without making the page again, fails here."""

import json
import shutil

from lab.core import config
from lab.outputs import history
from scratchrepo import report_repo

RESULTS = config.REPO / "docs" / "results"


def test_results_md_is_what_the_stored_runs_give():
    want = history.history(RESULTS)
    have = (config.REPO / "docs" / "results.md").read_text()
    assert have == want, "docs/results.md is stale: run 'lab report --history'"


def test_a_changed_run_changes_the_page(tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(RESULTS, copy)
    before = history.history(copy)
    d = history.entries(copy)[0]
    runs = json.loads((d / "runs.json").read_text())
    for r in runs:
        if r["mode"] == "on" and not r.get("probe"):
            r["metrics"]["time_ns"] = r["metrics"].get("time_ns", r["total_ns"]) * 2
    (d / "runs.json").write_text(json.dumps(runs))
    after = history.history(copy)
    assert after != before
    # the heading and words stay: only the figures follow the runs
    assert history.note_text(d) in after


def test_sections_come_newest_first_then_the_older_ones():
    text = history.history(RESULTS)
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    dated = [h.split(":")[0] for h in heads if h[3:5] == "20"]
    assert dated == sorted(dated, reverse=True)
    assert heads[-1] == "## Before the runs were stored"


def _stored_files(results):
    """{path: bytes} of every file inside the stored measurements."""
    return {f: f.read_bytes() for d in history.entries(results) for f in d.rglob("*")
            if f.is_file()}


# A stored measurement is evidence: 'lab report --history' makes
# docs/results.md and the README's headline from it and writes nothing
# into its directory (its report.md stays the one its bench wrote).
def test_lab_report_history_writes_nothing_into_a_stored_measurement(tmp_path,
                                                                      monkeypatch):
    from lab.commands import reportdir
    results = report_repo(tmp_path)
    before = _stored_files(results)
    monkeypatch.setattr(reportdir.config, "REPO", tmp_path)
    reportdir.history()
    after = _stored_files(results)
    assert sorted(str(f.relative_to(results)) for f in set(before) | set(after)
                  if before.get(f) != after.get(f)) == []
    assert (tmp_path / "docs" / "results.md").read_text() == history.history(results)


def test_every_link_of_results_md_resolves():
    """A note links from its own directory; on results.md each relative
    link must still name a file (history.note_text() rewrites them)."""
    import re
    docs = config.REPO / "docs"
    text = history.history(RESULTS)
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)", text)
               if not re.match(r"[a-z]+:", t)]
    assert targets
    assert [t for t in targets if not (docs / t).exists()] == []


def test_a_notes_relative_link_is_rewritten_for_results_md(tmp_path):
    d = tmp_path / "results" / "2026-01-01-0000-x"
    d.mkdir(parents=True)
    (d / "note.md").write_text("see [a](../2026-01-01-0001-y/note.md), "
                               "[b](../../known-costs.md#controls), "
                               "[c](https://example.org/x) and [d](#top)\n")
    assert history.note_text(d) == (
        "see [a](results/2026-01-01-0001-y/note.md), "
        "[b](known-costs.md#controls), [c](https://example.org/x) and [d](#top)")
