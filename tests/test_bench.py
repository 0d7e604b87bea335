# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of the bench plan, run parsing and report."""

import dataclasses
import json
from pathlib import Path

from lab.commands import bench
from lab.core import config
from lab.guest import run, workloads
from lab.outputs import report, stats, tables


def test_plan_alternates_mode_order_and_sets_switches():
    w = workloads.BY_NAME["mremap-64k"]
    text = workloads.plan([w], 2, "patched", quick=True)
    runs = [l for l in text.splitlines() if l.startswith("lab_bench")]
    assert [r.split()[2] for r in runs] == ["off", "on", "on", "off"]
    assert "lab_switch mremap_batch 0" in text and "lab_switch mremap_batch 1" in text
    assert "/lab/bench/mremap 1024 50" in text           # quick scale
    # every switch is back at the kernel's default at the end of each repeat
    tail = text.rstrip().splitlines()[-1 - len(workloads.shown_switches()):-1]
    assert tail == [f"lab_switch {s} {int(s not in config.DEFAULT_OFF)}"
                    for s in sorted(workloads.shown_switches())]


def test_a_mode_sets_every_switch_the_kernel_shows_and_others_off():
    """A run's switches do not depend on the boot's defaults or on the
    workloads run before it: an "off" mode is every switch off (the 6.12
    path; on arm64 contpte_early_exit, default on, would otherwise speed
    up every contiguous read of an "off" run), an "on" mode the series'
    own switches alone."""
    w = workloads.BY_NAME["file-reclaim"]
    for arch_name in ("x86_64", "arm64"):
        shown = set(workloads.shown_switches(arch_name))
        assert set(w.settings("off", arch_name)) == shown
        assert set(w.settings("off", arch_name).values()) == {0}
        on = w.settings("on", arch_name)
        assert {s for s, v in on.items() if v} == {"referenced_batch", "unmap_batch"}
    assert "contpte_early_exit" in workloads.shown_switches("arm64")
    assert "contpte_early_exit" not in workloads.shown_switches("x86_64")
    assert "contpte_early_exit" not in workloads.shown_switches()
    text = workloads.plan([w], 1, "patched", quick=True, arch_name="arm64")
    first = text.split("lab_bench")[0]
    assert "lab_switch contpte_early_exit 0" in first
    assert "lab_switch mremap_batch 0" in first


def test_state_check_refuses_a_run_whose_other_switch_was_on():
    """The read-back check covers every switch a mode writes, not only the
    mode's own: an "off" run that found contpte_early_exit on is left out."""
    w = workloads.BY_NAME["file-reclaim"]
    knobs = {f"foliobatch/{s}": "0" for s in workloads.shown_switches("arm64")}
    rec = {"arch": "arm64", "knobs": dict(knobs), "foliobatch_dir": 1}
    switches = tuple(workloads.shown_switches("arm64"))
    assert not [p for p in bench.state_problems(w, "patched", "off", rec)
                if p.startswith(switches)]
    rec["knobs"]["foliobatch/contpte_early_exit"] = "1"
    why = bench.state_problems(w, "patched", "off", rec)
    assert any(p.startswith("contpte_early_exit reads 1") for p in why), why


def test_stock_plan_never_touches_switches():
    text = workloads.plan(workloads.WORKLOADS, 1, "stock", quick=False)
    assert "lab_switch" not in text
    assert all(l.split()[2] == "stock" for l in text.splitlines()
               if l.startswith("lab_bench"))


def test_file_reclaim_measures_each_switch_alone_and_both():
    w = workloads.BY_NAME["file-reclaim"]
    assert w.modes["referenced"] == {"referenced_batch": 1, "unmap_batch": 0}
    assert w.modes["unmap"] == {"referenced_batch": 0, "unmap_batch": 1}
    assert set(w.modes) == {"off", "referenced", "unmap", "on"}


def rec(workload, mode, rep, t, flavour="patched", arch="x86_64", **metrics):
    return {"workload": workload, "mode": mode, "rep": rep, "exit": 0,
            "total_ns": t + 5, "metrics": dict(time_ns=t, **metrics), "vmstat": {},
            "irq": {}, "mthp": {}, "flavour": flavour, "arch": arch, "wall_s": 1.0,
            "scale": "s"}


def test_parse_runs_takes_wall_time_between_markers(tmp_path):
    line = "BENCH " + json.dumps(rec("pt-reclaim", "on", 0, 100))
    b = run.Boot(Path(tmp_path / "c"), 0, True, False, 10.0,
                 stamps=[(1.0, "BENCH-START pt-reclaim on 0"), (3.5, line)])
    runs = bench.parse_runs(b, {"arch": "x86_64"})
    assert runs[0]["wall_s"] == 2.5 and runs[0]["arch"] == "x86_64"


def test_spread_and_instruction_time():
    assert bench.spread([100, 101, 99]) == 0.02
    r = rec("bigheap", "on", 0, 0)
    del r["metrics"]["time_ns"]
    assert bench.instr_time(r) == 5          # falls back to benchrun's total


def test_report_change_and_off_vs_stock(tmp_path):
    w = workloads.BY_NAME["pt-reclaim"]
    runs = [rec("pt-reclaim", "off", i, 1000, vmpte_after_kb=4144) for i in range(2)]
    runs += [rec("pt-reclaim", "on", i, 500, vmpte_after_kb=48) for i in range(2)]
    runs += [rec("pt-reclaim", "stock", i, 1010, "stock", vmpte_after_kb=4144)
             for i in range(2)]
    groups = stats.summarize(runs)
    md = tables.markdown(groups, [w], "x86_64", lambda s: True)
    assert "| pt-reclaim | instruction-time |" in md and "-50.0%" in md
    # switch off's runs (1000, 1000) and stock's (1010, 1010) do not overlap
    text, ok = tables.off_vs_stock(groups, "x86_64", w)
    assert ok is False and "-0.99% (ranges apart)" in text
    runs[-1]["metrics"]["time_ns"] = 1000
    text, ok = tables.off_vs_stock(stats.summarize(runs), "x86_64", w)
    assert ok and "ranges overlap" in text
    runs[-1]["metrics"]["vmpte_after_kb"] = 48
    runs[-2]["metrics"]["vmpte_after_kb"] = 48
    text, ok = tables.off_vs_stock(stats.summarize(runs), "x86_64", w)
    assert ok is False and "VmPTE" in text
    runs[-2]["metrics"]["vmpte_after_kb"] = 4144
    runs[-1]["metrics"]["vmpte_after_kb"] = 4144
    runs[0]["metrics"]["time_ns"] = 2000         # off runs now vary by ±33%
    text, ok = tables.off_vs_stock(stats.summarize(runs), "x86_64", w)
    assert ok is None and "vary" in text


def test_one_run_each_is_marked_not_judged_as_repeatable():
    # --min-repeats 1 --repeats 1: a change and a switch-off verdict on one
    # run each say so, since nothing shows whether the workload repeats
    w = workloads.BY_NAME["pt-reclaim"]
    runs = [rec("pt-reclaim", "off", 0, 1000, vmpte_after_kb=4144),
            rec("pt-reclaim", "on", 0, 500, vmpte_after_kb=48),
            rec("pt-reclaim", "stock", 0, 1200, "stock", vmpte_after_kb=4144)]
    groups = stats.summarize(runs)
    md = tables.markdown(groups, [w], "x86_64", lambda s: True)
    assert "-50.0% (one run: spread unknown)" in md
    assert "| pt-reclaim | DIFFERS (one run): ranges apart | instruction-time |" in md
    text, ok = tables.off_vs_stock(groups, "x86_64", w)
    assert ok is False and "one run on a side" in text


def test_report_writes_markdown_html_and_png(tmp_path):
    runs = [rec("mremap-4k", m, i, 1000 + i, flavour=f)
            for i in range(2) for m, f in (("off", "patched"), ("on", "patched"),
                                           ("stock", "stock"))]
    page = report.write(tmp_path, runs, [workloads.BY_NAME["mremap-4k"]], ["x86_64"],
                        lambda s: False)
    assert page.exists() and (tmp_path / "workloads.png").stat().st_size > 1000
    assert "not in series" in (tmp_path / "report.md").read_text()


def test_kprobe_counts_are_a_source_like_vmstat():
    from lab.outputs import report
    rec = {"metrics": {}, "total_ns": 1, "kprobe": {"flushdirty": 7}}
    assert stats.value(rec, "kprobe", "flushdirty") == 7
    assert stats.value({"metrics": {}, "total_ns": 1}, "kprobe", "flushdirty") == 0


def test_plan_arms_the_mechanism_kprobes_only_in_probe_runs():
    w = workloads.BY_NAME["mremap-64k"]
    lines = workloads.plan([w], 2, "patched", quick=True, arch_name="arm64").splitlines()
    assert "lab_kprobe contpte_try_unfold __contpte_try_unfold" in lines
    assert "lab_kprobe contpte_try_fold __contpte_try_fold" in lines
    disarm, arm = lines.index("lab_kprobes_arm 0"), lines.index("lab_kprobes_arm 1")
    runs = [(i, l.split()[2:4]) for i, l in enumerate(lines) if l.startswith("lab_bench")]
    timed = [i for i, (_, r) in runs if r != str(workloads.PROBE_REP)]
    probed = [(i, m) for i, (m, r) in runs if r == str(workloads.PROBE_REP)]
    # kprobes are disarmed before every measured run and armed for the probes
    assert all(disarm < i < arm for i in timed)
    assert [m for _, m in probed] == ["off", "on"] and all(i > arm for i, _ in probed)
    # x86 has no contpte: no kprobe and no probe run for this workload
    x86 = workloads.plan([w], 2, "patched", quick=True, arch_name="x86_64")
    assert "lab_kprobe" not in x86 and str(workloads.PROBE_REP) not in x86
    # the extra boots of noisy measurements (rep0 > 0) run no probes again
    later = workloads.plan([w], 2, "patched", quick=True, rep0=2, arch_name="arm64")
    assert "lab_kprobes_arm 1" not in later


def probe(workload, mode, flavour="patched", arch="arm64", **kprobe):
    r = rec(workload, mode, workloads.PROBE_REP, 9999, flavour=flavour, arch=arch)
    r.update(probe=True, kprobe=kprobe, vmstat={"pswpout": 620})
    return r


def test_probe_runs_are_kept_out_of_the_measurements():
    runs = [rec("mremap-64k", "on", 0, 1000, arch="arm64"),
            probe("mremap-64k", "on", contpte_try_unfold=3)]
    assert [len(v) for v in stats.summarize(runs).values()] == [1]
    assert stats.summarize(runs)[("arm64", "mremap-64k", "patched", "on")][0]["rep"] == 0
    assert len(stats.summarize(runs, probe=True)) == 1


def test_mechanism_table_has_the_limit_column():
    ws = [workloads.BY_NAME["mremap-64k"], workloads.BY_NAME["dirty-reclaim-1w"]]
    runs = [probe("mremap-64k", "stock", "stock", contpte_try_unfold=16007),
            probe("mremap-64k", "off", contpte_try_unfold=16007, contpte_try_fold=16013),
            probe("mremap-64k", "on"),
            probe("dirty-reclaim-1w", "off", flushdirty=600),
            probe("dirty-reclaim-1w", "on", flushdirty=25)]
    md = tables.mechanism_table(stats.summarize(runs, probe=True), ws, "arm64")
    # off / on and on / limit need a non-zero divisor
    assert "| mremap-64k | contpte unfolds: __contpte_try_unfold() calls | 16,007 | " \
        "16,007 | 0 | - | 0 | - |" in md
    # one flush per 31 pages swapped out: 620 / 31 = 20; 600 / 25 = 24.0
    # times fewer flushes with the switch on, 25 / 20 = 1.2 times the limit
    assert "| dirty-reclaim-1w | reclaim TLB flushes: try_to_unmap_flush_dirty() " \
        "calls | - | 600 | 25 | 24.0 | 20 | 1.2 |" in md
    # a kprobe that no kernel could set leaves its row out; one that only
    # stock could not set (a function the series adds) is n/a there
    for r in runs:
        r["kprobe_failed"] = ["__contpte_try_fold"]
    runs[0]["kprobe_failed"].append("__contpte_try_unfold")
    md = tables.mechanism_table(stats.summarize(runs, probe=True), ws, "arm64")
    assert "__contpte_try_fold" not in md
    assert "| mremap-64k | contpte unfolds: __contpte_try_unfold() calls | n/a | " \
        "16,007 | 0 | - | 0 | - |" in md
    assert tables.mechanism_table(stats.summarize(runs, probe=True), ws, "x86_64") \
        .count("| mremap-64k") == 0


def test_counters_an_arch_does_not_show_are_left_out_with_a_note():
    w = workloads.BY_NAME["pt-reclaim"]
    runs = [rec("pt-reclaim", m, 0, 1000, flavour=f, arch="arm64", vmpte_after_kb=48)
            for m, f in (("off", "patched"), ("on", "patched"), ("stock", "stock"))]
    for r in runs:
        r["irq"] = {"IPI1": 20}
    md = tables.markdown(stats.summarize(runs), [w], "arm64", lambda s: True)
    assert "IPI1 function call (arm64)" in md
    assert "| pt-reclaim | TLB shootdowns (x86) |" not in md
    assert "Counters left out on arm64" in md and "TLB shootdowns (x86)" in md


def test_report_lays_out_a_grid_and_a_summary_chart(tmp_path):
    ws = [workloads.BY_NAME[n] for n in ("mremap-64k", "mremap-4k", "pt-reclaim", "bigheap")]
    runs = [rec(w.name, m, i, 1000 - 300 * (m == "on"), flavour=f, arch="arm64")
            for w in ws for i in range(2)
            for m, f in (("off", "patched"), ("on", "patched"), ("stock", "stock"))]
    report.write(tmp_path, runs, ws, ["arm64"], lambda s: True)
    assert (tmp_path / "summary.png").stat().st_size > 0
    assert stats.ratios(stats.summarize(runs), ws, "arm64")["mremap-64k"] == 0.7
    assert "![change per workload](summary.png)" in (tmp_path / "report.md").read_text()


def test_workloads_with_other_boot_arguments_get_boots_of_their_own():
    ws = [workloads.BY_NAME[n] for n in ("mremap-64k", "dirty-reclaim-8cpu", "pt-reclaim")]
    groups = bench.boot_groups(ws)
    assert [(extra, [w.name for w in g]) for extra, g in groups] == [
        ({}, ["mremap-64k", "pt-reclaim"]), ({"cpus": 8}, ["dirty-reclaim-8cpu"])]


def _boot_once(tmp_path, monkeypatch, arch_name, w):
    """The run.boot() arguments of one bench boot of w, with a fake boot."""
    seen = {}

    def boot(spec, echo=None):
        seen.update(dataclasses.asdict(spec))
        return run.Boot(tmp_path / "c", 0, True, False, 1.0, stamps=[])

    monkeypatch.setattr(bench.run, "boot", boot)
    monkeypatch.setattr(bench.build, "image_path", lambda *a: tmp_path / "Image")
    (tmp_path / "c").write_text("LAB-READY: 6.12.117-patched\n")
    bench.boot_bench(arch_name, "patched", [w], 1, True, 0, tmp_path, {})
    return seen


def test_an_8_vcpu_boot_is_named_and_booted_with_8_cpus(tmp_path, monkeypatch):
    seen = _boot_once(tmp_path, monkeypatch, "x86_64", workloads.BY_NAME["dirty-reclaim-8cpu"])
    assert seen["cpus"] == 8 and seen["icount"] and seen["name"] == \
        "x86_64-bench-patched-cpus8-r0"


def test_the_cortex_a72_workload_boots_that_cpu_on_arm64_only(tmp_path, monkeypatch):
    w = workloads.BY_NAME["file-reclaim-pte2m-a72"]
    assert w.runs_on("arm64") and not w.runs_on("x86_64")
    assert workloads.BY_NAME["file-reclaim"].runs_on("x86_64")
    assert "pte2m" in w.argv and "pte2m" in w.quick
    seen = _boot_once(tmp_path, monkeypatch, "arm64", w)
    assert seen["cpu"] == "cortex-a72" and seen["icount"]
    assert seen["name"] == "arm64-bench-patched-cpucortex-a72-r0"


def test_bench_refuses_a_named_workload_of_no_chosen_arch():
    import pytest
    from lab.core.util import LabError
    with pytest.raises(LabError, match="not a workload for x86_64"):
        bench.main(["x86_64"], ["file-reclaim-pte2m-a72"], quick=True)


def test_lab_report_remakes_a_report_from_runs_json(tmp_path):
    from lab import cli
    runs = [rec("mremap-4k", m, 0, 1000, flavour=f)
            for m, f in (("off", "patched"), ("on", "patched"), ("stock", "stock"))]
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    assert cli.main(["report", str(tmp_path)]) == 0
    assert "| mremap-4k | instruction-time |" in (tmp_path / "report.md").read_text()
    runs[0]["workload"] = "no-such-workload"
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    assert cli.main(["report", str(tmp_path)]) == cli.LAB_ERROR
    assert cli.main(["report", str(tmp_path / "missing")]) == cli.LAB_ERROR


def test_a_mechanism_counts_the_functions_called_in_its_place():
    """anon_unmap_batch takes a swap reference per folio with
    swap_duplicate_nr() in place of swap_duplicate() per PTE: the row counts
    both, and both are armed; stock, which cannot probe the new function,
    counts the old one."""
    w = workloads.BY_NAME["anon-pageout-64k-zero"]
    plan = workloads.plan([w], 2, "patched", quick=True, arch_name="arm64")
    assert "lab_kprobe swap_duplicate swap_duplicate\n" in plan
    assert "lab_kprobe swap_duplicate_nr swap_duplicate_nr\n" in plan
    runs = [probe("anon-pageout-64k-zero", "stock", "stock", swap_duplicate=24576),
            probe("anon-pageout-64k-zero", "off", swap_duplicate=24576),
            probe("anon-pageout-64k-zero", "on", swap_duplicate_nr=1536)]
    runs[0]["kprobe_failed"] = ["swap_duplicate_nr"]
    row = "| anon-pageout-64k-zero | swap references: swap_duplicate() calls, " \
        "swap_duplicate_nr() with the switch on | "
    md = tables.mechanism_table(stats.summarize(runs, probe=True), [w], "arm64")
    assert row + "24,576 | 24,576 | 1,536 | 16.0 |" in md
    # the patched kernel could not probe the function it calls instead:
    # its calls were not counted, not zero
    for r in runs[1:]:
        r["kprobe_failed"] = ["swap_duplicate_nr"]
        r["kprobe"].pop("swap_duplicate_nr", None)
    md = tables.mechanism_table(stats.summarize(runs, probe=True), [w], "arm64")
    assert row + "24,576 | n/a | n/a | - |" in md


def test_icount_boots_turn_the_hung_task_detector_off(tmp_path):
    """Under -icount sleep=off guest time runs ahead during I/O waits: an
    instruction-timed boot turns the hung-task detector off on its command
    line; a test boot (no -icount) keeps it."""
    from lab.guest import run
    k, i = tmp_path / "k", tmp_path / "i"
    on = run.qemu_cmd("x86_64", k, i, mem_mb=2048, cpus=2, append="x=1", icount=True)
    off = run.qemu_cmd("x86_64", k, i, mem_mb=2048, cpus=2, append="x=1")
    line = on[on.index("-append") + 1]
    assert run.ICOUNT_APPEND in line and "x=1" in line
    assert "-icount" in on
    assert run.ICOUNT_APPEND not in off[off.index("-append") + 1]


# With stock, each kernel's first repeats come from two boots, so that the
# check of switch off against stock sees what two boots of one kernel differ
# by; without stock (switch on against off, same boot) one boot holds them.
def test_a_stock_bench_shares_the_first_repeats_of_each_kernel_between_two_boots(
        tmp_path, monkeypatch):
    assert bench.first_boots(3, True) == [(2, 0), (1, 2)]
    assert bench.first_boots(4, True) == [(2, 0), (2, 2)]
    assert bench.first_boots(3, False) == [(3, 0)]
    assert bench.first_boots(1, True) == [(1, 0)]
    booted = []

    def boot_bench(arch_name, flavour, ws, reps, quick, rep0, *a, **k):
        booted.append((flavour, reps, rep0))
        runs = [{"workload": w.name, "flavour": flavour, "mode": m, "rep": r,
                 "instr_ns": 1000, "probe": False}
                for w in ws for m in (w.modes if flavour == "patched" else ["stock"])
                for r in range(rep0, rep0 + reps)]
        return runs, {"name": f"{flavour}-r{rep0}"}

    monkeypatch.setattr(bench, "boot_bench", boot_bench)
    monkeypatch.setattr(bench, "instr_time", lambda r: r["instr_ns"])
    w = workloads.BY_NAME["mremap-64k"]
    sink = bench.Sink(tmp_path)
    runs = bench.bench_group("x86_64", [w], 3, 3, True, tmp_path, {}, sink)
    assert booted == [("patched", 2, 0), ("patched", 1, 2), ("stock", 2, 0), ("stock", 1, 2)]
    assert sorted(r["rep"] for r in runs if r["flavour"] == "stock") == [0, 1, 2]
    booted.clear()
    bench.bench_group("x86_64", [w], 3, 3, True, tmp_path, {}, bench.Sink(tmp_path),
                      flavours=("patched",))
    assert booted == [("patched", 3, 0)]
