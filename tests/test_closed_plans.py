# SPDX-License-Identifier: GPL-2.0-only
"""Test plans are closed: every test name of the lab's tables (suites.py)
and skip declarations (skips.tsv) is a test its program lists, and a
program a boot runs that reports no test fails.

The kselftest harness says nothing of a name that is no test: '-t NAME'
runs nothing (plan 1..0, exit 0) and '-T NAME' leaves nothing out.  The
host reads each own program's list from its source (lab.guest.harness),
as its -l would print it."""

import pytest

from lab.commands import test as testcmd
from lab.core.tally import Tally
from lab.guest import harness, results, run, skips, suites, verdicts

SOURCE = """\
#include "lab_test.h"
FIXTURE(mech) { int x; };
LAB_KERNEL_VARIANTS(mech);
FIXTURE(data) { int y; };
FIXTURE_VARIANT(data) { int kb; };
FIXTURE_VARIANT_ADD(data, folio_64k) { .kb = 64, };
TEST(boots) { }
TEST_SIGNAL(dies, SIGSEGV) { }
TEST_F(mech, reads) { }
TEST_F_TIMEOUT(data, intact, 300) { }
/* TEST(commented_out) { } */
// TEST_F(mech, also_commented_out) { }
static const char *s = "/* not a comment";
TEST_F_SIGNAL(mech, traps, SIGBUS) { }
TEST_HARNESS_MAIN
"""


def test_a_program_list_read_from_its_source(tmp_path):
    """TEST, TEST_SIGNAL, TEST_F, TEST_F_TIMEOUT and TEST_F_SIGNAL are tests,
    FIXTURE_VARIANT_ADD and the header's LAB_KERNEL_VARIANTS() variants; a
    commented-out test is none."""
    src = tmp_path / "prog.c"
    src.write_text(SOURCE)
    decls = harness.declarations("prog", src)
    assert {n for k, _, n in decls if k == "test"} == {"boots", "dies", "reads", "intact",
                                                        "traps"}
    assert [(f, n) for k, f, n in decls if k == "variant"] == [
        ("mech", "on"), ("mech", "off"), ("mech", "stock"), ("data", "folio_64k")]
    # a test under #ifdef would be listed on one arch only
    src.write_text(SOURCE.replace("TEST(boots) { }", "#ifdef __aarch64__\nTEST(boots) { }\n"
                                  "#endif"))
    with pytest.raises(ValueError, match="prog.c:8: TEST"):
        harness.declarations("prog", src)


def test_the_own_programs_list_their_cases_as_their_results_name_them():
    assert "global.boot_release" in harness.cases("sanity")
    assert "mech.on.private_lookups" in harness.cases("mprotect_batch")
    assert "mte.tags_on_every_pte" in harness.cases("mprotect_batch")
    assert {"mbind_move", "fold_race"} <= harness.tests("read_batch")
    assert len(harness.cases("reclaim_batch")) == 8 * len(harness.tests("reclaim_batch"))


def test_every_name_of_the_test_tables_is_a_test_its_program_lists():
    names = list(harness.table_names())
    assert {t.split("[")[0] for t, _, _ in names} == {
        "ARCH_LEFT_OUT", "BOOT_LEFT_OUT", "NUMA_TESTS", "RACE_TESTS", "NOSPLIT_TESTS"}
    assert len(names) >= 30
    assert harness.unlisted() == []


# One name planted in each table: a misspelt test, another program's test,
# a program that is no own one, an upstream program that does not exist.
@pytest.mark.parametrize("table, planted, named", [
    ("NUMA_TESTS", {"read_batch": ("mbind_moves",)}, "NUMA_TESTS: read_batch/mbind_moves"),
    ("RACE_TESTS", {"pt_reclaim": ("race", "fold_race")}, "RACE_TESTS: pt_reclaim/fold_race"),
    ("NOSPLIT_TESTS", {"pt_reclaim": ("collapse_races",)},
     "NOSPLIT_TESTS: pt_reclaim/collapse_races"),
    ("NOSPLIT_TESTS", {"khugepaged": ("collapse",)}, "NOSPLIT_TESTS: khugepaged/collapse"),
    ("ARCH_LEFT_OUT", {"arm64": {"mremap_batch": [(("soft_dirty",), "why", "skip")]}},
     "ARCH_LEFT_OUT[arm64]: mremap_batch/soft_dirty"),
    ("BOOT_LEFT_OUT", {"tests": {"read_batch": [(("mbind_move", "mbind"), "why", "skip")]}},
     "BOOT_LEFT_OUT[tests]: read_batch/mbind"),
    ("OWN_TIMEOUTS", {"reclaim_batches": 2400}, "OWN_TIMEOUTS: reclaim_batches"),
    ("NO_RANGE_TLBI", {"arm64": ("cortex-a72", ("reclaim",))}, "NO_RANGE_TLBI[arm64]: reclaim"),
    ("NUMA_UPSTREAM", {"mkdirt": None}, "NUMA_UPSTREAM: mkdirt"),
    ("NOSPLIT_UPSTREAM", {"pt_reclaim": None}, "NOSPLIT_UPSTREAM: pt_reclaim"),
])
def test_a_name_planted_in_a_table_is_found(monkeypatch, table, planted, named):
    monkeypatch.setattr(suites, table, planted)
    bad = harness.unlisted()
    assert len(bad) == 1 and bad[0].startswith(named), bad


def test_every_skip_declaration_can_match_a_real_test():
    assert len(skips.load()) >= 5
    assert harness.undeclarable() == []


@pytest.mark.parametrize("row, why", [
    ("*/mprotect_batch/*tags_on_every_ptes", "no case of mprotect_batch"),
    ("arm64/default/*/mprotect_batch/mech.on.uffd_wp", "no case of mprotect_batch"),
    ("*/mkdirt/*", "mkdirt is no test program"),
    ("*/*/*", "* is no test program"),
    ("*/cow/Basic COW", "upstream leaf named outright"),
])
def test_a_skip_declaration_planted_for_no_real_test_is_found(tmp_path, monkeypatch,
                                                              row, why):
    planted = tmp_path / "skips.tsv"
    planted.write_text(skips.DECLARED.read_text() + f"{row}\tsome message\tsome reason\n")
    monkeypatch.setattr(skips, "DECLARED", planted)
    bad = harness.undeclarable()
    assert len(bad) == 1 and bad[0].startswith(row + ":") and why in bad[0], bad


# What the kselftest harness prints when '-t NAME' names no test of it.
NO_TEST = ("    TAP version 13\n    1..0\n    # Starting 0 tests from 0 test cases.\n"
           "    # PASSED: 0 / 0 tests passed.\n"
           "    # Totals: pass:0 fail:0 xfail:0 xpass:0 skip:0 error:0\n")


@pytest.mark.parametrize("output, own_line", [
    (NO_TEST, "ok 1 read_batch"),                   # -t mbind_moves
    ("", "ok 1 read_batch"),                        # nothing at all, exit 0
    ("", "ok 1 read_batch # SKIP exit 4"),          # -l: the list, exit 4
])
def test_an_own_program_that_ran_no_test_fails(output, own_line):
    text = f"# lab: start read_batch: /lab/tests/read_batch -t mbind_moves\n{output}{own_line}\n"
    assert [(r.name, r.status) for r in results.parse(text)] == [
        ("read_batch/<no tests>", "fail")]


def test_an_upstream_program_that_planned_no_test_fails_on_either_kernel():
    """kselftest.h's ksft_set_plan(0): a plan of nothing is the plan's
    failure, not an upstream failure that stock excuses."""
    text = ("# lab: start mkdirty: /lab/selftests/mm/mkdirty\n    TAP version 13\n"
            "    1..0\n    # Totals: pass:0 fail:0 xfail:0 xpass:0 skip:0 error:0\n"
            "ok 1 mkdirty\n")
    leaves = results.parse(text)
    assert [(r.name, r.status) for r in leaves] == [("mkdirty/<no tests>", "fail")]
    rows = verdicts.judge("x86_64", "default", {"stock": leaves, "patched": leaves})
    assert [r[0] for r in rows] == ["fail", "fail"]


@pytest.mark.parametrize("text, leaf", [
    # khugepaged prints no KTAP: its own lines and its exit status
    ("# lab: start khugepaged: /lab/selftests/mm/khugepaged\n"
     "    Run test: collapse_full (khugepaged:anon) \x1b[32mOK\x1b[0m\nok 1 khugepaged\n",
     ("khugepaged", "pass")),
    # a program that skips as a whole (ksft_exit_skip() before its plan)
    ("# lab: start soft-dirty: /lab/selftests/mm/soft-dirty\n"
     "    1..0 # SKIP no soft-dirty\nok 1 soft-dirty # SKIP exit 4\n",
     ("soft-dirty", "skip")),
    # a command of a plan that is no test program (commands/here.py)
    ("# lab: start run-here: sh /lab/run-here.sh -o /tmp/here\nok 1 run-here\n",
     ("run-here", "pass")),
    # an own program that failed before it printed a result is its own leaf
    ("# lab: start sanity: /lab/tests/sanity\nnot ok 1 sanity # exit 1\n",
     ("sanity", "fail")),
])
def test_programs_without_subtests_by_design_keep_their_own_line(text, leaf):
    assert [(r.name, r.status) for r in results.parse(text)] == [leaf]


def test_an_extra_boot_whose_test_name_runs_nothing_fails(tmp_path):
    """The numa boot runs 'read_batch -t mbind_move': were the test renamed,
    the boot would run nothing and, before, pass."""
    c = tmp_path / "console.log"
    c.write_text("LAB-READY: 6.12\n# lab: start read_batch: /lab/tests/read_batch "
                 f"-t mbind_move\n{NO_TEST}ok 1 read_batch\nLAB-EXIT: 0\n")
    b = run.Boot(c, 0, True, False, 1.0, plan="lab_run read_batch 600 /lab/tests/read_batch "
                 "-t mbind_move\n")
    tally = Tally()
    testcmd.tally_boot(tally, "x86_64/default/patched-numa", b)
    assert [r[:2] for r in tally.rows] == [
        ("fail", "x86_64/default/patched-numa/read_batch/<no tests>")]
    assert tally.finish(tally.save("test")) == 1
