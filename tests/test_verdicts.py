# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of the verdict path of 'lab test' (console -> rows ->
exit status): each is a way a real failure could end as "0 failed", with a
failure injected where it would hide."""

import json
import subprocess
import sys

import pytest

from lab.commands import harden, test as testcmd
from lab.core import config
from lab.core.tally import Tally
from lab.guest import image, results, run, suites
from lab.guest.testboot import boot_problems
from lab.kernel import build

from test_cache import PLAN, fake_boot, inputs, stock_inputs  # noqa: F401 (fixture)
from test_testcmd import quiet  # noqa: F401 (fixture)


def fails(tally):
    return [r for r in tally.rows if r[0] == "fail"]


# 1. an arch thread that dies of anything still leaves a failed row

@pytest.mark.parametrize("jobs", [1, 2])
def test_any_exception_in_an_arch_is_a_failed_row_of_that_arch(quiet, monkeypatch, jobs):
    def fake(tally, arch_name, *args):
        if arch_name == "arm64":
            raise KeyError("patched")
        tally.add("pass", f"{arch_name}/x")

    monkeypatch.setattr(testcmd, "test_arch", fake)
    tally = Tally()
    testcmd.main(tally, ["x86_64", "arm64"], pytest=False, jobs=jobs)
    assert [r[1] for r in fails(tally)] == ["arm64/default/lab"]
    assert "KeyError" in fails(tally)[0][2]
    assert tally.finish(tally.save("test")) == 1


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("jobs", [1, 2])
def test_an_arch_that_ends_without_a_word_fails(quiet, monkeypatch, jobs, tmp_path):
    # SystemExit (config.arch() raises it) is not an Exception
    def fake(tally, arch_name, *args):
        if arch_name == "arm64":
            raise SystemExit("lab: unknown arch")
        tally.add("pass", f"{arch_name}/x")

    monkeypatch.setattr(testcmd, "test_arch", fake)
    monkeypatch.setattr(config, "WORK", tmp_path)
    tally = Tally()
    if jobs == 1:
        with pytest.raises(SystemExit):
            testcmd.main(tally, ["x86_64", "arm64"], pytest=False, jobs=jobs)
        return      # in the main thread it ends the run, non-zero
    testcmd.main(tally, ["x86_64", "arm64"], pytest=False, jobs=jobs)
    assert [r[1] for r in fails(tally)] == ["arm64/default/lab"]
    assert "without reporting" in fails(tally)[0][2]


# 2. retries: a kernel report in a retry fails; only PASS clears a leaf

REGRESS = [("regress", "x86_64/default/patched/cow/Basic COW", "fails on patched", "cow")]


def retry_with(monkeypatch, tmp_path, text, stock_text=None, main=()):
    """retry_regressions() of REGRESS with re-run boots that print text on
    patched and stock_text (default: text) on stock; main: the patched
    main boot's leaves."""
    def boot_and_parse(*a, **kw):
        shown = stock_text if a[1] == "stock" and stock_text is not None else text
        return fake_boot(tmp_path, shown, name=f"{a[1]}-{a[4]}")
    monkeypatch.setattr(testcmd, "boot_and_parse", boot_and_parse)
    return testcmd.retry_regressions("x86_64", "default", REGRESS, main)


COW_FAILS = ("LAB-READY: 6.12\n# lab: start cow: x\n    # ERROR: wrong data\n"
             "    not ok 1 Basic COW\nnot ok 1 cow # exit 1\nLAB-EXIT: 0\n")
COW_PASSES = "LAB-READY: 6.12\n# lab: start cow: x\n    ok 1 Basic COW\nok 1 cow\nLAB-EXIT: 0\n"
MAIN_COW = results.parse(COW_FAILS)


def test_a_warning_in_a_retry_boot_is_a_failure(monkeypatch, tmp_path):
    text = ("LAB-READY: 6.12\n# lab: start cow: x\n    ok 1 Basic COW\nok 1 cow\n"
            "[   12.000000] WARNING: CPU: 1 PID: 7 at mm/rmap.c:1 x+0x1/0x2\nLAB-EXIT: 0\n")
    rows = retry_with(monkeypatch, tmp_path, text)
    statuses = {r[1]: r[0] for r in rows}
    assert statuses["x86_64/default/patched/cow/Basic COW"] == "fail"
    assert statuses["x86_64/default/patched-retry1/console"] == "fail"
    assert statuses["x86_64/default/patched-retry2/console"] == "fail"
    assert statuses["x86_64/default/stock-retry1/console"] == "fail"


def test_a_leaf_that_comes_back_skipped_stays_failed(monkeypatch, tmp_path):
    text = ("LAB-READY: 6.12\n# lab: start cow: x\n    ok 1 Basic COW # SKIP no THP\n"
            "ok 1 cow\nLAB-EXIT: 0\n")
    [row] = retry_with(monkeypatch, tmp_path, text)
    assert row[0] == "fail"


def test_a_leaf_that_passes_when_re_run_with_stock_passing_is_a_failure(monkeypatch, tmp_path):
    """fail (main), then pass, pass on patched, stock passing every time:
    nothing says stock shares the flake, so it counts."""
    [row] = retry_with(monkeypatch, tmp_path, COW_PASSES, main=MAIN_COW)
    assert row[0] == "fail" and "stock did not in 2 re-runs" in row[2]


def test_a_leaf_that_stock_fails_the_same_way_when_re_run_is_flaky(monkeypatch, tmp_path):
    [row] = retry_with(monkeypatch, tmp_path, COW_PASSES, stock_text=COW_FAILS,
                       main=MAIN_COW)
    assert row[0] == "flaky" and "stock did the same in 2 of 2" in row[2]
    # stock failing it another way excuses nothing
    other = COW_FAILS.replace("wrong data", "lost page")
    [row] = retry_with(monkeypatch, tmp_path, COW_PASSES, stock_text=other, main=MAIN_COW)
    assert row[0] == "fail"


def test_a_leaf_that_passed_and_fails_in_a_re_run_fails(monkeypatch, tmp_path):
    """A re-run judges every leaf it ran, not only the regressed ones."""
    text = ("LAB-READY: 6.12\n# lab: start cow: x\n    ok 1 Basic COW\n"
            "    # ERROR: x\n    not ok 2 Other COW\nnot ok 1 cow # exit 1\nLAB-EXIT: 0\n")
    main = results.parse(COW_FAILS.replace("not ok 1 cow # exit 1", "not ok 1 cow")
                         + "") + [results.Result("cow/Other COW", "pass", "", "cow")]
    rows = {r[1]: r for r in retry_with(monkeypatch, tmp_path, text, main=main)}
    assert rows["x86_64/default/patched-retry1/cow/Other COW"][0] == "fail"


# A program that timed out: its own result is a made-up leaf, never a PASS

TIMED_OUT = [("regress", "x86_64/default/patched/split_huge_page_test/<exit status>",
              "fails on patched; no stock result", "split_huge_page_test"),
             ("regress", "x86_64/default/patched/split_huge_page_test/order 0",
              "passes on stock, missing on patched", "split_huge_page_test")]


def retry_timed_out(monkeypatch, tmp_path, top):
    text = ("LAB-READY: 6.12\n# lab: start split_huge_page_test: x\n    ok 1 order 1\n"
            f"    ok 2 order 0\n{top}\nLAB-EXIT: 0\n")
    monkeypatch.setattr(testcmd, "boot_and_parse",
                        lambda *a, **kw: fake_boot(tmp_path, text, name=f"{a[1]}-{a[4]}"))
    main = [results.Result("split_huge_page_test/<exit status>", "fail", "TIMEOUT",
                           "split_huge_page_test")]
    return {r[1]: r[0] for r in testcmd.retry_regressions("x86_64", "default",
                                                          TIMED_OUT, main)}


def test_a_program_that_times_out_on_stock_too_when_re_run_is_flaky(monkeypatch, tmp_path):
    # the re-runs (both kernels) time out: stock did the same
    rows = retry_timed_out(monkeypatch, tmp_path,
                           "not ok 1 split_huge_page_test # TIMEOUT after 600s")
    assert rows["x86_64/default/patched/split_huge_page_test/<exit status>"] == "flaky"


def test_a_program_that_timed_out_once_with_stock_passing_fails(monkeypatch, tmp_path):
    rows = retry_timed_out(monkeypatch, tmp_path, "ok 1 split_huge_page_test")
    assert rows["x86_64/default/patched/split_huge_page_test/<exit status>"] == "fail"


def test_program_results_reads_each_programs_own_line():
    text = ("# lab: start a: x\n    ok 1 t\nok 1 a\n# lab: start b: y\n"
            "not ok 2 b # TIMEOUT after 9s\nok 3 c # SKIP exit 4\n")
    assert results.program_results(text) == {"a": "pass", "b": "fail", "c": "skip"}
    # a program that reported twice: a failure is not overwritten
    assert results.program_results("not ok 1 a # exit 1\nok 2 a\n") == {"a": "fail"}


# 4. the guest's own set-up

class Boot:
    def __init__(self, text, ready=True, exit_code=0, timed_out=False, plan=""):
        self._text, self.ready, self.exit_code, self.timed_out = text, ready, exit_code, timed_out
        self.console = "console.log"
        self.plan = plan

    def text(self):
        return self._text


PLAN = ("lab_plan 3\n"
        "lab_run mremap_batch 600 /lab/tests/mremap_batch\n"
        "lab_run reclaim_tlb 600 /lab/tests/reclaim_tlb\n"
        "lab_no_aslr lab_run khugepaged 600 /lab/selftests/mm/khugepaged\n")


def test_a_plan_shell_that_dies_before_its_programs_fails_the_boot():
    """The plan shell killed (SIGSEGV, the OOM killer) after its first
    program: init prints LAB-EXIT: 139, and the two programs that never
    started leave no result line to fail on."""
    text = ("LAB-READY: 6.12\nKTAP version 1\n1..3\n"
            "# lab: start mremap_batch: /lab/tests/mremap_batch\n"
            "    ok 1 mremap_batch.moves\nok 1 mremap_batch\nLAB-EXIT: 139\n")
    probs = boot_problems(Boot(text, exit_code=139, plan=PLAN))
    details = " ".join(d for _, d in probs)
    assert [w for w, _ in probs] == ["completed", "completed"]
    assert "LAB-EXIT: 139" in details
    assert "reclaim_tlb, khugepaged" in details


def test_a_nonzero_lab_exit_alone_fails_the_boot():
    text = ("LAB-READY: 6.12\n# lab: start mremap_batch: x\nok 1 mremap_batch\n"
            "# lab: start reclaim_tlb: x\nok 2 reclaim_tlb\n"
            "# lab: start khugepaged: x\nok 3 khugepaged\nLAB-EXIT: 2\n")
    assert [w for w, _ in boot_problems(Boot(text, exit_code=2, plan=PLAN))] == ["completed"]
    assert boot_problems(Boot(text.replace("LAB-EXIT: 2", "LAB-EXIT: 0"), plan=PLAN)) == []


def test_a_program_that_started_and_never_reported_is_not_counted_twice():
    """results.parse() makes its '<did not finish>' leaf; the boot only
    names the programs that never started."""
    text = ("LAB-READY: 6.12\n# lab: start mremap_batch: x\nok 1 mremap_batch\n"
            "# lab: start reclaim_tlb: x\n")
    probs = boot_problems(Boot(text, exit_code=None, plan=PLAN))
    assert any("khugepaged" in d and "reclaim_tlb" not in d for _, d in probs)


def test_a_lab_error_line_fails_the_boot():
    b = Boot("LAB-ERROR: mount xfs /dev/vda failed\nLAB-READY: 6.12\nLAB-EXIT: 0\n")
    assert [what for what, _ in boot_problems(b)] == ["setup"]
    assert "mount xfs" in boot_problems(b)[0][1]
    assert boot_problems(Boot("LAB-READY: 6.12\nLAB-EXIT: 0\n")) == []


def test_a_plan_helper_that_could_not_set_up_fails_the_boot():
    """The prologue's huge page reservation that fell short (or any
    guest/lib.sh helper's "# lab: could not ..." line) is a setup failure:
    the hugetlb cases it was for would only skip."""
    text = ("LAB-READY: 6.12\n# lab: could not reserve 48 huge pages: nr_hugepages "
            "reads 20\nLAB-EXIT: 0\n")
    probs = boot_problems(Boot(text))
    assert [what for what, _ in probs] == ["setup"]
    assert "nr_hugepages reads 20" in probs[0][1]
    # a program's own output is indented: not the plan's line
    assert boot_problems(Boot("LAB-READY: 6.12\n    # lab: could not x\nLAB-EXIT: 0\n")) == []


def test_arm64_test_boots_reserve_the_gigantic_pages_the_prologue_checks():
    """32 MB pages cannot be allocated at run time (above MAX_PAGE_ORDER,
    no CONTIG_ALLOC): arm64's test boots reserve them on the command line,
    and the prologue's check of them is then only a check."""
    assert suites.boot_append("arm64", "x=1") == "x=1 hugepagesz=32M hugepages=2"
    assert suites.boot_append("x86_64") == ""
    assert "lab_hugepages 32768 2\n" in suites.PROLOGUE


def test_the_prologue_checks_its_huge_page_reservation():
    assert "lab_hugepages 2048 48\n" in suites.PROLOGUE
    lib = (config.GUEST / "lib.sh").read_text()
    assert "# lab: could not reserve" in lib


def test_the_guest_is_told_which_disks_to_check(monkeypatch, tmp_path):
    seen = {}

    def plan_cpio(arch_name, plan, env, dest):
        seen.update(env)
        return dest

    monkeypatch.setattr(config, "WORK", tmp_path)
    monkeypatch.setattr(image, "plan_cpio", plan_cpio)
    monkeypatch.setattr(run, "make_disk", lambda *a, **kw: None)
    monkeypatch.setattr(run, "_run_qemu", lambda *a: None)
    run.boot(run.BootSpec(arch="x86_64", kernel="K", plan="plan", env={"LAB_ARCH": "x86_64"},
                          name="t"))
    assert seen["LAB_DISKS"] == "labxfs labswap"
    init = (config.GUEST / "init").read_text()
    assert "for disk in $LAB_DISKS" in init and "LAB-ERROR: disk labxfs" in init


# 5. a leaf that passes on stock must not vanish or skip on patched

STOCK = """LAB-READY: 6.12
# lab: start cow: /lab/selftests/mm/cow
    ok 1 Basic COW on a THP
    ok 2 Basic COW on 4k
ok 1 cow
# lab: start reclaim_batch: /lab/tests/reclaim_batch
    ok 1 rb.stock.referenced_survive
    ok 2 rb.on.referenced_survive # SKIP variant for the patched kernel
    ok 3 rb.on.lazyfree_anon # SKIP variant for the patched kernel
ok 2 reclaim_batch
LAB-EXIT: 0
"""
PATCHED = """LAB-READY: 6.12
# lab: start cow: /lab/selftests/mm/cow
    ok 1 Basic COW on a THP # SKIP no THP allocated
ok 1 cow
# lab: start reclaim_batch: /lab/tests/reclaim_batch
    ok 1 rb.stock.referenced_survive # SKIP variant for the stock kernel
    ok 2 rb.on.referenced_survive
ok 2 reclaim_batch
LAB-EXIT: 0
"""


def test_passes_on_stock_then_skipped_or_missing_on_patched_is_a_regression():
    rows = testcmd.judge("x86_64", "default", {"stock": results.parse(STOCK),
                                               "patched": results.parse(PATCHED)})
    got = {r[1].split("/", 3)[3]: r[0] for r in rows if "/patched/" in r[1]}
    assert got["cow/Basic COW on a THP"] == "regress"           # skipped
    assert got["cow/Basic COW on 4k"] == "regress"              # missing
    # the own test's stock variant skips on patched by design: it is the
    # stock boot's test, and counts there
    assert got["reclaim_batch/rb.stock.referenced_survive"] == "variant"
    assert got["reclaim_batch/rb.on.referenced_survive"] == "pass"
    assert "reclaim_batch/rb.on.lazyfree_anon" not in got
    on_stock = {r[1].split("/", 3)[3]: r for r in rows if "/stock/" in r[1]}
    assert on_stock["reclaim_batch/rb.on.referenced_survive"][0] == "variant"
    # the patched variant that vanished from the patched boot fails
    assert on_stock["reclaim_batch/rb.on.lazyfree_anon"][0] == "fail"
    assert "did not run it" in on_stock["reclaim_batch/rb.on.lazyfree_anon"][2]


def test_stock_only_names_the_stock_variants_of_own_tests_only():
    assert suites.stock_only("reclaim_batch/rb.stock.referenced_survive")
    assert suites.stock_only("reclaim_batch/rb.stock_mglru.referenced_survive")
    assert suites.stock_only("switches/global.stock_has_no_switches")
    assert not suites.stock_only("reclaim_batch/rb.on.referenced_survive")
    assert not suites.stock_only("reclaim_batch/rb.mglru_on.restocked")
    assert not suites.stock_only("cow/stock.x")


# 6. kernel reports the console scan must see

@pytest.mark.parametrize("line", [
    "[  120.000000] rcu: INFO: rcu_preempt self-detected stall on CPU",
    "[  120.000000] rcu: \t1-....: (2099 ticks this GP) idle=8b4/1/0x4000 self-detected stall",
    "[   33.000000] mm/pgtable-generic.c:53: bad pmd 00000000c0ffee00(8000000102a00067)",
    "[   33.000000] mm/memory.c:4000: bad pte 0000000012345678(0000000102a00067)",
    "[   34.000000] swap_info_get: Bad swap file entry 3ffffffffffff",
    # a report that starts in the middle of a program's line (shared console)
    "    Testing move on anon... [   35.100000] BUG: Bad page state in process x",
    "ok 3 something[   36.000000] WARNING: CPU: 0 PID: 1 at mm/rmap.c:2 f+0x0/0x1",
])
def test_the_console_scan_sees(line):
    assert results.kernel_reports(f"LAB-READY: 6.12\n{line}\n") == [line.strip()]


def test_the_console_scan_ignores_programs_and_quiet_kernel_lines():
    text = ("WARNING: a program said this\n"
            "    Testing wp-fork on anon... done\n"
            "[    1.000000] rcu: Hierarchical RCU implementation.\n"
            "[    2.000000] Adding 1048572k swap on /dev/vdb.\n")
    assert results.kernel_reports(text) == []


# 7. stock failures excuse only what stock itself showed

FAILED_STOCK = "LAB-READY: 6.12\n# lab: start cow: x\n    not ok 1 Basic COW\nnot ok 1 cow\nLAB-EXIT: 0\n"


def test_a_stock_boot_with_a_failed_leaf_is_not_stored(inputs, tmp_path, monkeypatch):  # noqa: F811
    stock_inputs(monkeypatch, tmp_path, inputs, lambda *a, **kw: ["qemu"])
    boots = []
    monkeypatch.setattr(testcmd, "boot_and_parse", lambda *a, **kw: (
        boots.append(a) or fake_boot(tmp_path, FAILED_STOCK, name=str(len(boots)))))
    testcmd.stock_boot("x86_64", "default", PLAN)
    testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 2


def test_a_stored_stock_boot_with_a_failed_leaf_is_not_reused(inputs, tmp_path, monkeypatch):  # noqa: F811
    stock_inputs(monkeypatch, tmp_path, inputs, lambda *a, **kw: ["qemu"])
    boots = []
    monkeypatch.setattr(testcmd, "boot_and_parse", lambda *a, **kw: (
        boots.append(a) or fake_boot(tmp_path, name=str(len(boots)))))
    testcmd.stock_boot("x86_64", "default", PLAN)
    # an entry stored before this rule, whose console has a failed leaf
    [console] = (tmp_path / "work" / "results" / "stock-cache").glob("*.console.log")
    console.write_text(FAILED_STOCK)
    testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 2


def harden_suite(monkeypatch, tmp_path, patched, stock):
    def boot_and_parse(arch_name, flavour, variant, plan, tag, **kw):
        return fake_boot(tmp_path, patched if flavour == "patched" else stock,
                         name=f"{flavour}-{tag}")
    monkeypatch.setattr(harden, "boot_and_parse", boot_and_parse)
    # the plan the fake consoles ran: cow alone
    monkeypatch.setattr(harden.suites, "test_plan", lambda *a, **k: suites._lines(
        [("cow", 60, ["/lab/selftests/mm/cow"])]))
    tally = Tally()
    harden.run_suite(tally, "arm64", "debug")
    return {n: (s, d) for s, n, d in tally.rows}


def test_harden_excuses_only_what_its_own_stock_boot_failed_the_same_way(
        monkeypatch, tmp_path):
    """No failure is excused by its leaf name: the suite boots stock with
    the same plan, and only the same failure there excuses a patched one."""
    rows = harden_suite(monkeypatch, tmp_path, COW_FAILS, COW_FAILS)
    assert rows["arm64/debug/harden-suite/cow/Basic COW"][0] == "stockfail"
    rows = harden_suite(monkeypatch, tmp_path, COW_FAILS, COW_PASSES)
    assert rows["arm64/debug/harden-suite/cow/Basic COW"][0] == "fail"
    rows = harden_suite(monkeypatch, tmp_path, COW_FAILS,
                        COW_FAILS.replace("wrong data", "lost page"))
    assert rows["arm64/debug/harden-suite/cow/Basic COW"][0] == "fail"


def test_harden_judges_skips_and_absences_as_lab_test_does(monkeypatch, tmp_path):
    """The suite's verdicts are guest/verdicts.judge()'s: an undeclared SKIP
    fails, a leaf stock passes and patched lacks fails, and the stock boot's
    leaves are rows of their own."""
    mem = "free=900000 avail=1000000 anonhuge=0 pt=50 swap=0 buddy=1,2,3"
    two = (f"LAB-READY: 6.12\n# lab: mem <start> {mem}\n# lab: start cow: x\n"
           f"    ok 1 Basic COW\n    ok 2 Other COW\n# lab: mem cow {mem}\nok 1 cow\n"
           "LAB-EXIT: 0\n")
    skipped = two.replace("ok 2 Other COW", "ok 2 Other COW # SKIP the moon is full")
    rows = harden_suite(monkeypatch, tmp_path, skipped, two)
    assert rows["arm64/debug/harden-suite/cow/Other COW"][0] == "fail"
    assert rows["arm64/debug/harden-suite-stock/cow/Other COW"][0] == "pass"
    rows = harden_suite(monkeypatch, tmp_path, COW_PASSES, two)
    assert rows["arm64/debug/harden-suite/cow/Other COW"] == (
        "fail", "passes on stock, missing on patched (no re-run in lab harden)")
    rows = harden_suite(monkeypatch, tmp_path, two, two)
    assert {s for s, d in rows.values()} == {"pass"}
    assert rows["arm64/debug/harden-suite/<left behind>"][0] == "pass"
    # and the memory a program leaves behind is judged as lab test judges it
    rows = harden_suite(monkeypatch, tmp_path, two.replace("mem cow free=900000 avail=1000000",
                                                          "mem cow free=800000 avail=900000"),
                        two)
    assert rows["arm64/debug/harden-suite/cow/<left behind>"][0] == "fail"
    # every row, stock's too, belongs to a build in the KCIDB output
    from lab.outputs import kcidb
    assert all(kcidb.build_of(n) for n in rows)


# 8. pytest that ran nothing is a failure

def test_pytest_that_collected_nothing_fails(tmp_path):
    xml = tmp_path / "pytest.xml"
    xml.write_text('<testsuites><testsuite name="pytest" tests="0"/></testsuites>')
    tally = Tally()
    testcmd.tally_pytest(tally, 5, xml, "no tests ran")
    assert fails(tally) == [("fail", "host/pytest", "pytest ran no test (exit 5)")]


def test_pytest_without_a_report_or_with_an_internal_error_fails(tmp_path):
    tally = Tally()
    testcmd.tally_pytest(tally, 4, tmp_path / "none.xml", "usage")
    assert fails(tally)[0][1] == "host/pytest"
    xml = tmp_path / "pytest.xml"
    xml.write_text('<testsuites><testsuite><testcase classname="t" name="a"/>'
                   '</testsuite></testsuites>')
    tally = Tally()
    testcmd.tally_pytest(tally, 3, xml, "INTERNALERROR")
    assert [r[1] for r in tally.rows] == ["host/t.a", "host/pytest"]
    assert tally.rows[1][0] == "fail"


def test_pytest_exit_1_with_no_failed_case_fails(tmp_path):
    """pytest says it failed (a failing fixture at session level, a plugin)
    while every case in its report passed: what failed is absent."""
    xml = tmp_path / "pytest.xml"
    xml.write_text('<testsuites><testsuite><testcase classname="t" name="a"/>'
                   '</testsuite></testsuites>')
    tally = Tally()
    testcmd.tally_pytest(tally, 1, xml, "1 error")
    assert fails(tally) == [("fail", "host/pytest",
                             "pytest exit 1 with no failed test case in its report")]


def test_a_run_in_which_nothing_passed_fails(capsys):
    """No result at all, or only skips: the run ends non-zero, and the
    saved rows say so too."""
    for rows in ([], [("skip", "x86_64/default/patched/a", "no reason")]):
        tally = Tally()
        for r in rows:
            tally.add(*r)
        saved = json.loads(tally.save("test").read_text())
        assert [r["name"] for r in saved if r["status"] == "fail"] == ["run/results"]
        assert tally.finish("t.json") == 1
        assert "0 passed, 1 failed" in capsys.readouterr().out


def test_pytest_exit_1_with_a_failed_case_adds_no_row_of_its_own(tmp_path):
    xml = tmp_path / "pytest.xml"
    xml.write_text('<testsuites><testsuite><testcase classname="t" name="a">'
                   '<failure message="x"/></testcase></testsuite></testsuites>')
    tally = Tally()
    testcmd.tally_pytest(tally, 1, xml, "1 failed")
    assert fails(tally) == [("fail", "host/t.a", "")]


def test_a_real_empty_pytest_run_is_a_failed_row(tmp_path, monkeypatch):
    empty = tmp_path / "repo"
    (empty / "tests").mkdir(parents=True)
    monkeypatch.setattr(config, "REPO", empty)
    monkeypatch.setattr(config, "WORK", tmp_path / "work")
    tally = Tally()
    testcmd.run_pytest(tally)
    assert fails(tally) and fails(tally)[0][1] == "host/pytest"


# 12. the race tests run once more with one host thread per vCPU

def test_race_plan_runs_the_race_tests_by_name():
    plan = suites.race_plan(suites.RACE_TESTS)
    assert "lab_run pt_reclaim 600 /lab/tests/pt_reclaim -t race -t uffd_move_race " in plan
    assert "-t no_lost_write_anon -t no_lost_write_file -t pt_race_under_reclaim" in plan
    assert testcmd.RACE_ACCEL == "tcg,thread=multi"


def test_an_extra_boot_without_results_fails():
    tally = Tally()
    testcmd.tally_boot(tally, "arm64/default/patched-mttcg",
                       Boot("LAB-READY: 6.12\nLAB-EXIT: 0\n"))
    assert [r[1] for r in fails(tally)] == ["arm64/default/patched-mttcg/results"]


# the whole path: an injected failure ends the command non-zero

def test_lab_test_exits_non_zero_when_an_arch_dies(tmp_path):
    code = f"""
import sys
sys.path.insert(0, {str(config.REPO)!r})
from lab import cli
from lab.commands import harden, test as testcmd
from lab.core import deps
from lab.kernel import build, check, export, source
deps.check = lambda: None
source.apply = lambda: None
build.build_ahead = lambda kernels: None
export.test_row = lambda tally: None
from lab.commands import codegen
codegen.tally_claims = lambda tally, arches: None
def fake(tally, arch_name, *args):
    if arch_name == "arm64":
        raise ValueError("injected")
    tally.add("pass", arch_name + "/x")
testcmd.test_arch = fake
sys.exit(cli.main(["test", "--no-pytest", "--no-harden", "--no-check"]))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"FOLIOBATCH_WORK": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.rstrip().endswith("1 passed, 1 failed")


# the check leaves compile beside the nosplit boot and the load, and an
# error in them is a failed row, not a lost one

def test_check_runs_beside_the_short_form_and_its_errors_are_rows(monkeypatch, tmp_path):
    import threading
    from types import SimpleNamespace

    from lab.cli import test as cli_test
    from lab.commands import check, codegen
    from lab.kernel import export

    monkeypatch.setattr(config, "WORK", tmp_path)
    monkeypatch.setattr(testcmd, "main", lambda tally, *a, **kw: tally.add("pass", "x/y"))
    monkeypatch.setattr(export, "test_row", lambda tally: None)
    monkeypatch.setattr(codegen, "tally_claims", lambda tally, arches: None)
    monkeypatch.setattr(build, "build", lambda *a, **kw: None)
    monkeypatch.setattr(testcmd, "nosplit_check", lambda tally, a, v: None)
    both = threading.Barrier(2, timeout=5)

    def short_form(tally, arches):
        both.wait()

    def ci_form(tally, use_cache=True):
        both.wait()         # only passes while the load runs too
        raise ValueError("the riscv64 build broke")

    monkeypatch.setattr(harden, "short_form", short_form)
    monkeypatch.setattr(check, "ci_form", ci_form)
    args = SimpleNamespace(only=None, arch=None, no_harden=False, variant="default",
                           no_pytest=True, no_own=False, no_upstream=False,
                           no_cache=False, jobs=2, no_check=False, kcidb=None, list=False)
    assert cli_test.cmd_test(args) == 1


def test_a_real_boot_keeps_its_plan_and_its_exit(monkeypatch):
    """run.boot() itself, with a shell in place of QEMU that prints what
    the guest's /init prints: the Boot it returns carries the plan it ran,
    and boot_problems() judges it (a plan shell that died after its first
    program)."""
    from lab.guest import image, run
    plan = PLAN
    console = ("LAB-READY: 6.12\n# lab: start mremap_batch: x\nok 1 mremap_batch\n"
               "LAB-EXIT: 139\n")
    monkeypatch.setattr(run, "make_disk", lambda path, size_mb, xfs=False: None)
    monkeypatch.setattr(image, "plan_cpio", lambda *a: a[-1])
    monkeypatch.setattr(run, "qemu_cmd",
                        lambda *a, **kw: ["printf", "%s", console])
    b = run.boot(run.BootSpec(arch="x86_64", kernel="KERNEL", plan=plan, env={},
                              name="verdict-test", timeout=30))
    assert b.plan == plan and b.exit_code == 139 and b.ready
    probs = boot_problems(b)
    assert any("LAB-EXIT: 139" in d for _, d in probs)
    assert any("reclaim_tlb, khugepaged" in d for _, d in probs)


@pytest.mark.parametrize("broken", ["short_form", "test_row", "tally_claims"])
def test_an_exception_in_any_step_of_lab_test_is_a_failed_row(monkeypatch, capsys, broken):
    """The load, the Debian export row and the code claims run outside the
    arches' threads (the nosplit boot guards its own body): a NameError in
    any must be a failed row, and the run must still end with its 'N
    passed, N failed' line, exit 1."""
    from types import SimpleNamespace

    from lab.cli import test as cli_test
    from lab.commands import check, codegen
    from lab.kernel import export

    def boom(*a, **kw):
        raise NameError("name 'plan' is not defined")

    monkeypatch.setattr(testcmd, "main", lambda tally, *a, **kw: tally.add("pass", "x/y"))
    monkeypatch.setattr(build, "build", lambda *a, **kw: None)
    monkeypatch.setattr(check, "ci_form", lambda tally, use_cache=True: None)
    monkeypatch.setattr(export, "test_row", lambda tally: None)
    monkeypatch.setattr(testcmd, "nosplit_check", lambda tally, a, v: None)
    monkeypatch.setattr(harden, "short_form", lambda tally, arches: None)
    monkeypatch.setattr(codegen, "tally_claims", lambda tally, arches: None)
    target = {"short_form": harden, "nosplit_check": testcmd, "test_row": export,
              "tally_claims": codegen}[broken]
    monkeypatch.setattr(target, broken, boom)
    args = SimpleNamespace(only=None, arch=None, no_harden=False, variant="default",
                           no_pytest=True, no_own=False, no_upstream=False,
                           no_cache=False, jobs=2, no_check=False, kcidb=None, list=False)
    assert cli_test.cmd_test(args) == 1
    out = capsys.readouterr().out
    assert "NameError: name 'plan' is not defined" in out
    assert out.rstrip().endswith("1 passed, 1 failed")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_check_thread_that_ends_without_a_word_fails(monkeypatch, capsys):
    """SystemExit in the check thread (config.arch() raises it) is not an
    Exception: before, the run printed '1 passed, 0 failed' and exit 0."""
    from types import SimpleNamespace

    from lab.cli import test as cli_test
    from lab.commands import check, codegen
    from lab.kernel import export

    def exits(tally, use_cache=True):
        raise SystemExit("lab: unknown arch 'riscv64'")

    monkeypatch.setattr(testcmd, "main", lambda tally, *a, **kw: tally.add("pass", "x/y"))
    monkeypatch.setattr(build, "build", lambda *a, **kw: None)
    monkeypatch.setattr(check, "ci_form", exits)
    monkeypatch.setattr(export, "test_row", lambda tally: None)
    monkeypatch.setattr(codegen, "tally_claims", lambda tally, arches: None)
    monkeypatch.setattr(testcmd, "nosplit_check", lambda tally, a, v: None)
    monkeypatch.setattr(harden, "short_form", lambda tally, arches: None)
    args = SimpleNamespace(only=None, arch=None, no_harden=False, variant="default",
                           no_pytest=True, no_own=False, no_upstream=False,
                           no_cache=False, jobs=2, no_check=False, kcidb=None, list=False)
    assert cli_test.cmd_test(args) == 1
    assert capsys.readouterr().out.rstrip().endswith("1 passed, 1 failed")


def test_a_saved_run_names_the_commit_it_started_from(tmp_path, monkeypatch):
    """A run tests the tree it started from: a commit made while it runs
    is not in its builds, and uncommitted changes are marked."""
    import json
    import subprocess

    from lab.core import config, tally as tally_mod

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a").write_text("1\n")
    subprocess.run(git + ["add", "a"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "one"], check=True)
    first = subprocess.run(git + ["rev-parse", "--short=7", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.strip()
    monkeypatch.setattr(config, "REPO", repo)
    t = tally_mod.Tally()
    t.add("pass", "x")
    (repo / "a").write_text("2\n")
    subprocess.run(git + ["commit", "-q", "-am", "two"], check=True)
    info = tally_mod.info_path(t.save("test"))
    assert json.loads(info.read_text())["commit"] == first
    (repo / "a").write_text("3\n")
    assert tally_mod.Tally().commit.endswith("+changes")


# 13. a program that leaves memory behind on patched fails, in lab test's
# own arch path (test_arch), not only in memstate.judge()

def test_a_patched_boot_that_keeps_swap_fails_lab_test(monkeypatch, tmp_path):
    mem = "free=900000 avail=1000000 anonhuge=0 pt=50 swap={} buddy=1,2,3"
    text = ("LAB-READY: 6.12\n# lab: mem <start> " + mem.format(0) + "\n"
            "# lab: start sanity: /lab/tests/sanity\n    1..1\n    ok 1 boots\n"
            "# lab: mem sanity " + mem.format("{}") + "\nok 1 sanity\nLAB-EXIT: 0\n")
    plan = "lab_plan 1\nlab_run sanity 600 /lab/tests/sanity\n"
    monkeypatch.setattr(build, "build", lambda *a, **kw: None)
    monkeypatch.setattr(image, "build", lambda *a, **kw: None)
    monkeypatch.setattr(suites, "test_plan", lambda *a, **kw: plan)
    monkeypatch.setattr(suites, "NO_RANGE_TLBI", {})
    monkeypatch.setattr(suites, "CPU_FEATURES", {})

    def run_arch(patched_swap):
        consoles = {"stock": text.format(0), "patched": text.format(patched_swap)}
        monkeypatch.setattr(testcmd, "stock_boot",
                            lambda *a, **kw: Boot(consoles["stock"], plan=plan))
        monkeypatch.setattr(testcmd, "boot_and_parse",
                            lambda a, fl, *r, **kw: Boot(consoles[fl], plan=plan))
        tally = Tally()
        testcmd.test_arch(tally, "x86_64", "default", own=False, upstream=False,
                          only=None)
        return tally

    assert not [r for r in fails(run_arch(0)) if "left behind" in r[1]]
    leak = [r[1] for r in fails(run_arch(8192))]
    assert "x86_64/default/patched/sanity/<left behind>" in leak, leak
