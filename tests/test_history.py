"""docs/results.md is generated: each stored measurement's tables come
from its runs.json, so a figure typed or edited by hand, or a stored run
changed without making the page again, fails here."""

import json
import shutil

from lab.core import config
from lab.outputs import history

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
    assert (d / "note.md").read_text().rstrip() in after


def test_sections_come_newest_first_then_the_older_ones():
    text = history.history(RESULTS)
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    dated = [h.split(":")[0] for h in heads if h[3:5] == "20"]
    assert dated == sorted(dated, reverse=True)
    assert heads[-1] == "## Before the runs were stored"
