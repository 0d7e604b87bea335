# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests: a bench mode is the state the guest read back, not a
label; bench consoles are scanned for kernel reports; the report lists what
it left out and computes the rates the README quotes."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.commands import bench, reportdir
from lab.core import config
from lab.core.util import LabError
from lab.guest import run, workloads
from lab.outputs import report, stats, tables

REPO = Path(__file__).resolve().parent.parent
SWITCHES = config.SWITCHES
THP = "transparent_hugepage"


def knobs(thp="none", lru=None, sizes=("16kB", "64kB", "2048kB"), **switches):
    """benchrun's read-back of a patched kernel after 'lab_thp_only thp'
    and a mode's switches: every switch 0 unless given (a mode writes
    every switch, the others off: Workload.settings())."""
    k = {f"foliobatch/{s}": str(switches.get(s, 0)) for s in SWITCHES}
    k[f"{THP}/enabled"] = "never"
    for size in sizes:
        k[f"{THP}/hugepages-{size}/enabled"] = "always" if size == thp else "never"
    if lru is not None:
        k["lru_gen/enabled"] = lru
    return k


def rec(workload, mode, rep, t=1000, flavour="patched", exit=0, state=None, **metrics):
    r = {"workload": workload, "mode": mode, "rep": rep, "exit": exit, "arch": "x86_64",
         "flavour": flavour,
         "total_ns": t, "metrics": dict(time_ns=t, **metrics), "vmstat": {},
         "irq": {}, "mthp": {}, "kprobe": {}}
    if flavour == "stock":
        state = state if state is not None else {
            k: v for k, v in knobs().items() if not k.startswith("foliobatch/")}
        r.update(foliobatch_dir=0, knobs=state)
    else:
        r.update(foliobatch_dir=1, knobs=state if state is not None else knobs())
    return r


def mremap4k(mode, rep, **kw):
    sw = {"mremap_batch": 0 if mode == "off" else 1}
    state = kw.pop("state", None)
    flavour = kw.get("flavour", "patched")
    if state is None and flavour == "patched":
        state = knobs(**sw)
    return rec("mremap-4k", mode, rep, state=state, **kw)


def console(lines):
    """A bench boot's console text and its run.Boot stamps."""
    text = "LAB-READY: 6.12.117-patched\n" + "\n".join(lines) + "\nLAB-EXIT: 0\n"
    stamps = [(float(i), l) for i, l in enumerate(lines) if l.startswith("BENCH")]
    return text, stamps


def bench_lines(*recs, before=None):
    """The plan's output for runs: BENCH-START and BENCH lines, with the
    lines before[i] printed by run i's setup."""
    out = []
    for i, r in enumerate(recs):
        out += (before or {}).get(i, [])
        out += [f"BENCH-START {r['workload']} {r['mode']} {r['rep']}",
                "BENCH " + json.dumps(r)]
    return out


def fake_boot(monkeypatch, tmp_path, lines, stock_lines=(), exit_code=0):
    """run.boot() gives consoles of these lines (patched) and stock_lines,
    whose plan ended with LAB-EXIT exit_code."""

    def boot(spec, echo=None):
        name = spec.name
        text, stamps = console(stock_lines if "-stock" in name else lines)
        text = text.replace("LAB-EXIT: 0", f"LAB-EXIT: {exit_code}")
        c = tmp_path / f"console-{name}.log"
        c.write_text(text)
        return run.Boot(c, exit_code, True, False, 1.0, stamps=stamps)

    monkeypatch.setattr(bench.run, "boot", boot)
    monkeypatch.setattr(bench.build, "image_path", lambda *a: tmp_path / "Image")


def boot_once(monkeypatch, tmp_path, lines, flavour="patched", exit_code=0):
    fake_boot(monkeypatch, tmp_path, lines, lines, exit_code)
    return bench.boot_bench("x86_64", flavour, [workloads.BY_NAME["mremap-4k"]], 1, True, 0,
                            tmp_path, {})


# A run whose setup printed "could not write" (lib.sh's lab_sysfs) is left
# out, with the line as the reason; the other runs of the boot are kept.
def test_a_run_whose_setup_could_not_write_a_knob_is_left_out(tmp_path, monkeypatch):
    bad = "# lab: could not write '0' to /sys/kernel/mm/foliobatch/mremap_batch"
    kept, boot = boot_once(monkeypatch, tmp_path,
                           bench_lines(mremap4k("off", 0), mremap4k("on", 0),
                                       before={1: [bad]}))
    assert [(r["mode"], r["rep"]) for r in kept] == [("off", 0)]
    assert boot["runs"] == 1
    assert boot["excluded"] == [{"workload": "mremap-4k", "mode": "on", "rep": 0,
                                 "excluded": [bad]}]
    saved = json.loads((tmp_path / "runs" / "x86_64-patched-mremap-4k-on-r0.json")
                       .read_text())
    assert saved["excluded"] == [bad]


# The failure line of the kprobe set-up (printed before the first run) is
# not a run's setup failure: its mechanism row goes, the run stays.
def test_a_kprobe_that_could_not_be_set_leaves_the_runs_in(tmp_path, monkeypatch):
    kept, boot = boot_once(monkeypatch, tmp_path, bench_lines(
        mremap4k("off", 0), mremap4k("on", 0),
        before={0: ["# lab: could not set a kprobe on foo"]}))
    assert len(kept) == 2 and boot["excluded"] == []


# A run whose workload found a page without the word it stored there
# (dirtyreclaim's fixed form: swapped-out data that came back wrong) is
# left out and fails the bench, as any other run left out does
# (tests/test_bench_verdict.py).
def test_a_run_that_lost_stores_is_left_out_and_fails_the_bench(tmp_path, monkeypatch):
    kept, boot = boot_once(monkeypatch, tmp_path, bench_lines(
        mremap4k("off", 0, exit=2, lost_stores=3), mremap4k("on", 0)))
    assert [r["mode"] for r in kept] == ["on"]
    assert boot["excluded"][0]["excluded"] == ["exit 2", "lost stores (3)"]
    assert bench.verdict([boot]) == 1


# A run is its mode only when benchrun read back the mode's switches.
def test_a_run_whose_switch_reads_back_otherwise_is_left_out(tmp_path, monkeypatch):
    wrong = mremap4k("off", 0, state=knobs(mremap_batch=1))  # still 1
    kept, boot = boot_once(monkeypatch, tmp_path,
                           bench_lines(wrong, mremap4k("on", 0)))
    assert [r["mode"] for r in kept] == ["on"]
    assert boot["excluded"][0]["excluded"] == ["mremap_batch reads 1, mode off sets 0"]


def test_state_problems_per_knob():
    w64 = workloads.BY_NAME["mremap-64k"]
    assert bench.state_problems(w64, "patched", "on", rec(
        "mremap-64k", "on", 0, state=knobs("64kB", mremap_batch=1))) == []
    # a THP size the setup turned on reads never, another reads always
    got = bench.state_problems(w64, "patched", "on", rec(
        "mremap-64k", "on", 0, state=knobs("2048kB", mremap_batch=1)))
    assert got == ["THP 2048kB reads always, lab_thp_only 64kB sets never",
                   "THP 64kB reads never, lab_thp_only 64kB sets always"]
    # the top-level setting
    s = knobs("64kB", mremap_batch=1)
    s[f"{THP}/enabled"] = "always"
    assert bench.state_problems(w64, "patched", "on", rec(
        "mremap-64k", "on", 0, state=s)) == \
        ["THP enabled reads always, lab_thp_only 64kB sets never"]
    # a kernel without the size the workload needs
    assert bench.state_problems(w64, "patched", "on", rec(
        "mremap-64k", "on", 0, state=knobs("none", sizes=("2048kB",),
                                           mremap_batch=1))) == \
        ["no THP size 64kB"]
    # MGLRU: lru_gen/enabled reads a mask; y sets bit 0, n clears it
    wm, wf = workloads.BY_NAME["file-reclaim-mglru"], workloads.BY_NAME["file-reclaim"]
    on = dict(referenced_batch=1, mglru_young_batch=1, unmap_batch=1)
    assert bench.state_problems(wm, "patched", "on", rec(
        "file-reclaim-mglru", "on", 0, state=knobs(lru="0x0007", **on))) == []
    assert bench.state_problems(wm, "patched", "on", rec(
        "file-reclaim-mglru", "on", 0, state=knobs(lru="0x0000", **on))) == \
        ["lru_gen/enabled reads 0x0000, the setup sets y"]
    assert bench.state_problems(wf, "patched", "referenced", rec(
        "file-reclaim", "referenced", 0,
        state=knobs(lru="0x0007", referenced_batch=1))) == \
        ["lru_gen/enabled reads 0x0007, the setup sets n"]
    # every switch of a mode with several
    assert bench.state_problems(wf, "patched", "referenced", rec(
        "file-reclaim", "referenced", 0,
        state=knobs(lru="0x0000", referenced_batch=1, unmap_batch=1))) == \
        ["unmap_batch reads 1, mode referenced sets 0"]
    # a record without the read-back (a benchrun from before it) is not trusted
    r = rec("mremap-4k", "on", 0)
    del r["knobs"]
    assert bench.state_problems(workloads.BY_NAME["mremap-4k"], "patched", "on", r) == \
        ["no read-back of the knobs in the run's record"]


# On stock, a foliobatch directory means the boot was not the stock kernel;
# on the patched kernel, its absence means no switch was set.
def test_stock_has_no_foliobatch_directory(tmp_path, monkeypatch):
    good = mremap4k("stock", 0, flavour="stock")
    bad = mremap4k("stock", 1, flavour="stock")
    bad["foliobatch_dir"] = 1
    kept, boot = boot_once(monkeypatch, tmp_path, bench_lines(good, bad), "stock")
    assert [r["rep"] for r in kept] == [0]
    assert boot["excluded"][0]["excluded"] == ["stock kernel has /sys/kernel/mm/foliobatch"]
    w = workloads.BY_NAME["mremap-4k"]
    r = mremap4k("on", 0)
    r.update(foliobatch_dir=0, knobs={k: v for k, v in r["knobs"].items()
                                      if not k.startswith("foliobatch/")})
    assert bench.state_problems(w, "patched", "on", r) == ["no /sys/kernel/mm/foliobatch"]


# A run that exited non-zero is still left out, and now says so in the
# boot's list (the report's table of runs left out).
def test_a_failed_run_is_listed_with_its_exit(tmp_path, monkeypatch):
    kept, boot = boot_once(monkeypatch, tmp_path,
                           bench_lines(mremap4k("off", 0), mremap4k("on", 0, exit=3)))
    assert len(kept) == 1
    assert boot["excluded"][0]["excluded"] == ["exit 3"]


WARNING = ("[   42.123456] WARNING: CPU: 1 PID: 77 at mm/rmap.c:1234 "
           "try_to_unmap_one+0x1/0x2")


# Every bench console is scanned for kernel reports: the boot records the
# count and the first line.
def test_a_bench_boot_counts_its_kernel_reports(tmp_path, monkeypatch):
    lines = bench_lines(mremap4k("off", 0), mremap4k("on", 0))
    lines.insert(1, WARNING)
    lines.insert(2, "[   42.123500] ------------[ cut here ]------------")
    _, boot = boot_once(monkeypatch, tmp_path, lines)
    assert boot["kernel_reports"] == 2 and boot["first_report"] == WARNING
    # a program that prints WARNING itself is not a kernel report
    _, boot = boot_once(monkeypatch, tmp_path,
                        ["WARNING: not the kernel"] + bench_lines(mremap4k("off", 0)))
    assert boot["kernel_reports"] == 0 and boot["first_report"] == ""


def no_host_work(monkeypatch, tmp_path):
    """bench.main() with WORK in tmp_path and nothing fetched, built or
    checked on the host: no dependency check, source, kernel or image."""
    monkeypatch.setattr(bench.config, "WORK", tmp_path)
    monkeypatch.setattr(bench.deps, "check", lambda: None)
    for name, fn in (("apply", lambda: None), ("series_hash", lambda: "s"),
                     ("base_version", lambda: "6.12")):
        monkeypatch.setattr(bench.source, name, fn)
    monkeypatch.setattr(bench.build, "build", lambda *a, **k: None)
    monkeypatch.setattr(bench.build, "build_ahead", lambda *a: None)
    monkeypatch.setattr(bench.build, "config_hash", lambda *a: "c")
    monkeypatch.setattr(bench.image, "build", lambda *a: None)
    monkeypatch.setattr(bench.run, "qemu_version", lambda *a: "q")


def _main_once(tmp_path, monkeypatch, lines):
    """bench.main() on x86_64 for mremap-4k, quick, one repeat, with the
    patched boot's console made of lines, a clean stock boot, nothing built."""
    fake_boot(monkeypatch, tmp_path, lines,
              bench_lines(mremap4k("stock", 0, flavour="stock")))
    no_host_work(monkeypatch, tmp_path)
    rc = bench.main(["x86_64"], ["mremap-4k"], quick=True, repeats=1, min_repeats=1,
                    stock=True)
    out = next((tmp_path / "results").iterdir())
    return rc, out, (out / "report.md").read_text()


# 'lab bench' exits 1 when a bench console holds a kernel report, and the
# report names the boot, the count and the first line; a clean bench
# exits 0 with a count of 0 for each boot.
def test_bench_exits_non_zero_on_a_kernel_report(tmp_path, monkeypatch):
    runs = [mremap4k("off", 0), mremap4k("on", 0)]
    rc, out, md = _main_once(tmp_path / "a", monkeypatch, bench_lines(*runs))
    assert rc == 0
    assert "| x86_64-bench-patched-r0 | 2 | 0 | 0 | - |" in md
    (tmp_path / "b").mkdir()
    rc, out, md = _main_once(tmp_path / "b", monkeypatch, [WARNING] + bench_lines(*runs))
    assert rc == 1
    assert f"| x86_64-bench-patched-r0 | 2 | 0 | 1 | {WARNING} |" in md
    assert json.loads((out / "boots.json").read_text())[0]["kernel_reports"] == 1


# The report lists each run left out, its boot and why; 'lab report DIR'
# makes the same list again from boots.json.
def _report_again(out):
    """'lab report DIR' refuses the directory of a failed bench (its
    manifest says so); the report made again from its runs.json and
    boots.json, as report.md's text."""
    with pytest.raises(LabError, match="its bench failed"):
        reportdir.report_dir(out)
    runs = json.loads((out / "runs.json").read_text())
    report.write(out, runs, *workloads.of_runs(runs, out), bench.in_series,
                 json.loads((out / "boots.json").read_text()))
    return (out / "report.md").read_text()


def test_report_lists_the_runs_left_out(tmp_path, monkeypatch):
    bad = "# lab: could not write 'never' to /sys/kernel/mm/transparent_hugepage/enabled"
    runs = [mremap4k("off", 0), mremap4k("on", 0), mremap4k("off", 1, exit=1)]
    rc, out, md = _main_once(tmp_path, monkeypatch,
                             bench_lines(*runs, before={1: [bad]}))
    assert "### Runs left out" in md
    assert f"| x86_64-bench-patched-r0 | mremap-4k | on | 0 | {bad} |" in md
    assert "| x86_64-bench-patched-r0 | mremap-4k | off | 1 | exit 1 |" in md
    assert "| x86_64-bench-patched-r0 | 1 | 2 | 0 | - |" in md
    (out / "report.md").unlink()
    assert f"| mremap-4k | on | 0 | {bad} |" in _report_again(out)


# benchrun itself: the knobs it reads back are the files' settings (on this
# host: no foliobatch directory, the THP settings it has).
def test_benchrun_reads_back_the_knobs(tmp_path):
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed to build guest/bench/benchrun.c on the host"
    exe = tmp_path / "benchrun"
    subprocess.run([gcc, "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE",
                    f"-I{REPO}/guest/include", str(REPO / "guest/bench/benchrun.c"),
                    str(REPO / "guest/lib/lab.c"), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe), "w", "m", "0", "--", "/bin/true"],
                         capture_output=True, text=True).stdout
    r = json.loads(out.splitlines()[-1][len("BENCH "):])
    mm = Path("/sys/kernel/mm")
    assert r["foliobatch_dir"] == int((mm / "foliobatch").is_dir())

    def setting(f):
        t = f.read_text()
        return t[t.index("[") + 1:t.index("]")] if "[" in t else t.strip()

    want = {str(f.relative_to(mm)): setting(f) for pat in (
        "foliobatch/*", f"{THP}/enabled", f"{THP}/hugepages-*/enabled",
        "lru_gen/enabled") for f in mm.glob(pat)}
    assert r["knobs"] == want


BOGO = "bogo ops per instruction-second"


def dirty(mode, rep, t, bogo, scale, flavour="patched", arch="x86_64"):
    r = rec("dirty-reclaim", mode, rep, t, flavour, bogo_ops=bogo)
    r.update(arch=arch, scale=scale)
    return r


# The 2-worker dirty-reclaim rates of the README's quick-scale table: runs
# recorded before dirtyreclaim counted stress-ng's operations once (bogo_ops
# 200 for 100 ops in all, their scale "100 ops each") give the same rates as
# runs recorded after (bogo_ops 100): 35.4 -> 44.6 per second, +25.9%.
def test_bogo_ops_rates_count_stress_ngs_operations_once():
    old = "2 workers, 256 MB, memory.high 64 MB, 100 ops each"
    new = "2 workers, 256 MB, memory.high 64 MB, 100 ops in all"
    w = workloads.BY_NAME["dirty-reclaim"]
    for scale, bogo in ((old, 200), (new, 100)):
        runs = [dirty("off", 0, 2_825_000_000, bogo, scale),
                dirty("on", 0, 2_243_840_000, bogo, scale),
                dirty("stock", 0, 2_800_000_000, bogo, scale, "stock")]
        md = tables.markdown(stats.summarize(runs), [w], "x86_64", lambda s: True)
        row = next(l for l in md.splitlines() if BOGO in l)
        assert "| 35.7 | 35.4 | on | 44.6 | +25.9% (one run: spread unknown) |" in row, row
    # 8 workers of 200 ops recorded as 1,600 (the scale said "200 ops")
    r = dirty("off", 0, 1, 1600, "8 workers, 256 MB, memory.high 64 MB, 200 ops")
    assert stats.bogo_ops(r) == 200
    # one worker: the count is the ops either way
    assert stats.bogo_ops(dirty("off", 0, 1, 100, "1 worker, 128 MB, 100 ops")) == 100


# The rate row shows the runs' spread, as the README's "(they vary by up to
# 65%)" quotes it: ± half the min-max spread.
def test_bogo_ops_rate_shows_its_spread():
    scale = "2 workers, 256 MB, memory.high 64 MB, 100 ops in all"
    runs = [dirty("off", i, t, 100, scale) for i, t in enumerate((2e9, 3e9, 4e9))]
    md = tables.markdown(stats.summarize(runs), [workloads.BY_NAME["dirty-reclaim"]],
                         "x86_64", lambda s: True)
    row = next(l for l in md.splitlines() if BOGO in l)
    assert "| 33.3 (±37.5%) |" in row, row


# The switch-off check allows a compared counter 1% (of stock's median),
# and says so; a counter 2% away is a difference.
def test_off_vs_stock_counters_within_one_percent():
    w = workloads.BY_NAME["pt-reclaim"]

    def runs(off_kb):
        rs = [rec("pt-reclaim", "off", i, 1000, vmpte_after_kb=off_kb) for i in range(2)]
        rs += [rec("pt-reclaim", "stock", i, 1000, "stock", vmpte_after_kb=1000)
               for i in range(2)]
        for r in rs:
            r["arch"] = "x86_64"
        return stats.summarize(rs)

    text, ok = tables.off_vs_stock(runs(1010), "x86_64", w)
    assert ok is True and "VmPTE after (kB) +1.00% (within 1%)" in text, text
    assert "equal" not in text
    text, ok = tables.off_vs_stock(runs(1020), "x86_64", w)
    assert ok is False and "VmPTE after (kB) 1,020 vs 1,000" in text
    md = tables.markdown(runs(1010), [w], "x86_64", lambda s: True)
    assert "Each compared counter by its median: DIFFERS when it is more than 1% " \
        "from stock's, OK within" in md


# The README and the legend in docs/known-costs.md state the rule the
# code applies.
def test_readme_states_the_off_vs_stock_rule_of_the_code():
    text = " ".join((REPO / "README.md").read_text().split())
    assert ("DIFFERS (the ranges of switch off's and stock's runs do not overlap) or "
            f"no verdict (they overlap, and runs vary by more than "
            f"±{stats.SPREAD_TOLERANCE:.0%})" in text)
    legend = " ".join((REPO / "docs" / "known-costs.md").read_text().split())
    assert ("DIFFERS when the ranges (min..max) of switch off's and stock's runs, each "
            "side's from two boots, do not overlap, whatever their spread" in legend)
    assert (f"vary by more than ±{stats.SPREAD_TOLERANCE:.0%}" in legend)
    assert (f"more than {stats.COUNTER_TOLERANCE:.0%} from stock's" in legend)
    for t in (text, legend):
        assert "structural counters (VmPTE, pages reclaimed, folios faulted) are equal" \
            not in t
        assert "INCONCLUSIVE" not in t


@pytest.mark.parametrize("w", workloads.WORKLOADS, ids=lambda w: w.name)
def test_a_run_that_is_in_its_workloads_state_is_kept(w):
    # every workload's own setup, read back as benchrun reads it after
    # that setup, leaves nothing to object to in any mode: a setup line
    # the parser reads wrongly ("lab_thp_only none;") would leave out
    # every run of the workload
    thp, lru = bench.wanted_setup(w)
    assert thp is None or thp == "none" or thp.endswith("kB"), thp
    lru_knob = {"y": "0x0007", "n": "0x0000", None: None}[lru]
    for mode, switches in w.modes.items():
        state = knobs(thp=thp or "none", lru=lru_knob, **switches)
        r = rec(w.name, mode, 0, state=state)
        assert bench.state_problems(w, "patched", mode, r) == [], mode


def test_two_benches_started_in_the_same_second_get_two_directories(tmp_path):
    a = bench.new_outdir(tmp_path / "results", "bench-20261125-114741")
    b = bench.new_outdir(tmp_path / "results", "bench-20261125-114741")
    assert a != b and a.is_dir() and b.is_dir()
    assert b.name == "bench-20261125-114741-2"


def _main_two_arches(tmp_path, monkeypatch, arm64_boot):
    """bench.main() on x86_64 and arm64 for mremap-4k, quick, one repeat:
    x86_64's boots are clean, arm64's patched boot is arm64_boot(c)."""
    runs = [mremap4k("off", 0), mremap4k("on", 0)]
    stock = bench_lines(mremap4k("stock", 0, flavour="stock"))

    def boot(spec, echo=None):
        name = spec.name
        c = tmp_path / f"console-{name}.log"
        if spec.arch == "arm64" and "-patched" in name:
            return arm64_boot(c)
        text, stamps = console(stock if "-stock" in name else bench_lines(*runs))
        c.write_text(text)
        return run.Boot(c, 0, True, False, 1.0, stamps=stamps)

    monkeypatch.setattr(bench.run, "boot", boot)
    monkeypatch.setattr(bench.build, "image_path", lambda *a: tmp_path / "Image")
    no_host_work(monkeypatch, tmp_path)
    rc = bench.main(["x86_64", "arm64"], ["mremap-4k"], quick=True, repeats=1,
                    min_repeats=1, stock=True)
    out = next((tmp_path / "results").iterdir())
    return rc, out, (out / "report.md").read_text()


ARM64_MISSING = ["- arm64/patched mremap-4k off", "- arm64/patched mremap-4k on",
                 "- arm64/stock mremap-4k stock"]


# An arch whose boot fails does not take the other arch's runs with it:
# they are in runs.json and in the report, the failed arch's modes are
# listed as missing, and the command exits 1.
def test_a_failed_boot_keeps_the_other_arch_and_exits_1(tmp_path, monkeypatch):
    def dead(c):
        c.write_text("LAB-READY: 6.12.117-patched\nKernel panic - not syncing\n")
        return run.Boot(c, None, True, False, 1.0, stamps=[])

    rc, out, md = _main_two_arches(tmp_path, monkeypatch, dead)
    assert rc == 1
    kept = json.loads((out / "runs.json").read_text())
    assert {(r["arch"], r["mode"]) for r in kept} == {
        ("x86_64", "off"), ("x86_64", "on"), ("x86_64", "stock")}
    assert "### Missing" in md
    for line in ARM64_MISSING:
        assert line in md
    assert "x86_64/" not in md.split("### Missing")[1].split("###")[0]


# Ctrl-C while an arch still boots: the report is written from the runs
# finished so far, marks the rest missing, and the command exits 1; the
# same report is made again from the directory ('lab report DIR' refuses
# it: the bench failed).
def test_an_interrupted_bench_keeps_what_it_finished(tmp_path, monkeypatch):
    import threading
    release = threading.Event()

    def hang(c):
        release.wait(30)
        return run.Boot(c, None, False, False, 1.0, stamps=[])

    def join_then_interrupt(threads):
        threads[0].join()          # x86_64 finishes
        raise KeyboardInterrupt    # arm64 still in its patched boot

    monkeypatch.setattr(bench, "_join", join_then_interrupt)
    try:
        rc, out, md = _main_two_arches(tmp_path, monkeypatch, hang)
    finally:
        release.set()
    assert rc == 1
    for line in ARM64_MISSING:
        assert line in md
    assert "| mremap-4k | instruction-time |" in md
    (out / "report.md").unlink()
    again = _report_again(out)
    assert "### Missing" in again and "| mremap-4k | instruction-time |" in again


def test_progress_estimates_what_is_left_from_the_runs_so_far():
    assert bench.progress(2, 8, 120) == "2/8 runs, 2m00s, about 6m00s left"
    assert bench.progress(8, 8, 480) == "8/8 runs, 8m00s"
    assert bench.progress(0, 8, 5) == "0/8 runs, 0m05s"


def _stock_files(tmp_path, monkeypatch, kernel=b"stock kernel v1"):
    """A stock kernel and guest image to hash, and a stock boot that counts
    how often it was booted."""
    (tmp_path / "Image").write_bytes(kernel)
    (tmp_path / "base.cpio").write_bytes(b"image v1")
    monkeypatch.setattr(bench.image, "base_path", lambda a: tmp_path / "base.cpio")
    monkeypatch.setattr(bench.run, "qemu_version", lambda *a: "q")
    monkeypatch.setattr(bench.config, "WORK", tmp_path)
    booted = []
    real = bench.run.boot

    def counting(spec, echo=None):
        booted.append(spec.name)
        return real(spec, echo)

    monkeypatch.setattr(bench.run, "boot", counting)
    return booted


# A stock bench boot is stored and reused while its kernel, image, plan and
# QEMU are the same: the second bench boots nothing, keeps the same runs
# (with their host-time stamps) and names the stored boot; another kernel,
# or --no-cache, boots again.
def test_stock_bench_boot_is_reused_while_its_inputs_are_the_same(tmp_path, monkeypatch):
    stock = bench_lines(mremap4k("stock", 0, flavour="stock"))
    fake_boot(monkeypatch, tmp_path, stock, stock)
    booted = _stock_files(tmp_path, monkeypatch)
    ws = [workloads.BY_NAME["mremap-4k"]]
    kept1, boot1 = bench.boot_bench("x86_64", "stock", ws, 1, True, 0, tmp_path, {})
    assert booted == ["x86_64-bench-stock-r0"] and boot1["reused"] == ""
    kept2, boot2 = bench.boot_bench("x86_64", "stock", ws, 1, True, 0, tmp_path, {})
    assert booted == ["x86_64-bench-stock-r0"], "the stored stock boot was not reused"
    assert boot2["reused"].endswith(".json") and "stock-cache" in boot2["reused"]
    assert [r["metrics"] for r in kept2] == [r["metrics"] for r in kept1]
    assert [r["wall_s"] for r in kept2] == [r["wall_s"] for r in kept1]
    bench.boot_bench("x86_64", "stock", ws, 1, True, 0, tmp_path, {}, use_cache=False)
    assert len(booted) == 2
    (tmp_path / "Image").write_bytes(b"stock kernel v2")
    bench.boot_bench("x86_64", "stock", ws, 1, True, 0, tmp_path, {})
    assert len(booted) == 3
    # the patched kernel's boots are never reused
    bench.boot_bench("x86_64", "patched", ws, 1, True, 0, tmp_path, {})
    bench.boot_bench("x86_64", "patched", ws, 1, True, 0, tmp_path, {})
    assert booted[-2:] == ["x86_64-bench-patched-r0"] * 2


# A stock boot with a kernel report or a run left out is not stored, so no
# later bench reuses it.
def test_a_stock_bench_boot_with_a_report_or_a_failed_run_is_not_stored(tmp_path,
                                                                         monkeypatch):
    ws = [workloads.BY_NAME["mremap-4k"]]
    for lines in ([WARNING] + bench_lines(mremap4k("stock", 0, flavour="stock")),
                  bench_lines(mremap4k("stock", 0, flavour="stock", exit=1))):
        d = tmp_path / str(len(lines))
        d.mkdir()
        fake_boot(monkeypatch, d, lines, lines)
        booted = _stock_files(d, monkeypatch)
        bench.boot_bench("x86_64", "stock", ws, 1, True, 0, d, {})
        _, boot = bench.boot_bench("x86_64", "stock", ws, 1, True, 0, d, {})
        assert len(booted) == 2 and boot["reused"] == ""


# The report's boot table names the stored boot a stock boot reused.
def test_report_names_a_reused_stock_boot():
    boots = [{"name": "x86_64-bench-stock-r0", "runs": 1, "excluded": [],
              "kernel_reports": 0, "reused": "/w/stock-cache/x86_64-bench-stock-r0-ab.json"}]
    md = tables.boots_section(boots)
    assert "| x86_64-bench-stock-r0 | 1 | 0 | 0 | - | " \
           "/w/stock-cache/x86_64-bench-stock-r0-ab.json |" in md


# The dirty-reclaim probe runs trace the pageout batch and the reclaimed
# lists: the events are set up once, enabled only around probe runs, and
# the timed runs carry no tracing.
def test_batch_histograms_are_traced_in_probe_runs_only():
    text = bench.plan([bench.BY_NAME["dirty-reclaim-1w"]], 2, "patched", True,
                      arch_name="arm64")
    lines = text.splitlines()
    assert "lab_hist labh/pobatch 'shrink_pageout_batch nr=+16($arg1):u32'" in lines
    assert "lab_hist vmscan/mm_vmscan_lru_shrink_inactive" in lines
    starts = [i for i, l in enumerate(lines) if l == "lab_hist_start"]
    assert len(starts) == 2          # one probe run per mode
    for i in starts:
        assert lines[i + 1].startswith("lab_bench dirty-reclaim-1w ")
        assert lines[i + 1].split()[3] == str(bench.PROBE_REP)
        assert lines[i + 2] == f"lab_hist_dump dirty-reclaim-1w {lines[i + 1].split()[2]} " \
                               f"{bench.PROBE_REP}"
    # a workload without histograms gets none of it
    assert "lab_hist" not in bench.plan([bench.BY_NAME["mremap-4k"]], 1, "patched",
                                        True, arch_name="arm64")


TRACE = """# tracer: nop
#
       stress-ng-vm-123     [001] ..... 12.345678: pobatch: (shrink_pageout_batch+0x0/0x2a0) nr=31
       stress-ng-vm-123     [001] ..... 12.345700: pobatch: (shrink_pageout_batch+0x0/0x2a0) nr=10
     kswapd0-45      [000] d..1. 12.345800: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=10 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=3 nr_activate_file=0 nr_ref_keep=1 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC
  a task-9   [000] ..... 12.400000: pobatch: (shrink_pageout_batch+0x0/0x2a0) nr=31
     kswapd0-45      [000] d..1. 12.5: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=30 nr_reclaimed=20 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=1 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_ANON
"""


def _lib_function(name):
    """The shell function @name of guest/lib.sh, its text alone."""
    lib = (REPO / "guest" / "lib.sh").read_text()
    body = lib[lib.index(f"{name}() {{"):]
    return body[:body.index("\n}\n") + 3]


def _hist_dump(tmp_path):
    """lab.sh's lab_hist_dump on a synthetic trace instance."""
    i = tmp_path / "inst"
    for cpu, overrun in ((0, 2), (1, 0)):
        d = i / "per_cpu" / f"cpu{cpu}"
        d.mkdir(parents=True)
        (d / "stats").write_text(f"entries: 3\noverrun: {overrun}\n")
    (i / "trace").write_text(TRACE)
    (tmp_path / "lab-hist-events").write_text("")
    body = _lib_function("lab_hist_dump") \
        .replace("/sys/kernel/tracing/instances/lab", str(i)) \
        .replace("/tmp/lab-hist-events", str(tmp_path / "lab-hist-events"))
    p = subprocess.run(["sh", "-c", body + "\nlab_hist_dump dirty-reclaim on -1"],
                       capture_output=True, text=True)
    return p.stdout


# lab_hist_dump counts every numeric field of each event per value, and the
# events the ring buffer lost; parse_runs puts them in the probe run.
def test_hist_dump_counts_fields_per_value_and_parse_runs_keeps_them(tmp_path):
    out = _hist_dump(tmp_path).strip()
    assert out.startswith("BENCH-HIST {")
    h = json.loads(out[len("BENCH-HIST "):])
    assert h["lost"] == 2 and h["rep"] == -1
    assert h["hist"]["pobatch.nr"] == {"31": 2, "10": 1}
    assert h["hist"]["mm_vmscan_lru_shrink_inactive.nr_scanned"] == {"32": 1, "30": 1}
    r = rec("dirty-reclaim", "on", -1)
    text, stamps = console(["BENCH-START dirty-reclaim on -1", "BENCH " + json.dumps(r),
                            out])
    c = tmp_path / "c.log"
    c.write_text(text)
    stamps = [(float(n), l) for n, l in enumerate(text.splitlines()) if l.startswith("BENCH")]
    runs = bench.parse_runs(run.Boot(c, 0, True, False, 1.0, stamps=stamps), {})
    assert runs[0]["hist"]["pobatch.nr"] == {"31": 2, "10": 1} and runs[0]["hist_lost"] == 2


# The batch table: batches, mean size, full against ended by the list, the
# size buckets, and per list the folios isolated and what became of them.
def test_batch_table_gives_sizes_reasons_and_lists():
    hist = {"pobatch.nr": {"31": 2, "10": 1},
            "mm_vmscan_lru_shrink_inactive.nr_scanned": {"32": 1, "30": 1},
            "mm_vmscan_lru_shrink_inactive.nr_reclaimed": {"10": 1, "20": 1},
            "mm_vmscan_lru_shrink_inactive.nr_activate_anon": {"3": 1, "1": 1},
            "mm_vmscan_lru_shrink_inactive.nr_ref_keep": {"1": 1, "0": 1},
            "mm_vmscan_lru_shrink_inactive.nr_unmap_fail": {"0": 2}}
    on = dict(rec("dirty-reclaim", "on", -1), arch="arm64", hist=hist, hist_lost=0,
              probe=True)
    off = dict(rec("dirty-reclaim", "off", -1), arch="arm64", probe=True,
               hist={k: v for k, v in hist.items() if not k.startswith("pobatch")},
               hist_lost=0)
    probes = stats.summarize([on, off], probe=True)
    md = tables.batch_table(probes, [bench.BY_NAME["dirty-reclaim"]], "arm64")
    assert "| dirty-reclaim | on | 3 | 24.0 | 2 | 1 | 0 / 0 / 1 / 0 / 0 / 2 | " \
           "2 | 31.0 | 15.0 | 2.0 | 0.5 | 0.0 | 0 |" in md
    assert "| dirty-reclaim | off | 0 | - | - | - | - | 2 | 31.0 |" in md
    assert tables.batch_table(probes, [bench.BY_NAME["mremap-4k"]], "arm64") == ""


# A planned run that printed no BENCH line (the workload killed the guest,
# or the plan shell died before it) is listed as left out and fails the
# bench: a result that was expected and did not arrive.
def test_a_planned_run_that_never_reported_is_left_out_and_fails(tmp_path, monkeypatch):
    kept, boot = boot_once(monkeypatch, tmp_path, bench_lines(mremap4k("off", 0)))
    assert [r["mode"] for r in kept] == ["off"]
    assert boot["excluded"] == [{"workload": "mremap-4k", "mode": "on", "rep": 0,
                                 "excluded": [bench.NO_RESULT]}]
    assert bench.verdict([boot]) == 1


# A boot whose plan shell ended with a non-zero LAB-EXIT fails the bench,
# even when every planned run reported.
def test_a_bench_boot_with_a_non_zero_lab_exit_fails(tmp_path, monkeypatch):
    lines = bench_lines(mremap4k("off", 0), mremap4k("on", 0))
    kept, boot = boot_once(monkeypatch, tmp_path, lines, exit_code=139)
    assert len(kept) == 2 and boot["excluded"] == [] and boot["lab_exit"] == 139
    assert bench.verdict([boot]) == 1
    kept, boot = boot_once(monkeypatch, tmp_path, lines)
    assert bench.verdict([boot]) == 0


# The main job: a plain 'lab bench' runs the headline workloads of each
# arch (headline.toml) at the quick scale, 3 runs per mode; --full every
# workload that is not retired, at upstream's scale.
def _chosen(monkeypatch, tmp_path, arches, **kw):
    no_host_work(monkeypatch, tmp_path)
    seen = {}

    def bench_arch(arch_name, chosen, first, cap, quick, *a, **k):
        # what the real bench_arch() boots on the arch
        seen[arch_name] = ([w.name for w in chosen if w.runs_on(arch_name)], first, cap, quick)
    monkeypatch.setattr(bench, "bench_arch", bench_arch)
    monkeypatch.setattr(bench.report, "write", lambda *a, **k: tmp_path / "report.md")
    monkeypatch.setattr(bench, "verdict", lambda boots: 0)
    bench.main(arches, **kw)
    return seen


def test_the_main_job_runs_the_headline_set_of_each_arch_quick_three_times(
        tmp_path, monkeypatch):
    want = bench.headline_set()
    seen = _chosen(monkeypatch, tmp_path, ["x86_64", "arm64"])
    for arch in ("x86_64", "arm64"):
        names, first, cap, quick = seen[arch]
        assert set(names) == want[arch] and quick and first == cap == 3
    assert "read-mincore" in seen["arm64"][0] and "read-mincore" not in seen["x86_64"][0]


def test_full_runs_every_workload_not_retired_at_upstreams_scale(tmp_path, monkeypatch):
    seen = _chosen(monkeypatch, tmp_path, ["x86_64"], full=True)
    names, first, cap, quick = seen["x86_64"]
    on_x86 = {n for n in bench.default_names() if bench.BY_NAME[n].runs_on("x86_64")}
    assert set(names) == on_x86 and not quick and (first, cap) == (3, 7)
    assert "dirty-reclaim-8cpu" not in names        # retired


def test_full_with_named_workloads_is_a_usage_error(capsys):
    from lab import cli
    assert cli.main(["bench", "--full", "-w", "mremap-4k"]) == 2
    assert "--full runs every workload" in capsys.readouterr().err


def test_the_main_jobs_report_expects_a_workload_only_where_it_was_planned(
        tmp_path, monkeypatch):
    """mprotect-midfolio is a headline row of arm64 only: the report must
    not list it as planned and missing on x86_64 (it was, before)."""
    no_host_work(monkeypatch, tmp_path)
    monkeypatch.setattr(bench, "bench_arch", lambda *a, **k: None)
    monkeypatch.setattr(bench, "verdict", lambda boots: 0)
    seen = {}

    def write(outdir, runs, ws, arches, *a, **k):
        seen.update({w.name: w for w in ws})
        return tmp_path / "report.md"
    monkeypatch.setattr(bench.report, "write", write)
    bench.main(["x86_64", "arm64"])
    assert seen["mprotect-midfolio"].runs_on("arm64")
    assert not seen["mprotect-midfolio"].runs_on("x86_64")
    assert seen["mremap-64k"].runs_on("x86_64") and seen["mremap-64k"].runs_on("arm64")


def _kprobe_clone(tmp_path, func, symbols):
    """lib.sh's lab_kprobe_clone FUNC on a /proc/kallsyms of symbols."""
    (tmp_path / "proc").mkdir(exist_ok=True)
    (tmp_path / "proc" / "kallsyms").write_text(
        "".join(f"ffffffff81000000 {t} {s}\n" for t, s in symbols))
    p = subprocess.run(["sh", "-c", _lib_function("lab_kprobe_clone") +
                        f"\nlab_kprobe_clone {func}"],
                       capture_output=True, text=True, env={"LAB_SYSROOT": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


# A bench kprobe on a function gcc cloned (x86_64 has only
# mprotect_starts_large.constprop.0) probes the clone, as the guest tests'
# lab_kprobe_add() does; never a .cold or .part piece, another function
# whose name starts the same, or one of several clones.
def test_bench_kprobes_find_the_one_clone_of_a_function(tmp_path):
    f = "mprotect_starts_large"
    assert _kprobe_clone(tmp_path, f, [("t", f + ".constprop.0")]) == f + ".constprop.0"
    assert _kprobe_clone(tmp_path, f, [("T", f + ".isra.3.constprop.1")]) \
        == f + ".isra.3.constprop.1"
    assert _kprobe_clone(tmp_path, f, [("t", f + ".cold"), ("t", f + ".part.0"),
                                       ("t", f + "_x.constprop.0"),
                                       ("d", f + ".constprop.0")]) == ""
    assert _kprobe_clone(tmp_path, f, [("t", f + ".constprop.0"),
                                       ("t", f + ".constprop.1")]) == ""
