# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of the KTAP parser and the console scan."""
import pytest

from lab.guest import results

CONSOLE = """\
[    0.000000] Linux version 6.12.117-patched
LAB-READY: 6.12.117-patched 2 cpus MemTotal: 2000000 kB
KTAP version 1
1..3
# lab: start sanity: /lab/tests/sanity
    TAP version 13
    1..2
    # Starting 2 tests from 1 test cases.
    ok 1 global.boot_release
    not ok 2 global.vmpte_probe
ok 1 sanity # exit 1
# lab: start cow: /lab/selftests/mm/cow
    ok 1 Basic COW
    ok 2 Basic COW # SKIP no hugetlb
not ok 2 cow # exit 1
# lab: start mkdirty: /lab/selftests/mm/mkdirty
ok 3 mkdirty
LAB-EXIT: 1
"""


def by_name(rs):
    return {r.name: r for r in rs}


def test_leaves_are_subtests_or_programs():
    rs = by_name(results.parse(CONSOLE))
    assert rs["sanity/global.boot_release"].status == "pass"
    assert rs["sanity/global.vmpte_probe"].status == "fail"
    assert rs["mkdirty"].status == "pass"
    assert "sanity" not in rs


def test_repeated_names_are_numbered_and_skips_kept():
    rs = by_name(results.parse(CONSOLE))
    assert rs["cow/Basic COW"].status == "pass"
    assert rs["cow/Basic COW #2"].status == "skip"


def test_failed_exit_without_failed_subtest_is_a_failure():
    rs = by_name(results.parse(CONSOLE))
    assert rs["cow/<exit status>"].status == "fail"


def test_program_that_never_finished_fails():
    text = "# lab: start sanity: x\n    ok 1 global.a\n"
    rs = by_name(results.parse(text))
    assert rs["sanity/global.a"].status == "pass"
    assert rs["sanity/<did not finish>"].status == "fail"


def test_skipped_program_without_subtests():
    rs = results.parse("# lab: start t: x\nok 1 t # SKIP exit 4\n")
    assert [(r.name, r.status) for r in rs] == [("t", "skip")]


def test_kernel_reports_only_from_kernel_lines():
    text = (
        "[    1.000000] foliobatch: ignoring unknown switch 'x'\n"
        "WARNING: this line comes from a program, not the kernel\n"
        "[    2.000000] WARNING: CPU: 1 PID: 7 at mm/memory.c:100 zap+0x1/0x2\n"
        "[    3.000000] BUG: Bad rss-counter state mm:0000 type:MM_ANONPAGES val:1\n"
        "[    4.000000] BUG: KASAN: slab-use-after-free in foo\n"
        "[    5.000000] ======================================================\n"
        "[    5.000001] WARNING: possible circular locking dependency detected\n"
    )
    found = results.kernel_reports(text)
    assert len(found) == 4
    assert "ignoring unknown switch" not in " ".join(found)


def test_durations_of_the_programs_a_plan_ran():
    text = "\n".join(["# lab: start cow: /lab/selftests/mm/cow",
                      "    # lab: inner took 9.0 s",    # a program's own output
                      "# lab: cow took 12.5 s", "ok 1 cow",
                      "# lab: start cow: /lab/selftests/mm/cow",
                      "# lab: cow took 1.5 s", "ok 2 cow",
                      "# lab: split_huge_page_test took 120.0 s"])
    assert results.durations(text) == {"cow": 14.0, "split_huge_page_test": 120.0}


def test_a_result_line_cut_by_kernel_output_keeps_its_result():
    """A kernel message landing in the middle of a program's result line
    must not drop the result: the line is joined again."""
    text = ("# lab: start reclaim_batch: /lab/tests/reclaim_batch\n"
            "    not ok 1 batch.lost_write\n"
            "not ok 1 reclaim_bat[  812.300000] clocksource: Switched to clocksource tsc\n"
            "ch # exit 1\n"
            "# lab: start sanity: /lab/tests/sanity\n"
            "    ok 1 global.boot_release\n"
            "ok 2 sanity\n")
    leaves = {r.name: r.status for r in results.parse(text)}
    assert leaves == {"reclaim_batch/batch.lost_write": "fail",
                      "sanity/global.boot_release": "pass"}
    assert results.program_results(text) == {"reclaim_batch": "fail", "sanity": "pass"}
    assert results.kernel_reports(text) == []


def test_a_program_cut_off_by_the_next_keeps_its_failures():
    """A program whose own result line never came, followed by the next
    program's start: its subtests, failures included, stay leaves, and the
    missing line is a failed '<did not finish>' leaf."""
    text = ("# lab: start reclaim_batch: /lab/tests/reclaim_batch\n"
            "    not ok 1 batch.lost_write\n"
            "    ok 2 batch.ok\n"
            "# lab: start sanity: /lab/tests/sanity\n"
            "    ok 1 global.boot_release\n"
            "ok 2 sanity\n")
    leaves = {r.name: r.status for r in results.parse(text)}
    assert leaves["reclaim_batch/batch.lost_write"] == "fail"
    assert leaves["reclaim_batch/batch.ok"] == "pass"
    assert leaves["reclaim_batch/<did not finish>"] == "fail"
    assert leaves["sanity/global.boot_release"] == "pass"


@pytest.mark.parametrize("line", [
    "rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: { 1-... } 21 jiffies s: 1",
    "INFO: rcu_tasks detected stalls on tasks:",
    "rcu_tasks_trace detected stalls on tasks:",
    "Unused swap offset entry 0000abcd",
    "Unused swap file entry 0000abcd",
    "list_add corruption. next->prev should be prev (ffff0000), but was 0000.",
    "list_del corruption, ffff00000a0b0c0d->next is LIST_POISON1 (dead000000000100)",
    "refcount_t: underflow; use-after-free.",
    "page dumped because: VM_BUG_ON_FOLIO(!folio_test_locked(folio))",
    "KFENCE: use-after-free read in foo+0x10/0x20",
])
def test_each_kernel_report_form_fails_the_boot(line):
    assert results.kernel_reports(f"[  101.123456] {line}\n") != []


def test_only_a_cut_result_line_is_joined():
    """A program line that merely holds a timestamp-like '[1.5] ' is not a
    cut result line: the next line stays its own."""
    text = ("# lab: start foo: /lab/tests/foo\n"
            "    ok 1 global.a\n"
            "    # took [1.5] s\n"
            "ok 1 foo\n")
    assert {r.name: r.status for r in results.parse(text)} == {"foo/global.a": "pass"}


def test_a_cut_line_at_the_end_of_the_console_is_no_result():
    """The console ends in the middle of a result line (the guest died):
    the fragment is no result, and the program did not finish."""
    text = ("# lab: start foo: /lab/tests/foo\n"
            "ok 1 fo[    5.000000] Kernel panic - not syncing: x\n")
    leaves = {r.name: r.status for r in results.parse(text)}
    assert leaves == {"foo/<did not finish>": "fail"}
    assert results.kernel_reports(text)


def test_fewer_results_than_the_ktap_plan_fail_the_program():
    """A program whose KTAP plan promised 3 results and that printed 2 (a
    subtest that died without a result line, a harness that lost one)
    ends ok, with every printed leaf passing: the count is a failed leaf."""
    text = ("# lab: start t: x\n    TAP version 13\n    1..3\n"
            "    ok 1 a\n    ok 2 b\nok 1 t\n")
    rs = by_name(results.parse(text))
    assert rs["t/<plan count>"].status == "fail"
    assert rs["t/<plan count>"].detail == "KTAP plan 1..3, 2 results"
    assert rs["t/a"].status == rs["t/b"].status == "pass"


def test_a_plan_kept_is_no_leaf_and_a_program_without_plan_is_not_counted():
    text = ("# lab: start t: x\n    1..2\n    ok 1 a\n    ok 2 b # SKIP no\nok 1 t\n"
            "# lab: start u: x\n    ok 1 a\nok 2 u\n")
    assert sorted(r.name for r in results.parse(text)) == ["t/a", "t/b", "u/a"]


def test_more_results_than_the_plan_fail_too():
    text = "# lab: start t: x\n    1..1\n    ok 1 a\n    ok 2 b\nok 1 t\n"
    rs = by_name(results.parse(text))
    assert rs["t/<plan count>"].status == "fail"


def test_xfail_and_todo_count_as_expected_failures_not_as_passes():
    text = ("# lab: start cow: x\n    1..3\n    ok 1 # XFAIL Leak from parent into child\n"
            "    not ok 2 racy case # TODO not fixed upstream\n    ok 3 Basic COW\nok 1 cow\n")
    rs = by_name(results.parse(text))
    leak = rs["cow/# XFAIL Leak from parent into child"]   # no [RUN] line
    assert leak.status == "xfail" and leak.detail == "XFAIL: Leak from parent into child"
    assert rs["cow/racy case"].status == "xfail"
    assert rs["cow/Basic COW"].status == "pass"


def test_an_expected_failure_is_one_on_either_kernel():
    """cow's vmsplice() leak of hugetlb pages is an XFAIL that comes and
    goes on stock as on patched: an XFAIL on patched where stock passed is
    listed as what it is, not a regression, and does not shift the names
    of the leaves after it (a case's [RUN] line names its leaf)."""
    from lab.commands import test as testcmd
    stock = ("# lab: start cow: x\n    # [RUN] vmsplice() with hugetlb (64 kB)\n"
             "    ok 1 No leak\n    # [RUN] Basic COW\n    ok 2 No leak\nok 1 cow\n")
    patched = ("# lab: start cow: x\n    # [RUN] vmsplice() with hugetlb (64 kB)\n"
               "    ok 1 # XFAIL Leak\n    # [RUN] Basic COW\n    ok 2 No leak\nok 1 cow\n")
    rows = testcmd.judge("x86_64", "default", {"stock": results.parse(stock),
                                               "patched": results.parse(patched)})
    got = {r[1]: r[0] for r in rows}
    assert got["x86_64/default/patched/cow/vmsplice() with hugetlb (64 kB)"] == "xfail"
    assert got["x86_64/default/patched/cow/Basic COW"] == "pass"


def test_a_skip_without_a_description_is_a_skip_not_a_pass():
    """kselftest.h prints 'ok N # SKIP reason' with no test name (mkdirty's
    'mbind() failed' on one NUMA node): that is a skip."""
    rs = results.parse("# lab: start mkdirty: x\n    1..1\n    ok 4 # SKIP mbind() failed\n"
                       "ok 1 mkdirty\n")
    assert [(r.name, r.status, r.detail) for r in rs] == [
        ("mkdirty/# SKIP mbind() failed", "skip", "mbind() failed")]


def test_bench_lines_have_one_parser():
    """guest/results.py owns the console's BENCH lines; the commands use it."""
    assert results.bench_record('BENCH {"workload": "w", "rep": 1}') == {"workload": "w",
                                                                       "rep": 1}
    assert results.bench_record('BENCH-HIST {"hist": []}', "BENCH-HIST") == {"hist": []}
    assert results.bench_record('BENCH-HIST {"hist": []}') is None
    assert results.bench_record("BENCH-START w on 1") is None
    assert results.bench_start("x BENCH-START w on -1") == ("w", "on", "-1")
    with pytest.raises(ValueError):
        results.bench_record("BENCH {not json")
    from lab.core import config
    for py in (config.REPO / "lab" / "commands").glob("*.py"):
        assert 'line[len("BENCH ' not in py.read_text() and "line[6:]" not in \
            py.read_text(), py
