# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of the bench on a machine of its own: the bundle's plan,
run-here.sh against a fake /sys and /proc (LAB_HERE_ROOT), and the report
of what it writes."""

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from lab.commands import bench, here
from lab.core import config
from lab.core.util import LabError
from lab.guest import workloads
from lab.outputs import report

SCRIPT = config.GUEST / "run-here.sh"


def test_bundle_plan_runs_the_programs_of_the_bundle_without_kprobes():
    ws = [workloads.BY_NAME["pt-reclaim"], workloads.BY_NAME["file-reclaim"]]
    plan = here.bundle_plan(ws, 2, quick=True)
    assert "/lab/" not in plan and "benchrun" not in plan and "cd /tmp" not in plan
    assert 'lab_bench pt-reclaim off 0 -- "$LAB_HOME"/bench/ptreclaim 256' in plan
    assert 'lab_bench file-reclaim on 1 -- "$LAB_HOME"/bench/filereclaim 256 80' in plan
    assert "lab_drop_caches" in plan and "drop_caches" not in plan.replace(
        "lab_drop_caches", "")
    assert "lab_switch pt_reclaim 0" in plan and "lab_switch pt_reclaim 1" in plan
    assert "kprobe" not in plan and " -1 --" not in plan
    assert "exit 0" not in plan


def fake_machine(tmp_path, switches=None, mounts="", swaps=""):
    """A bundle directory and a fake root; returns (bundle, root)."""
    root = tmp_path / "root"
    fb = root / "sys/kernel/mm/foliobatch"
    if switches is not None:
        fb.mkdir(parents=True)
        for name, value in switches.items():
            (fb / name).write_text(f"{value}\n")
    thp = root / "sys/kernel/mm/transparent_hugepage"
    (thp / "hugepages-64kB").mkdir(parents=True)
    (thp / "hugepages-2048kB").mkdir(parents=True)
    (thp / "enabled").write_text("always [madvise] never\n")
    (thp / "hugepages-64kB/enabled").write_text("always [inherit] madvise never\n")
    (thp / "hugepages-2048kB/enabled").write_text("always inherit madvise [never]\n")
    (root / "sys/kernel/mm/lru_gen").mkdir(parents=True)
    (root / "sys/kernel/mm/lru_gen/enabled").write_text("0x0007\n")
    (root / "proc/sys/vm").mkdir(parents=True)
    (root / "proc/sys/vm/drop_caches").write_text("")
    (root / "proc/mounts").write_text(mounts)
    (root / "proc/swaps").write_text("Filename Type Size Used Priority\n" + swaps)
    (root / "proc/cpuinfo").write_text("processor\t: 0\nmodel name\t: Fake CPU\n"
                                        "processor\t: 1\n")
    b = tmp_path / "bundle"
    (b / "bench").mkdir(parents=True)
    benchrun = b / "bench/benchrun"
    # mode "bad": the program exits 3
    benchrun.write_text(
        "#!/bin/sh\n"
        "[ \"$4\" = -- ] || exit 2\n"
        "code=0; [ \"$2\" != bad ] || code=3\n"
        "echo \"BENCH {\\\"workload\\\":\\\"$1\\\",\\\"mode\\\":\\\"$2\\\",\\\"rep\\\":$3,"
        "\\\"exit\\\":$code,\\\"total_ns\\\":2000,\\\"metrics\\\":{\\\"time_ns\\\":"
        "$(( $3 * 10 + 1000 ))},\\\"vmstat\\\":{},\\\"irq\\\":{},\\\"mthp\\\":{}}\"\n")
    benchrun.chmod(0o755)
    (b / "run-here.sh").write_text(SCRIPT.read_text())
    (b / "run-here.sh").chmod(0o755)
    (b / "arch").write_text({"x86_64": "x86_64", "aarch64": "arm64"}[os.uname().machine]
                            + "\n")
    return b, root


def default_signals():
    # A shell cannot trap a signal that was ignored when it started (POSIX),
    # and a job started in the background by a non-interactive shell (nohup,
    # CI runners) inherits SIGINT ignored: start run-here.sh as a terminal's
    # foreground job would be.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def run_here(b, root, plan, *args, out=None, cwd=None):
    (b / here.PLAN).write_text(plan)
    return subprocess.run(["sh", str(b / "run-here.sh"), "-o", out or str(b / "out"), *args],
                          env=dict(os.environ, LAB_HERE_ROOT=str(root)),
                          capture_output=True, text=True, timeout=60, cwd=cwd,
                          preexec_fn=default_signals)


def knobs(root):
    mm = root / "sys/kernel/mm"
    return {str(p.relative_to(mm)): p.read_text().strip()
            for p in sorted(mm.rglob("*")) if p.is_file()}


def test_run_here_refuses_a_kernel_without_the_switches(tmp_path):
    b, root = fake_machine(tmp_path, switches=None)
    p = run_here(b, root, "echo plan-ran\n")
    assert p.returncode == 1
    assert "has no " in p.stderr and "sys/kernel/mm/foliobatch" in p.stderr
    assert "plan-ran" not in p.stdout


def test_run_here_refuses_programs_of_another_arch(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 1})
    (b / "arch").write_text("riscv64\n")
    p = run_here(b, root, "echo plan-ran\n")
    assert p.returncode == 1 and "are for riscv64" in p.stderr


def test_run_here_restores_every_knob_on_ctrl_c(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 1, "mremap_batch": 1})
    before = knobs(root)
    p = run_here(b, root, "lab_switch pt_reclaim 0\nlab_switch mremap_batch 0\n"
                          "lab_thp_only 2048kB\n"
                          "lab_sysfs /sys/kernel/mm/lru_gen/enabled n\n"
                          "echo changed\nkill -INT $$\necho not-reached\n")
    assert "changed" in p.stdout and "not-reached" not in p.stdout
    assert p.returncode == 130 and "interrupted" in p.stderr
    after = knobs(root)
    # choice files come back as the bracketed choice (what writing accepts)
    assert after == dict(before, **{
        "transparent_hugepage/enabled": "madvise",
        "transparent_hugepage/hugepages-64kB/enabled": "inherit",
        "transparent_hugepage/hugepages-2048kB/enabled": "never"})
    assert "restored 6 settings" in p.stdout      # 2 switches, 3 THP, MGLRU


def test_a_plan_that_changed_knobs_has_them_restored_at_its_end(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 1})
    p = run_here(b, root, "lab_switch pt_reclaim 0\nlab_thp_only 64kB\n")
    assert p.returncode == 0, p.stderr
    assert knobs(root)["foliobatch/pt_reclaim"] == "1"
    assert knobs(root)["transparent_hugepage/hugepages-64kB/enabled"] == "inherit"


def test_run_here_runs_skips_and_reports(tmp_path):
    # a kernel of the series shows every switch, and each run writes them all
    b, root = fake_machine(tmp_path, switches={s: 1 for s in workloads.shown_switches()})
    ws = [workloads.BY_NAME[n] for n in ("pt-reclaim", "file-reclaim", "dirty-reclaim")]
    (b / "bundle.json").write_text(json.dumps({"quick": True, "scale": {
        w.name: w.quick_scale for w in ws}}))
    p = run_here(b, root, here.bundle_plan(ws, 2, quick=True))
    assert p.returncode == 0, p.stderr
    out = b / "out"
    log = (out / "bench.log").read_text()
    assert log.count("BENCH {") == 4                      # pt-reclaim off/on x 2
    assert "file-reclaim off rep 0 skipped: /mnt/xfs is not an XFS mount point" in log
    assert "dirty-reclaim on rep 1 skipped: no swap is on" in log
    assert (root / "proc/sys/vm/drop_caches").read_text() == "3\n"
    assert knobs(root)["foliobatch/pt_reclaim"] == "1"
    host = here.read_host(out / "host.txt")
    assert host["cpus"] == "2" and host["cpu"] == "Fake CPU"

    assert json.loads((out / "bundle.json").read_text())["quick"] is True
    runs = here.collect(out)
    assert len(runs) == 4 and (out / "runs.json").exists()
    assert {r["mode"] for r in runs} == {"off", "on"}
    assert all(r["clock"] == "native" and r["flavour"] == "patched" for r in runs)
    assert runs[0]["scale"] == "256 regions of 2 MB"
    report.write(out, runs, [workloads.BY_NAME["pt-reclaim"]], [runs[0]["arch"]],
                 lambda s: True)
    md = (out / "report.md").read_text()
    assert "instruction-time" not in md and "TCG wall" not in md
    assert "CLOCK_MONOTONIC on the machine itself" in md and "Fake CPU" in md
    assert "| pt-reclaim | time | - | 0.0000 s" in md
    assert "Switch off against stock" not in md
    report.write(out, [dict(r, clock=None) for r in runs],
                 [workloads.BY_NAME["pt-reclaim"]], [runs[0]["arch"]], lambda s: True)
    assert "instruction-time" in (out / "report.md").read_text()


def test_run_here_finds_an_xfs_mount_point_and_swap(tmp_path):
    b, root = fake_machine(tmp_path, switches={"unmap_batch": 1},
                           mounts="/dev/sdb1 /srv/x xfs rw 0 0\n",
                           swaps="/dev/sda2 partition 100 0 -2\n")
    p = run_here(b, root, "lab_ramswap\nlab_bench pt-reclaim on 0 -- x\n"
                          "lab_bench file-reclaim on 0 -- x\n", "-x", "/srv/x/")
    assert p.returncode == 0, p.stderr
    log = (b / "out/bench.log").read_text()
    assert "skipped" not in log and log.count("BENCH {") == 2


def test_collect_refuses_a_directory_without_runs(tmp_path):
    with pytest.raises(Exception, match="neither runs.json nor"):
        here.collect(tmp_path)
    (tmp_path / "bench.log").write_text("# here: pt-reclaim off rep 0 skipped: x\n")
    (tmp_path / "host.txt").write_text("arch x86_64\n")
    with pytest.raises(Exception, match="holds no BENCH line of a run that exited 0; "
                       "skipped: pt-reclaim"):
        here.collect(tmp_path)
    (tmp_path / "bench.log").write_text('BENCH {"workload": "pt-reclaim", "mode"\n')
    with pytest.raises(Exception, match="bench.log:1: not a BENCH record"):
        here.collect(tmp_path)


def test_guest_check_reads_the_files_back_and_needs_every_mode(tmp_path):
    plan = here.guest_plan("x86_64")
    assert "lab_switch unmap_batch 0" in plan.split("knobs.before")[0]
    assert "lab_run run-here" in plan and "lab_run knobs-restored" in plan
    ws = here.GUEST_WORKLOADS

    def line(w, m):
        return (f'HERE-FILE bench.log BENCH {{"workload":"{w}","mode":"{m}","rep":0,'
                '"exit":0,"total_ns":5,"metrics":{"time_ns":3},"vmstat":{},"irq":{},'
                '"mthp":{}}')
    every = [line(w, m) for w in ws for m in workloads.BY_NAME[w].modes]
    host = ["HERE-FILE host.txt kernel 6.12.117-patched", "HERE-FILE host.txt arch x86_64"]
    ok, detail = here.check_guest_run("\n".join(every + host), tmp_path / "a")
    assert ok, detail
    assert (tmp_path / "a/report.md").exists() and (tmp_path / "a/runs.json").exists()
    ok, detail = here.check_guest_run("\n".join(every[1:] + host), tmp_path / "b")
    assert not ok and "pt-reclaim/off" in detail
    ok, detail = here.check_guest_run("\n".join(every), tmp_path / "c")
    assert not ok and "not on the console" in detail


def test_a_relative_out_directory_is_where_the_files_go(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 1})
    p = run_here(b, root, "lab_switch pt_reclaim 0\ncd /\n"
                          "lab_bench pt-reclaim off 0 -- x\n", out="rel", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "BENCH {" in (tmp_path / "rel/bench.log").read_text()
    assert knobs(root)["foliobatch/pt_reclaim"] == "1"
    assert not (tmp_path / "rel/.saved-knobs").exists()


def test_a_hang_up_and_a_term_restore_too(tmp_path):
    for sig, code in (("HUP", 129), ("TERM", 143)):
        b, root = fake_machine(tmp_path / sig, switches={"pt_reclaim": 1})
        p = run_here(b, root, f"lab_switch pt_reclaim 0\nkill -{sig} $$\necho not-reached\n")
        assert p.returncode == code and "not-reached" not in p.stdout
        assert knobs(root)["foliobatch/pt_reclaim"] == "1"


def test_a_knob_that_cannot_be_set_skips_the_run(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 1})
    (root / "sys/kernel/mm/lru_gen/enabled").unlink()
    p = run_here(b, root, "lab_sysfs /sys/kernel/mm/lru_gen/enabled n\n"
                          "lab_bench file-reclaim off 0 -- x\n"
                          "lab_sysfs /sys/kernel/mm/lru_gen/enabled y\n"
                          "lab_bench pt-reclaim on 0 -- x\n"
                          "lab_switch no_such_switch 1\n"
                          "lab_bench pt-reclaim off 0 -- x\n", "-x", "/", )
    log = (b / "out/bench.log").read_text()
    # no MGLRU to turn off is fine (then only the XFS check skips it)
    assert "file-reclaim off rep 0 skipped: / is not an XFS mount point" in log
    assert "pt-reclaim on rep 0 skipped: could not write 'y' to" in log
    assert "pt-reclaim off rep 0 skipped: could not write '1' to" in log
    assert "BENCH {" not in log and p.returncode == 0, p.stderr


def test_a_failed_run_fails_the_script_and_is_left_out_of_the_report(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 1})
    p = run_here(b, root, "lab_bench pt-reclaim bad 0 -- x\nlab_bench pt-reclaim on 0 -- x\n")
    assert p.returncode == 1 and "1 run(s) exited non-zero" in p.stderr
    (b / "out/host.txt").write_text("arch x86_64\n")
    runs = here.collect(b / "out")
    assert [r["mode"] for r in runs] == ["on"]


def test_a_run_that_did_not_finish_has_its_knobs_written_back_first(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 0})
    out = b / "out"
    out.mkdir()
    sw = root / "sys/kernel/mm/foliobatch/pt_reclaim"
    (out / ".saved-knobs").write_text(f"{sw} 1\n")     # saved before it was set to 0
    p = run_here(b, root, "echo plan\n")
    assert p.returncode == 0, p.stderr
    assert "did not finish" in p.stdout and sw.read_text().strip() == "1"


def test_an_argument_without_an_option_is_refused(tmp_path):
    b, root = fake_machine(tmp_path, switches={"pt_reclaim": 1})
    (b / here.PLAN).write_text("echo plan\n")
    p = subprocess.run(["sh", str(b / "run-here.sh"), "outdir"], capture_output=True,
                       text=True, env=dict(os.environ, LAB_HERE_ROOT=str(root)))
    assert p.returncode == 1 and "without an option: outdir" in p.stderr


def test_bundle_refuses_a_workload_of_another_arch(tmp_path):
    with pytest.raises(LabError, match="not a workload for x86_64"):
        here.bundle(tmp_path / "b", "x86_64", ["file-reclaim-pte2m-a72"])
    assert not (tmp_path / "b").exists()


def test_a_default_bundle_leaves_out_workloads_of_a_qemu_cpu_model():
    arm = here.default_workloads("arm64")
    assert "file-reclaim-pte2m" in arm and "file-reclaim-pte2m-a72" not in arm
    assert "file-reclaim-pte2m-a72" not in here.default_workloads("x86_64")
    assert "dirty-reclaim-fixed-8cpu" in arm


def test_retired_workloads_run_only_when_named(monkeypatch):
    # a retired workload stays known (its stored runs still make a report)
    # but neither a bundle nor a bench picks it unless it is named, and
    # naming it warns
    assert workloads.BY_NAME["dirty-reclaim-1w"].retired
    assert "dirty-reclaim-1w" not in workloads.default_names()
    assert "dirty-reclaim-fixed" in workloads.default_names()
    for a in ("arm64", "x86_64"):
        assert "dirty-reclaim-1w" not in here.default_workloads(a)
        assert "dirty-reclaim-fixed" in here.default_workloads(a)
    said = []

    def stop():
        raise SystemExit("stopped before any build")
    monkeypatch.setattr(bench.deps, "check", lambda: None)
    monkeypatch.setattr(bench.source, "apply", stop)
    monkeypatch.setattr(workloads, "warn", said.append)
    with pytest.raises(SystemExit):
        bench.main(["arm64"], ["dirty-reclaim-1w"], quick=True)
    assert any(m.startswith("dirty-reclaim-1w is retired: ") for m in said)
    said.clear()
    monkeypatch.setattr(here.source, "fetch", stop)
    with pytest.raises(SystemExit):
        here.bundle(Path("/nonexistent"), "arm64", ["dirty-reclaim-1w"])
    assert any(m.startswith("dirty-reclaim-1w is retired: ") for m in said)
