"""Host unit tests of the bench plan, run parsing and report."""

import json
from pathlib import Path

from lab import bench, report, run


def test_plan_alternates_mode_order_and_sets_switches():
    w = bench.BY_NAME["mremap-64k"]
    text = bench.plan([w], 2, "patched", quick=True)
    runs = [l for l in text.splitlines() if l.startswith("lab_bench")]
    assert [r.split()[2] for r in runs] == ["off", "on", "on", "off"]
    assert "lab_switch mremap_batch 0" in text and "lab_switch mremap_batch 1" in text
    assert "/lab/bench/mremap 1024 1000" in text           # quick scale
    # every switch is back on at the end of each repeat
    assert text.rstrip().splitlines()[-2] == "lab_switch mremap_batch 1"


def test_stock_plan_never_touches_switches():
    text = bench.plan(bench.WORKLOADS, 1, "stock", quick=False)
    assert "lab_switch" not in text
    assert all(l.split()[2] == "stock" for l in text.splitlines()
               if l.startswith("lab_bench"))


def test_file_reclaim_measures_each_switch_alone_and_both():
    w = bench.BY_NAME["file-reclaim"]
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
    w = bench.BY_NAME["pt-reclaim"]
    runs = [rec("pt-reclaim", "off", i, 1000, vmpte_after_kb=4144) for i in range(2)]
    runs += [rec("pt-reclaim", "on", i, 500, vmpte_after_kb=48) for i in range(2)]
    runs += [rec("pt-reclaim", "stock", i, 1010, "stock", vmpte_after_kb=4144)
             for i in range(2)]
    groups = report.summarize(runs)
    md = report.markdown(groups, [w], "x86_64", lambda s: True)
    assert "| pt-reclaim | instruction-time |" in md and "-50.0%" in md
    text, ok = report.off_vs_stock(groups, "x86_64", w)
    assert ok and "-0.99%" in text
    runs[-1]["metrics"]["vmpte_after_kb"] = 48
    runs[-2]["metrics"]["vmpte_after_kb"] = 48
    text, ok = report.off_vs_stock(report.summarize(runs), "x86_64", w)
    assert ok is False and "VmPTE" in text
    runs[0]["metrics"]["time_ns"] = 2000         # off runs now vary by 67%
    text, ok = report.off_vs_stock(report.summarize(runs), "x86_64", w)
    assert ok is None and "vary" in text


def test_report_writes_markdown_html_and_png(tmp_path):
    runs = [rec("mremap-4k", m, i, 1000 + i, flavour=f)
            for i in range(2) for m, f in (("off", "patched"), ("on", "patched"),
                                           ("stock", "stock"))]
    page = report.write(tmp_path, runs, [bench.BY_NAME["mremap-4k"]], ["x86_64"],
                        lambda s: False)
    assert page.exists() and (tmp_path / "x86_64.png").stat().st_size > 1000
    assert "not in series" in (tmp_path / "report.md").read_text()


def test_kprobe_counts_are_a_source_like_vmstat():
    from lab import report
    rec = {"metrics": {}, "total_ns": 1, "kprobe": {"flushdirty": 7}}
    assert report._value(rec, "kprobe", "flushdirty") == 7
    assert report._value({"metrics": {}, "total_ns": 1}, "kprobe", "flushdirty") == 0
