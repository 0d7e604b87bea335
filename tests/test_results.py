"""Host unit tests of the KTAP parser and the console scan."""

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
