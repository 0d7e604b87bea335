# SPDX-License-Identifier: GPL-2.0-only
"""The README's test counts are made from the stored summary of a run
(docs/results/test-summary.json, 'lab report --tests'), never typed."""

import json
import re

import pytest

from lab.core import config
from lab.outputs import testsummary


def test_the_readme_states_the_stored_summary():
    s = json.loads((config.REPO / "docs/results/test-summary.json").read_text())
    readme = (config.REPO / "README.md").read_text()
    times = testsummary.stored(config.REPO / "docs/results/tests")
    assert testsummary.readme_block(s, times) in readme
    assert s["failed"] == 0 and s["passed"] > 0


def test_no_other_count_of_passed_tests_in_the_readme():
    readme = (config.REPO / "README.md").read_text()
    block = re.search(re.escape(testsummary.BEGIN) + ".*?" + re.escape(testsummary.END),
                      readme, re.S).group(0)
    assert not re.search(r"\d[\d,]* passed", readme.replace(block, ""))


def test_summary_counts_and_the_block_it_makes():
    rows = [{"status": "pass", "name": "a", "detail": ""},
            {"status": "skip", "name": "b", "detail": "no MTE: none (x)"},
            {"status": "skip", "name": "c", "detail": "no MTE: none (y)"},
            {"status": "variant", "name": "d", "detail": ""}]
    s = testsummary.summarize(rows, "abc1234", "2026-11-27", "21m32s")
    assert (s["passed"], s["failed"], s["skipped"]) == (1, 0, 2)
    assert s["skip_reasons"] == {"no MTE: none": 2} and s["not_counted"] == {"variant": 1}
    text = "x\n" + testsummary.BEGIN + "\nold\n" + testsummary.END + "\ny"
    new = testsummary.replace_block(text, testsummary.readme_block(s))
    assert "**1 passed, 0 failed**, 2 skipped (2 no MTE: none)" in new
    assert new.startswith("x\n") and new.endswith("\ny") and "old" not in new
    with pytest.raises(ValueError):
        testsummary.replace_block("no markers", "b")


def _summary(compiled, start, when="2026-11-30", took="50m0s"):
    return testsummary.summarize([{"status": "pass", "name": "a", "detail": ""}],
                                 "abc1234", when, took, compiled, start)


def test_cold_and_warm_times_come_from_the_kept_runs(tmp_path):
    """The README gives the newest cold and the newest warm run's time; a
    run counts as cold only when it started with ccache empty and no
    kernel built, and compiled something."""
    cold = {"ccache_files": 0, "kernels_built": []}
    assert testsummary.is_cold(_summary(4000, cold))
    assert not testsummary.is_cold(_summary(0, cold))
    assert not testsummary.is_cold(_summary(4000, {"ccache_files": 9, "kernels_built": []}))
    assert not testsummary.is_cold(_summary(4000, {"ccache_files": 0,
                                                   "kernels_built": ["x86_64/stock"]}))
    assert not testsummary.is_cold(_summary(4000, None))
    for name, s in [("2026-11-30-0700-a.json", _summary(4000, cold, took="55m1s")),
                    ("2026-11-30-0900-b.json", _summary(6, {"ccache_files": 9,
                                                            "kernels_built": []},
                                                        took="25m2s")),
                    ("2026-11-30-0800-c.json", _summary(3, None, took="30m3s"))]:
        (tmp_path / name).write_text(json.dumps(s))
    times = testsummary.stored(tmp_path)
    assert times["cold"]["time"] == "55m1s" and times["warm"]["time"] == "25m2s"
    block = testsummary.readme_block(_summary(0, None), times)
    assert "cold 55m1s (commit abc1234, 2026-11-30, 4,000 compilations)" in block
    assert "warm 25m2s (commit abc1234, 2026-11-30, 6 compilations" in block
    only_warm = testsummary.readme_block(_summary(0, None), {"warm": times["warm"]})
    assert "no cold run kept yet" in only_warm
