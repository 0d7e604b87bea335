# SPDX-License-Identifier: GPL-2.0-only
"""Host tests of the commit-tests leaves (lab/commands/committests.py): a
commit's boot passes only when every result passed or is accounted for,
and a result that was expected and did not arrive fails it."""

import types

from lab.commands import committests
from lab.guest.results import Result
from lab.kernel import build

from test_each_commit import VERSIONS, fake_tree, versions  # noqa: F401

OK = Result("mprotect_batch/wprot.whole_folio.write_not_widened", "pass")
LATER = (("mprotect_batch/mech.*", 54, "a shared mapping's blocks (0054)"),)


def statuses(rows):
    return [s for s, _, _ in rows]


def test_every_result_passed_is_a_pass():
    rows = committests.judge("x86_64", 40, [OK], [])
    assert statuses(rows) == ["pass"]
    assert committests.verdict(rows, 1)[0] == "pass"


def test_a_failed_result_fails_unless_a_later_patch_brings_it():
    bad = Result("mprotect_batch/mech.on.walk_choice", "fail", "walk 32 != 16")
    assert "fail" in statuses(committests.judge("x86_64", 40, [OK, bad], []))
    rows = committests.judge("x86_64", 40, [OK, bad], [], LATER)
    assert statuses(rows) == ["pass", "later"]
    assert committests.verdict(rows, 1)[0] == "pass"
    # from the patch that brings it on, it is judged as any other
    rows = committests.judge("x86_64", 54, [OK, bad], [], LATER)
    assert "fail" in statuses(rows)
    assert committests.verdict(rows, 1)[0] == "fail"


def test_a_skip_must_be_accounted_for():
    stock_only = Result("mprotect_batch/mech.stock.walk_choice", "skip",
                        "variant for the stock kernel")
    odd = Result("mprotect_batch/bbm.halves_then_whole", "skip", "no idea why")
    rows = committests.judge("x86_64", 40, [OK, stock_only, odd], [])
    assert statuses(rows) == ["pass", "variant", "fail"]


def test_nothing_passed_or_nothing_arrived_fails():
    stock_only = Result("mprotect_batch/mech.stock.walk_choice", "skip",
                        "variant for the stock kernel")
    assert statuses(committests.judge("x86_64", 40, [stock_only], [])) == \
        ["variant", "fail"]
    assert statuses(committests.judge("x86_64", 40, [], [])) == ["fail"]
    rows = committests.judge("x86_64", 40, [OK], [("console", "1 kernel report line")])
    assert statuses(rows) == ["fail", "pass"]
    assert committests.verdict(rows, 1)[0] == "fail"


def test_the_images_booted_are_those_the_each_commit_builds_kept(fake_tree, monkeypatch,
                                                                 tmp_path):
    out, _, _ = fake_tree
    assert build.each_commit("x86_64") == []
    monkeypatch.setattr(committests, "FIRST", 2)
    found = committests.commit_images("x86_64")
    assert [(n, c) for n, c, _ in found] == [(2, "c2")]
    assert found[0][2].exists()
    assert found[0][2].parent == out / build.IMAGES_DIR


def test_a_commit_without_its_image_fails_the_leaf(fake_tree, monkeypatch, tmp_path):
    out, _, _ = fake_tree
    booted = []
    monkeypatch.setattr(committests.image, "build", lambda arch: None)
    monkeypatch.setattr(committests.suites, "test_plan", lambda *a, **k: "plan")

    def boot(arch, flavour, variant, plan, tag, kernel=None, **kw):
        booted.append(kernel)
        return types.SimpleNamespace(text=lambda: "", ready=True)
    monkeypatch.setattr(committests, "boot_and_parse", boot)
    monkeypatch.setattr(committests, "boot_problems", lambda b: [])
    monkeypatch.setattr(committests.results, "parse", lambda text: [OK])
    monkeypatch.setattr(committests, "FIRST", 1)
    assert committests.leaf("x86_64")[0] == "pass" and len(booted) == 2
    for i in (out / build.IMAGES_DIR).iterdir():
        i.unlink()
    # each_commit() builds them again; one build that keeps no image
    monkeypatch.setattr(build, "keep_image", lambda *a: None)
    booted.clear()
    status, detail, _ = committests.leaf("x86_64")
    assert status == "fail" and "no image kept" in detail and booted == []
