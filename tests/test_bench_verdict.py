# SPDX-License-Identifier: GPL-2.0-only
"""Host tests: 'lab bench' ends green only when every planned run of every
mode arrived with exit 0 and its switches read back what its mode set.
Each kind of failed run is planted in a synthetic console; the command
must exit non-zero, and the report ('lab bench' and 'lab report DIR'), the
history page and the README's headline must give the row no figure."""

import json
import re
import shutil

import pytest

from lab.commands import bench, reportdir
from lab.core import config
from lab.core.util import LabError
from lab.guest import workloads
from lab.outputs import headline, history, report, stats, tables
from test_bench_state import WARNING, bench_lines, console, knobs, mremap4k, no_host_work
from lab.guest import run

RESULTS = config.REPO / "docs" / "results"
REFUSED = "# lab: could not write '1' to /sys/kernel/mm/foliobatch/mremap_batch"


def _bench(tmp_path, monkeypatch, patched, stock=None, with_stock=True, built=None):
    """bench.main() on x86_64 for mremap-4k, quick, one repeat, with the
    patched boot's console made of the lines patched and the stock boot's
    of stock (default: one clean run); nothing built; with_stock: as 'lab
    bench --stock' (else no stock boot); built: a list that gets the
    kernels the bench asks to build.  (exit status, the bench directory,
    report.md)."""
    stock = stock if stock is not None else bench_lines(
        mremap4k("stock", 0, flavour="stock"))

    def boot(spec, echo=None):
        text, stamps = console(stock if "-stock" in spec.name else patched)
        c = tmp_path / f"console-{spec.name}.log"
        c.write_text(text)
        return run.Boot(c, 0, True, False, 1.0, stamps=stamps)

    monkeypatch.setattr(bench.run, "boot", boot)
    monkeypatch.setattr(bench.build, "image_path", lambda *a: tmp_path / "Image")
    no_host_work(monkeypatch, tmp_path)
    if built is not None:
        monkeypatch.setattr(bench.build, "build_ahead", built.extend)
    rc = bench.main(["x86_64"], ["mremap-4k"], quick=True, repeats=1, min_repeats=1,
                    use_cache=False, stock=with_stock)
    out = next((tmp_path / "results").iterdir())
    return rc, out, (out / "report.md").read_text()


def _rows(md, workload, mode):
    """The rows of the x86_64 table of workload in mode."""
    return [line for line in md.splitlines()
            if line.startswith(f"| {workload} |") and f"| {mode} |" in line
            and line.count("|") == 9]


def _no_figure(row, *words):
    """Whether a table row says FAILED and gives no number (its words aside:
    the workload's name and the mode)."""
    for w in words:
        row = row.replace(w, "")
    return "FAILED" in row and not re.search(r"\d", row)


def _assert_failed(md, mode):
    rows = _rows(md, "mremap-4k", mode)
    assert len(rows) == 1, rows
    assert _no_figure(rows[0], "mremap-4k"), rows[0]


def _check_row(md):
    return next(line for line in md.splitlines()
                if line.startswith("| mremap-4k |") and line.count("|") == 7)


# Each kind of failed run of the "on" mode: a non-zero exit, a signal
# (benchrun's 128 + the signal), a refused switch write before it, a run
# that never reported.  The bench exits 1, the "on" row says FAILED with
# no figure, in the report 'lab bench' writes and in the one made again
# from runs.json and boots.json; 'lab report DIR' refuses the directory,
# whose manifest records the failed bench.
@pytest.mark.parametrize("kind", ["exit", "signal", "refused write", "missing"])
def test_a_failed_run_fails_the_bench_and_its_row(tmp_path, monkeypatch, kind):
    off = mremap4k("off", 0)
    lines = {
        "exit": bench_lines(off, mremap4k("on", 0, exit=3)),
        "signal": bench_lines(off, mremap4k("on", 0, exit=128 + 11)),
        "refused write": bench_lines(off, mremap4k("on", 0), before={1: [REFUSED]}),
        "missing": bench_lines(off),
    }[kind]
    rc, out, md = _bench(tmp_path, monkeypatch, lines)
    assert rc != 0
    _assert_failed(md, "on")
    # the switch-off and stock runs are fine: the check still has its verdict
    assert "FAILED" not in _check_row(md)
    (out / "report.md").unlink()
    with pytest.raises(LabError, match="its bench failed"):
        reportdir.report_dir(out)
    report.write(out, json.loads((out / "runs.json").read_text()),
                 [workloads.BY_NAME["mremap-4k"]], ["x86_64"], bench.in_series,
                 json.loads((out / "boots.json").read_text()))
    _assert_failed((out / "report.md").read_text(), "on")


# A switch that reads back another value than the mode's: switch off's run
# read mremap_batch 1.  Every row of the workload is measured against
# switch off, so none gives a figure, nor does the check against stock.
def test_a_switch_that_reads_back_otherwise_fails_the_whole_workload(tmp_path,
                                                                      monkeypatch):
    wrong = mremap4k("off", 0, state=knobs(mremap_batch=1))
    rc, out, md = _bench(tmp_path, monkeypatch, bench_lines(wrong, mremap4k("on", 0)))
    assert rc != 0
    _assert_failed(md, "on")
    assert "| mremap-4k | every metric | - | FAILED | on | - | FAILED | |" in md
    assert "| mremap-4k | FAILED |" in _check_row(md)
    assert "mremap_batch reads 1, mode off sets 0" in md


# A stock run that failed fails the bench and the whole workload's row.
def test_a_failed_stock_run_fails_the_whole_workload(tmp_path, monkeypatch):
    rc, out, md = _bench(tmp_path, monkeypatch,
                         bench_lines(mremap4k("off", 0), mremap4k("on", 0)),
                         bench_lines(mremap4k("stock", 0, flavour="stock", exit=1)))
    assert rc != 0
    assert "| mremap-4k | every metric | FAILED | - | on | - | FAILED | |" in md
    assert "| mremap-4k | FAILED |" in _check_row(md)


# The clean bench exits 0 with figures.  A kprobe that could not be set on
# stock (which has no batched helper to probe) keeps its runs and the bench
# green; on the patched kernel, which has every function its mechanisms
# name, it is a count that did not arrive: the runs keep their figures and
# the bench fails.
def test_a_clean_bench_and_a_kprobe_set_up_failure(tmp_path, monkeypatch):
    runs = bench_lines(mremap4k("off", 0), mremap4k("on", 0))
    rc, out, md = _bench(tmp_path / "a", monkeypatch, runs)
    assert rc == 0 and "FAILED" not in md
    assert not _no_figure(_rows(md, "mremap-4k", "on")[0], "mremap-4k")
    (tmp_path / "b").mkdir()
    no_probe = "# lab: could not set a kprobe on foo"
    rc, out, md = _bench(tmp_path / "b", monkeypatch, runs, stock=[no_probe] + bench_lines(
        mremap4k("stock", 0, flavour="stock")))
    assert rc == 0 and "FAILED" not in md
    (tmp_path / "c").mkdir()
    rc, out, md = _bench(tmp_path / "c", monkeypatch, [no_probe] + runs)
    assert rc == 1
    assert not _no_figure(_rows(md, "mremap-4k", "on")[0], "mremap-4k")
    boots = json.loads((out / "boots.json").read_text())
    assert [b["kprobe_failed"] for b in boots if b["flavour"] == "patched"] == [["foo"]]
    # stock fails too when its own kernel has the function
    (tmp_path / "d").mkdir()
    monkeypatch.setattr(bench.build, "has_function", lambda a, v, fl, f: f == "foo")
    rc, out, md = _bench(tmp_path / "d", monkeypatch, runs, stock=[no_probe] + bench_lines(
        mremap4k("stock", 0, flavour="stock")))
    assert rc == 1
    boots = json.loads((out / "boots.json").read_text())
    assert [b["kprobe_missing"] for b in boots if b["flavour"] == "stock"] == [["foo"]]


# has_function() reads the kernel's System.map: the function itself or a
# gcc clone of it, a text symbol, nothing else.
def test_has_function_reads_system_map(tmp_path, monkeypatch):
    from lab.kernel import build
    monkeypatch.setattr(config, "WORK", tmp_path)
    assert not build.has_function("x86_64", "default", "stock", "foo")
    m = config.build_dir("x86_64", "default", "stock") / "System.map"
    m.parent.mkdir(parents=True)
    m.write_text("ffffffff81000000 T foo_bar\nffffffff81000010 t baz.constprop.0\n"
                 "ffffffff81000020 d qux\nffffffff81000030 t quux.cold\n")
    assert build.has_function("x86_64", "default", "stock", "baz")
    assert build.has_function("x86_64", "default", "stock", "foo_bar")
    for name in ("foo", "qux", "quux"):
        assert not build.has_function("x86_64", "default", "stock", name)


# verdict() alone: any run left out, whatever its reason, is a failure.
@pytest.mark.parametrize("why", ["exit 1", "exit 137", REFUSED,
                                 "mremap_batch reads 1, mode off sets 0",
                                 bench.NO_RESULT])
def test_verdict_fails_on_any_run_left_out(why):
    boot = {"name": "x86_64-bench-patched-r0", "kernel_reports": 0, "lab_exit": 0,
            "first_report": "", "excluded": [{"workload": "mremap-4k", "mode": "on",
                                              "rep": 0, "excluded": [why]}]}
    assert bench.verdict([boot]) == 1
    boot["excluded"] = []
    assert bench.verdict([boot]) == 0
    assert bench.verdict([dict(boot, kernel_reports=1, first_report=WARNING)]) == 1


STORED = "2026-11-27-1524-mprotect-numa-quick"


def _stored_with_a_run_left_out(tmp_path, mode):
    """A copy of a stored measurement whose boots.json lists an arm64
    mprotect-numa run of mode as left out (exit 1)."""
    d = tmp_path / STORED
    shutil.copytree(RESULTS / STORED, d)
    boots = json.loads((d / "boots.json").read_text())
    flavour = "stock" if mode == "stock" else "patched"
    b = next(b for b in boots if b["arch"] == "arm64" and b["flavour"] == flavour)
    b["excluded"].append({"workload": "mprotect-numa", "mode": mode, "rep": 0,
                          "excluded": ["exit 1"]})
    (d / "boots.json").write_text(json.dumps(boots))
    return d


# docs/results.md: a stored measurement with a run left out gives no figure
# for that row.
def test_a_stored_run_left_out_gives_no_figure_in_results_md(tmp_path):
    d = _stored_with_a_run_left_out(tmp_path, "on")
    before = history.section(RESULTS / STORED)
    assert "FAILED" not in before
    text = history.section(d)
    rows = [line for line in text.splitlines()
            if line.startswith("| arm64 | mprotect-numa |") and "| on |" in line]
    assert rows and all(_no_figure(r, "arm64", "mprotect-numa") for r in rows), rows


FIG = """[[series]]
name = "mprotect"
switch = "mprotect_batch"
  [[series.figure]]
  arch = "arm64"
  results = "2026-11-27-1524-mprotect-numa-quick"
  workload = "mprotect-numa"
"""


# The README's headline: a figure from a stored measurement whose runs of
# that kernel and mode (or of stock) were left out says FAILED, no number.
@pytest.mark.parametrize("mode", ["on", "stock"])
def test_a_stored_run_left_out_gives_no_headline_figure(tmp_path, mode):
    d = _stored_with_a_run_left_out(tmp_path, mode)
    (tmp_path / headline.DECLARATIONS).write_text(FIG)
    row = next(line for line in headline.readme_block(tmp_path).splitlines()
               if "mprotect-numa:" in line)
    row = row.split("](docs/results")[0]        # the link names the date
    assert _no_figure(row, "arm64", "mprotect-numa", STORED[:10]), row


# The plots leave out what the tables refuse: a failed mode, and every mode
# of a workload whose switch off or stock failed.
def test_plots_get_no_group_of_a_failed_row():
    from lab.guest import workloads
    w = workloads.BY_NAME["mremap-4k"]
    runs = [dict(mremap4k(m, 0, flavour=f), wall_s=1.0, scale="s")
            for m, f in (("off", "patched"), ("on", "patched"), ("stock", "stock"))]
    groups = stats.summarize(runs)
    on = {("x86_64", "mremap-4k", "patched", "on")}
    assert set(tables.without_failed(groups, on, [w])) == set(groups) - on
    stock = {("x86_64", "mremap-4k", "stock", "stock")}
    assert tables.without_failed(groups, stock, [w]) == {}


# Without --stock the bench builds and boots the patched kernel only: no
# stock run is expected, so none is missing, and the report says that
# switch off was not checked against stock, in place of the check.  A
# patched run that did not arrive still fails the bench.
def test_a_bench_without_stock_boots_no_stock_kernel(tmp_path, monkeypatch):
    built = []
    rc, out, md = _bench(tmp_path, monkeypatch,
                         bench_lines(mremap4k("off", 0), mremap4k("on", 0)),
                         with_stock=False, built=built)
    assert rc == 0
    assert built == [("x86_64", "default", "patched")]
    kept = json.loads((out / "runs.json").read_text())
    assert {r["flavour"] for r in kept} == {"patched"}
    assert "-stock" not in (out / "boots.json").read_text()
    assert "None: every workload has runs in every mode" in md
    assert "not checked: this bench booted no stock kernel" in md
    m = json.loads((out / "manifest.json").read_text())
    assert m["stock"] is False and set(m["kernels"]) == {"x86_64/patched"}
    # 'lab report DIR' reads the manifest: no stock run is missing there either
    (out / "report.md").unlink()
    reportdir.report_dir(out)
    again = (out / "report.md").read_text()
    assert "not checked: this bench booted no stock kernel" in again
    assert "None: every workload has runs in every mode" in again


def test_a_missing_patched_run_fails_a_bench_without_stock(tmp_path, monkeypatch):
    rc, out, md = _bench(tmp_path, monkeypatch, bench_lines(mremap4k("off", 0)),
                         with_stock=False)
    assert rc == 1
    assert "- x86_64/patched mremap-4k on" in md
    assert "stock mremap-4k" not in md


# With --stock, a stock boot that dies fails the bench: its runs were
# planned, so they are missing, not "not booted".
def test_a_dead_stock_boot_fails_a_bench_with_stock(tmp_path, monkeypatch):
    rc, out, md = _bench(tmp_path, monkeypatch,
                         bench_lines(mremap4k("off", 0), mremap4k("on", 0)),
                         stock=["LAB-READY: 6.12.117-stock", "Kernel panic - not syncing"])
    assert rc == 1
    assert "- x86_64/stock mremap-4k stock" in md
    assert "not checked: this bench booted no stock kernel" not in md
