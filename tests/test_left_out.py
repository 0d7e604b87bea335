# SPDX-License-Identifier: GPL-2.0-only
"""What the plans leave out (suites.ARCH_LEFT_OUT, BOOT_LEFT_OUT): each name
is a test of its program, the plans pass it to -T, and the summary says so."""

import pytest

from lab.commands import test as testcmd
from lab.core import config
from lab.core.tally import Tally
from lab.guest import harness, suites


def plan_line(plan, prog):
    lines = [ln for ln in plan.splitlines() if ln.startswith(f"lab_run {prog} ")]
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
            for names, why, skip in entries:
                assert why and skip and set(names) <= tests, (prog, set(names) - tests)
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


# The probes of what a plan leaves out (guest/leftout.py): each table
# entry says the test can only skip there; the guest must show it.

def probe_console(prog, cases, n=1):
    """A console of one probe program: cases [(case, 'ok'|'not ok', skip
    message or None)]."""
    lines = [f"# lab: start {prog}.left-out: /lab/tests/{prog} -t x", f"    1..{len(cases)}"]
    for i, (case, ok, skip) in enumerate(cases, 1):
        lines.append(f"    {ok} {i} {case}" + (f" # SKIP {skip}" if skip else ""))
    return "\n".join(lines) + f"\nok {n} {prog}.left-out\n"


def judge_probes(arch, consoles, plan=None, boot="tests"):
    from lab.guest import leftout, results
    per = {fl: results.parse(text) for fl, text in consoles.items()}
    prefixes = {fl: f"{arch}/default/{fl}" for fl in consoles}
    rows = leftout.judge(arch, boot, prefixes, per,
                         None if plan is None else suites.plan_programs(plan))
    return {name: (status, detail) for status, name, detail in rows}


MREMAP_SKIP = ("x86_64 has no contiguous PTEs: move_ptes() never batches there "
               "(pte_batch_hint() is 1), nothing to count")


def test_a_probe_that_skips_for_the_tables_reason_passes():
    rows = judge_probes("x86_64", {
        "patched": probe_console("mremap_batch", [
            ("mech.off.contpte_unfolds", "ok", MREMAP_SKIP),
            ("mech.stock.contpte_unfolds", "ok", "variant for the stock kernel")]),
        "stock": probe_console("mremap_batch", [
            ("mech.off.contpte_unfolds", "ok", "variant for the patched kernel"),
            ("mech.stock.contpte_unfolds", "ok", MREMAP_SKIP)])})
    assert {s for s, _ in rows.values()} == {"pass", "variant"}, rows
    assert rows["x86_64/default/patched/mremap_batch.left-out/mech.off.contpte_unfolds"][0] \
        == "pass"


@pytest.mark.parametrize("ok, skip, says", [
    ("ok", None, "passes here: the table hides a test"),
    ("not ok", None, "fails here instead of skipping"),
    ("ok", "kprobe on move_ptes: No such file", "skips for another reason"),
])
def test_a_probe_that_does_not_skip_for_the_tables_reason_fails(ok, skip, says):
    """A table entry that hides a test the arch can run (it passes), a
    test that breaks there, or one that skips for another reason than the
    entry's: each fails, on the case and for want of a confirmed reason."""
    rows = judge_probes("x86_64", {"patched": probe_console(
        "mremap_batch", [("mech.off.contpte_unfolds", ok, skip)])})
    case = rows["x86_64/default/patched/mremap_batch.left-out/mech.off.contpte_unfolds"]
    assert case[0] == "fail" and says in case[1], case
    assert rows["x86_64/default/patched/mremap_batch.left-out/contpte_unfolds"][0] == "fail"


def test_a_planned_probe_that_never_reported_fails_for_each_of_its_tests():
    plan = suites.test_plan("x86_64", upstream=False, only={"mremap_batch", "read_batch"})
    rows = judge_probes("x86_64", {"patched": probe_console(
        "mremap_batch", [("mech.off.contpte_unfolds", "ok", MREMAP_SKIP)])}, plan)
    missing = {n for n, (s, _) in rows.items() if s == "fail"}
    assert missing == {f"x86_64/default/patched/read_batch.left-out/{t}" for t in (
        "contpte_reads", "mincore_visits", "smaps_and_mlock", "mincore_vector",
        "mincore_swapped", "fold_race", "mincore_migrating", "mbind_move",
        "mbind_strict")}, missing


def test_only_other_kernels_variants_confirm_nothing():
    rows = judge_probes("arm64", {"stock": probe_console(
        "read_batch", [("node.mbind_move", "ok", "variant for the patched kernel")])})
    assert rows["arm64/default/stock/read_batch.left-out/node.mbind_move"][0] == "variant"
    assert rows["arm64/default/stock/read_batch.left-out/mbind_move"][0] == "fail"


def test_every_plan_that_leaves_a_test_out_probes_it():
    for arch in config.ARCHES:
        for boot in ("tests", "cortex-a72"):
            plan = suites.test_plan(arch, upstream=False, boot=boot)
            for prog in suites.own_tests():
                gone = set(suites.left_out(arch, prog, boot))
                probed = [ln for ln in plan.splitlines()
                          if ln.startswith(f"lab_run {prog}.left-out ")]
                if boot == "cortex-a72":
                    gone = {n for n, _ in suites.left_out_probes(arch, boot)
                            .get(prog, {}).items()}
                if not gone:
                    assert not probed
                    continue
                assert len(probed) == 1, (arch, boot, prog)
                assert set(probed[0].split()[5::2]) == gone, probed


def test_the_main_verdicts_judge_the_probes_and_an_extra_boot_does_too(tmp_path):
    """Wired in: lab test's main boots (verdicts.judge()) and the cortex-a72
    boot (tally_boot()) fail a probe that passes."""
    from lab.guest import results
    from lab.guest.verdicts import judge
    from test_cache import fake_boot
    text = "LAB-READY: 6.12\nKTAP version 1\n1..1\n" + probe_console(
        "reclaim_batch", [("rb.on.mglru_walk_calls", "ok", None)]) + "LAB-EXIT: 0\n"
    plan = suites.test_plan("arm64", upstream=False, only={"reclaim_batch"},
                            boot="cortex-a72")
    tally = Tally()
    testcmd.tally_boot(tally, "arm64/default/patched-cortex-a72", fake_boot(tmp_path, text),
                       probes=("arm64", "cortex-a72", plan))
    row = [r for r in tally.rows if r[1].endswith("rb.on.mglru_walk_calls")]
    assert row and row[0][0] == "fail", tally.rows
    text = text.replace("reclaim_batch", "read_batch").replace("rb.on.mglru_walk_calls",
                                                               "node.mbind_move")
    rows = judge("arm64", "default", {"patched": results.parse(text)})
    assert ("fail", "arm64/default/patched/read_batch.left-out/node.mbind_move") in \
        [r[:2] for r in rows]
