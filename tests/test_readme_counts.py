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
    assert testsummary.readme_block(s) in readme
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
