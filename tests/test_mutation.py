# SPDX-License-Identifier: GPL-2.0-only
"""The mutation leaf passes only when the planted bug is reported, and its
failure ends 'lab check' non-zero."""

import pytest

from lab.commands import check as checkcmd
from lab.commands import mutation
from lab.core import config
from lab.core.tally import Tally
from lab.kernel import check as kcheck

RESULT = "KTAP version 1\n1..1\nok 1 mprotect_batch\n"
REPORT = ("[   12.345678] mprotect batch: non-contiguous entry at 0xffff81680000 "
          "over contiguous ones the TLB may hold: no break-before-make\n"
          "[   12.345700] WARNING: CPU: 1 PID: 80 at arch/arm64/mm/mmu.c:1700 "
          "modify_prot_commit_ptes+0x2a0/0x3c0\n")


def test_the_leaf_passes_only_on_the_checks_report():
    assert mutation.judge(RESULT + REPORT, [("console", "1 report")], "c.log")[0] == "pass"
    status, detail, _ = mutation.judge(RESULT, [], "c.log")
    assert status == "fail" and "stayed silent" in detail


def test_a_boot_without_test_results_fails_even_with_the_report():
    status, detail, _ = mutation.judge(REPORT, [("boot", "never reached the plan")], "c.log")
    assert status == "fail" and "no test result" in detail


def test_every_mutation_file_is_a_patch_with_its_reason():
    for m in mutation.MUTATIONS:
        text = m.read_text()
        head, _, diff = text.partition("\n--- a/")
        assert diff and "+++ b/" in diff, m
        assert len(head.split()) > 20, f"{m.name} says nothing of what it plants"


def test_a_silent_mutant_ends_lab_check_non_zero(monkeypatch, tmp_path):
    v = kcheck.select(["bbm-mutation"])[0]
    monkeypatch.setattr(config, "WORK", tmp_path)
    monkeypatch.setattr(kcheck, "stamp_inputs", lambda *a, **kw: {"x": 1})
    monkeypatch.setattr(mutation, "stamp_inputs", lambda: {"y": 1})
    monkeypatch.setattr(kcheck, "needs", lambda v, t: [])
    monkeypatch.setattr(mutation, "leaf",
                        lambda: ("fail", "the check stayed silent", ""))
    tally = Tally()
    checkcmd.check(v, tally)
    assert ("fail", "check/arm64/bbm-mutation", "the check stayed silent") in tally.rows
    assert tally.exit_status() == 1
    tally = Tally()
    monkeypatch.setattr(mutation, "leaf", lambda: pytest.fail("not cached"))
    checkcmd.check(v, tally)
    assert tally.rows[0][0] == "fail" and tally.rows[0][2].endswith("cached")
