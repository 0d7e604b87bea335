"""What the plans leave out (suites.ARCH_LEFT_OUT, BOOT_LEFT_OUT): each name
is a test of its program, the plans pass it to -T, and the summary says so."""

from lab.commands import test as testcmd
from lab.core import config
from lab.core.tally import Tally
from lab.guest import harness, suites


def plan_line(plan, prog):
    lines = [ln for ln in plan.splitlines() if f" /lab/tests/{prog}" in ln]
    assert len(lines) == 1, plan
    return lines[0]


def test_every_name_left_out_is_a_test_of_its_program():
    """A misspelt name would leave nothing out, and the test would skip;
    a name of another program's test would not be caught by that.  Each
    must be a test the program lists (harness.tests(), read from its
    source); tests/test_closed_plans.py checks every table so."""
    tables = list(suites.ARCH_LEFT_OUT.values()) + list(suites.BOOT_LEFT_OUT.values())
    seen = 0
    for table in tables:
        for prog, entries in table.items():
            tests = harness.tests(prog)
            for names, why in entries:
                assert why and set(names) <= tests, (prog, set(names) - tests)
                seen += len(names)
    assert seen >= 10


def test_the_x86_64_plan_leaves_out_the_contpte_tests_and_arm64_keeps_them():
    x86 = plan_line(suites.test_plan("x86_64", upstream=False), "read_batch")
    arm = plan_line(suites.test_plan("arm64", upstream=False), "read_batch")
    assert "-T contpte_reads" in x86 and "-T fold_race" in x86
    assert "-T contpte_reads" not in arm and "-T fold_race" not in arm
    # both main boots have one NUMA node: the numa boot runs mbind_move
    assert "-T mbind_move" in x86 and "-T mbind_move" in arm
    assert "-T soft_dirty " in plan_line(suites.test_plan("arm64", upstream=False),
                                         "mprotect_batch") + " "
    assert "-T" not in plan_line(suites.test_plan("x86_64", upstream=False), "pt_reclaim")
    # two reasons for one program: both sets of names go
    x86_mp = plan_line(suites.test_plan("x86_64", upstream=False), "mprotect_batch")
    assert "-T contpte_unfolds" in x86_mp and "-T tags_on_every_pte" in x86_mp


def test_a_race_plan_drops_a_program_with_nothing_left_to_run():
    races = {"read_batch": ("fold_race",), "reclaim_tlb": ("no_lost_write_anon",)}
    x86 = suites.race_plan(races, arch_name="x86_64")
    arm = suites.race_plan(races, arch_name="arm64")
    assert "read_batch" not in x86 and "lab_plan 1\n" in x86
    assert "/lab/tests/read_batch -t fold_race" in arm and "lab_plan 2\n" in arm
    # the numa boot runs what the main boots leave out
    numa = suites.race_plan(suites.NUMA_TESTS, arch_name="x86_64")
    assert "/lab/tests/read_batch -t mbind_move" in numa


def test_a_race_plan_with_nothing_left_is_no_boot():
    # 'lab test --only read_batch' on x86_64: fold_race is left out, so the
    # mttcg boot would run an empty plan and fail for want of a result
    assert suites.race_plan({"read_batch": ("fold_race",)}, arch_name="x86_64") is None
    assert suites.race_plan({}) is None
    # a whole run keeps each extra boot on both arches
    for arch in ("x86_64", "arm64"):
        assert suites.race_plan(suites.RACE_TESTS, arch_name=arch)
        assert suites.race_plan(suites.NUMA_TESTS, arch_name=arch, upstream=suites.NUMA_UPSTREAM)
        assert suites.race_plan(suites.NOSPLIT_TESTS, "nosplit", suites.NOSPLIT_UPSTREAM, arch)


def test_the_cortex_a72_plan_leaves_out_the_page_table_walk_count():
    plan = suites.test_plan("arm64", upstream=False, only={"reclaim_batch"},
                            boot="cortex-a72")
    assert "-T mglru_walk_calls" in plan_line(plan, "reclaim_batch")
    assert "-T mglru_walk_calls" not in plan_line(
        suites.test_plan("arm64", upstream=False, only={"reclaim_batch"}), "reclaim_batch")


def test_the_summary_lists_what_the_plans_left_out(capsys):
    tally = Tally()
    tally.add("pass", "x")
    testcmd.note_left_out(tally, "x86_64", "tests")
    testcmd.note_left_out(tally, "x86_64", "tests")     # once
    testcmd.note_left_out(tally, "arm64", "tests", only={"reclaim_batch"})
    tally.finish(config.WORK / "none.json")
    out = capsys.readouterr().out
    assert out.count("left out of x86_64's tests plans: read_batch: contpte_reads") == 1
    assert "arm64's tests plans" not in out


def test_an_empty_extra_plan_fails_a_whole_run_and_is_noted_in_a_part():
    tally = Tally()
    assert testcmd.extra_plan(tally, "x86_64/default/patched-mttcg", "plan", whole=True)
    assert not tally.rows
    assert not testcmd.extra_plan(tally, "x86_64/default/patched-mttcg", None, whole=True)
    assert tally.rows[-1][:2] == ("fail", "x86_64/default/patched-mttcg/plan")
    part = Tally()
    assert not testcmd.extra_plan(part, "x86_64/default/patched-mttcg", None, whole=False)
    assert not part.rows and "not booted" in part.notes[0]
