# SPDX-License-Identifier: GPL-2.0-only
"""Host tests of the commit-tests leaves (lab/commands/committests.py): a
commit's boot passes only when every result passed or is accounted for,
and a result that was expected and did not arrive fails it."""

import types

from lab.commands import committests
from lab.core import config
from lab.guest import suites
from lab.guest.results import Result
from lab.kernel import build, source

from test_each_commit import VERSIONS, fake_tree, versions  # noqa: F401

OK = Result("mprotect_batch/wprot.whole_folio.write_not_widened", "pass",
            program="mprotect_batch")
# the patch files of fake_tree's two commits
TWO_PATCHES = [config.PATCHES / "0001-a.patch", config.PATCHES / "0002-b.patch"]
LATER = (("mprotect_batch/mech.*", 54, "a shared mapping's blocks (0054)"),
         ("read_batch/*", 45, "every read-side switch (0045)"))


def statuses(rows):
    return [s for s, _, _ in rows]


def test_every_result_passed_is_a_pass():
    rows = committests.judge("x86_64", 40, [OK], [])
    assert statuses(rows) == ["pass"]
    assert committests.verdict(rows, 1, 1)[0] == "pass"


def test_a_failed_result_fails_unless_a_later_patch_brings_it():
    bad = Result("mprotect_batch/mech.on.walk_choice", "fail", "walk 32 != 16",
                 program="mprotect_batch")
    assert "fail" in statuses(committests.judge("x86_64", 40, [OK, bad], [], table=()))
    rows = committests.judge("x86_64", 40, [OK, bad], [], table=LATER)
    assert statuses(rows) == ["pass", "later"]
    assert committests.verdict(rows, 1, 1)[0] == "pass"
    # from the patch that brings it on, it is judged as any other
    rows = committests.judge("x86_64", 54, [OK, bad], [], table=LATER)
    assert "fail" in statuses(rows)
    assert committests.verdict(rows, 1, 1)[0] == "fail"


def test_later_never_excuses_a_program_that_did_not_finish():
    for leaf in ("<did not finish>", "<plan count>", "<exit status>", "<no tests>"):
        r = Result(f"read_batch/{leaf}", "fail", "", program="read_batch")
        assert statuses(committests.judge("arm64", 40, [OK, r], [], table=LATER)) == \
            ["pass", "fail"], leaf


def test_a_skip_must_be_accounted_for_by_the_kernel_the_program_ran_as():
    for_stock = Result("mprotect_batch/mech.stock.private_lookups", "skip",
                       "variant for the stock kernel", program="mprotect_batch")
    for_patched = Result("mprotect_batch/mech.on.private_lookups", "skip",
                         "variant for the patched kernel", program="mprotect_batch")
    odd = Result("mprotect_batch/bbm.halves_then_whole", "skip", "no idea why",
                 program="mprotect_batch")
    rows = committests.judge("x86_64", 40, [OK, for_stock, for_patched, odd], [])
    assert statuses(rows) == ["pass", "variant", "fail", "fail"]
    rows = committests.judge("x86_64", 33, [OK, for_stock, for_patched], [],
                             {"mprotect_batch": "stock"})
    assert statuses(rows) == ["pass", "fail", "variant"]


def test_nothing_passed_or_nothing_arrived_fails():
    for_stock = Result("mprotect_batch/mech.stock.private_lookups", "skip",
                       "variant for the stock kernel", program="mprotect_batch")
    assert statuses(committests.judge("x86_64", 40, [for_stock], [])) == \
        ["variant", "fail"]
    assert statuses(committests.judge("x86_64", 40, [], [])) == ["fail"]
    rows = committests.judge("x86_64", 40, [OK], [("console", "1 kernel report line")])
    assert statuses(rows) == ["fail", "pass"]
    assert committests.verdict(rows, 1, 1)[0] == "fail"


def test_a_leaf_that_booted_fewer_commits_than_expected_fails():
    assert committests.verdict([("pass", "a", "")], 1, 2)[0] == "fail"
    assert committests.verdict([], 0, 0)[0] == "fail"


def test_the_series_switches_are_found_where_they_are_added():
    added = committests.switch_patches()
    assert added["mprotect_batch"] == 35
    assert (added["contpte_early_exit"], added["mincore_batch"], added["mbind_batch"]) == \
        (43, 44, 45)
    assert added["pt_reclaim"] == 1


def test_a_program_runs_as_stock_until_its_first_switch_is_in_the_series():
    added = committests.switch_patches()
    pf = committests.program_flavour
    assert pf("x86_64", "mprotect_batch", 34, added) == "stock"
    assert pf("x86_64", "mprotect_batch", 35, added) == "patched"
    # x86_64 shows mbind_batch only of the read side's switches
    assert pf("x86_64", "read_batch", 44, added) == "stock"
    assert pf("x86_64", "read_batch", 45, added) == "patched"
    assert pf("arm64", "read_batch", 42, added) == "stock"
    assert pf("arm64", "read_batch", 43, added) == "patched"


def test_the_plan_runs_a_stock_program_as_stock():
    plan = suites.test_plan("arm64", own=True, upstream=False,
                            only=set(committests.PROGRAMS), probes=False)
    assert suites.plan_programs(plan) == ["mprotect_batch", "read_batch"]
    added = committests.switch_patches()
    flavours = {p: committests.program_flavour("arm64", p, 40, added)
                for p in committests.PROGRAMS}
    text = committests.commit_plan(plan, flavours)
    assert suites.plan_programs(text) == ["mprotect_batch", "read_batch"]
    lines = text.splitlines()
    i = next(n for n, l in enumerate(lines) if l.startswith("lab_run read_batch "))
    assert (lines[i - 1], lines[i + 1]) == ("export LAB_FLAVOUR=stock",
                                            "export LAB_FLAVOUR=patched")
    j = next(n for n, l in enumerate(lines) if l.startswith("lab_run mprotect_batch "))
    assert "LAB_FLAVOUR" not in lines[j - 1]


CONSOLE = """# lab: start read_batch: /lab/tests/read_batch -T x
    #  RUN           mech.on.contpte_reads ...
    #            OK  mech.on.contpte_reads
    ok 1 mech.on.contpte_reads
    #  RUN           mech.on.mincore_visits ...
    # lab_test.h:198:mincore_visits:Expected 0 (0) != has_sw (0)
    # lab_test.h:199:mincore_visits:patched kernel without /sys/kernel/mm/foliobatch/mincore_batch
    # mincore_visits: Test terminated by assertion
    #          FAIL  mech.on.mincore_visits
    not ok 2 mech.on.mincore_visits
"""


def test_a_test_whose_switch_comes_later_is_put_off_to_that_patch():
    absent = committests.absent_switches(CONSOLE)
    assert absent == {"read_batch/mech.on.mincore_visits": "mincore_batch"}
    ok = Result("read_batch/mech.on.contpte_reads", "pass", program="read_batch")
    bad = Result("read_batch/mech.on.mincore_visits", "fail", program="read_batch")
    added = {"mincore_batch": 44}
    assert statuses(committests.judge("arm64", 43, [ok, bad], [], absent=absent,
                                      added=added)) == ["pass", "later"]
    # the switch is in the series from 0044: missing there, it fails
    assert statuses(committests.judge("arm64", 44, [ok, bad], [], absent=absent,
                                      added=added)) == ["pass", "fail"]


def test_the_images_booted_are_those_the_each_commit_builds_kept(fake_tree, monkeypatch):
    out, _, _ = fake_tree
    assert build.each_commit("x86_64") == []
    monkeypatch.setattr(source, "series_files", lambda: TWO_PATCHES)
    monkeypatch.setattr(committests, "FIRST", 2)
    found = committests.commit_images("x86_64")
    assert [(n, c) for n, c, _ in found] == [(2, "c2")]
    assert found[0][2].exists()
    assert found[0][2].parent == out / build.IMAGES_DIR
    monkeypatch.setattr(source, "series_files", lambda: [config.PATCHES / "0001-a.patch"])
    try:
        committests.commit_images("x86_64")
    except committests.LabError as e:
        assert "2 commits" in str(e)
    else:
        raise AssertionError("a tree of more commits than patches was taken")


def test_a_commit_without_its_image_fails_the_leaf(fake_tree, monkeypatch):
    out, _, _ = fake_tree
    booted = []
    monkeypatch.setattr(committests.image, "build", lambda arch: None)
    monkeypatch.setattr(committests.suites, "test_plan", lambda *a, **k: "plan")
    monkeypatch.setattr(source, "series_files", lambda: TWO_PATCHES)
    monkeypatch.setattr(committests, "switch_patches", lambda: {
        s: 1 for ss in committests.PROGRAMS.values() for s in ss})

    def boot(arch, flavour, variant, plan, tag, kernel=None, **kw):
        booted.append(kernel)
        return types.SimpleNamespace(text=lambda: "", ready=True, console="c")
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


def test_the_absent_switch_excuses_only_a_failure_of_that_test_for_its_own_switch():
    absent = committests.absent_switches(CONSOLE)
    added = {"mincore_batch": 44, "mincore_typo": 44}
    skipped = Result("read_batch/mech.on.mincore_visits", "skip", "x", program="read_batch")
    other = Result("read_batch/mech.on.contpte_reads", "fail", program="read_batch")
    got = committests.judge("arm64", 43, [OK, skipped, other], [], absent=absent,
                            added=added, table=())
    assert statuses(got) == ["pass", "fail", "fail"]
    # a switch no patch adds, or another program's, excuses nothing
    bad = Result("read_batch/mech.on.mincore_visits", "fail", program="read_batch")
    for sw in ("mincore_typo", "mprotect_batch"):
        got = committests.judge("arm64", 43, [OK, bad], [], table=(),
                                absent={bad.name: sw}, added={sw: 44})
        assert statuses(got) == ["pass", "fail"], sw


def test_a_program_whose_put_off_tests_hide_a_crash_fails():
    bad = Result("read_batch/mech.on.mincore_visits", "fail", program="read_batch")
    absent = committests.absent_switches(CONSOLE)
    args = dict(absent=absent, added={"mincore_batch": 44}, table=())
    assert statuses(committests.judge("arm64", 43, [OK, bad], [], exits={
        "read_batch": "exit 1"}, **args)) == ["pass", "later"]
    got = committests.judge("arm64", 43, [OK, bad], [], exits={"read_batch": "exit 139"},
                            **args)
    assert statuses(got) == ["pass", "later", "fail"]
    assert got[-1][1] == "arm64/commit-0043/read_batch/<exit status>"
    assert committests.program_exits("not ok 2 read_batch # exit 139\nok 1 x\n") == \
        {"read_batch": "exit 139"}


def test_a_switch_no_patch_adds_is_an_error():
    try:
        committests.program_flavour("x86_64", "mprotect_batch", 40, {})
    except committests.LabError as e:
        assert "mprotect_batch" in str(e)
    else:
        raise AssertionError("a program whose switch no patch adds was given a flavour")


def test_x86_64_runs_mprotect_batch_as_stock_before_0035():
    plan = suites.test_plan("x86_64", own=True, upstream=False,
                            only=set(committests.PROGRAMS), probes=False)
    added = committests.switch_patches()
    flavours = {p: committests.program_flavour("x86_64", p, 33, added)
                for p in committests.PROGRAMS}
    assert flavours == {"mprotect_batch": "stock", "read_batch": "stock"}
    lines = committests.commit_plan(plan, flavours).splitlines()
    runs = [n for n, l in enumerate(lines) if l.startswith("lab_run ")]
    assert all(lines[n - 1] == "export LAB_FLAVOUR=stock" and
               lines[n + 1] == "export LAB_FLAVOUR=patched" for n in runs) and len(runs) == 2


def test_later_names_programs_and_patches_of_the_series():
    """A LATER entry must name a booted program and a patch after FIRST
    that the series has, or it excuses a test forever."""
    last = max(committests.patch_number(f) for f in committests.source.series_files())
    for glob, first, why in committests.LATER:
        assert glob.split("/")[0] in committests.PROGRAMS, glob
        assert committests.FIRST < first <= last and why, glob


def test_the_stored_verdict_covers_the_judge_the_plan_and_the_programs(monkeypatch):
    """A commit-tests verdict is stored (lab check's stamp): it must not be
    reused after a change to what judged it, what ran, or how it booted."""
    seen = []
    monkeypatch.setattr(committests.debianboot.build, "code_hash",
                        lambda files: seen.extend(files) or "h")
    monkeypatch.setattr(committests.debianboot.build, "tool_version", lambda cmd: "q")
    committests.stamp_inputs("arm64")
    for rel in ("lab/commands/committests.py", "lab/commands/test.py", "lab/core/config.py",
                "lab/kernel/source.py", "lab/guest/skips.tsv", "lab/guest/results.py",
                "lab/guest/testboot.py", "lab/guest/suites.py", "guest/lib.sh",
                "guest/include/lab_test.h", "guest/tests/mprotect_batch.c",
                "guest/tests/read_batch.c"):
        assert rel in seen, rel


def test_a_variant_for_the_other_kernel_is_a_variant_before_any_later_patch():
    """A fixture variant for the stock kernel skips on patched whatever the
    commit: LATER must not claim it."""
    r = Result("mprotect_batch/mech.stock.walk_choice", "skip",
               "variant for the stock kernel", program="mprotect_batch")
    assert statuses(committests.judge("x86_64", 35, [OK, r], [])) == ["pass", "variant"]
