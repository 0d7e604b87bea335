# SPDX-License-Identifier: GPL-2.0-only
"""Here: the bench on a machine of its own, outside the lab's guests.

'lab bench --bundle DIR' writes what a machine booted with a foliobatch
kernel needs to run the bench workloads natively, as root, with the
switches off and on in one boot:

  DIR/run-here.sh     the driver (guest/run-here.sh): refuses without
                      /sys/kernel/mm/foliobatch, saves and restores every
                      knob the plan writes, also on Ctrl-C
  DIR/bench-plan.sh   workloads.plan() of the patched kernel, without kprobes,
                      its programs under $LAB_HOME
  DIR/bench/          the static workload programs for the arch
  DIR/arch            the arch the programs are for
  DIR/bundle.json     what the bundle holds (workloads, scale, series)

run-here.sh writes OUT/bench.log (the BENCH lines) and OUT/host.txt.
'lab report OUT' turns such a directory into runs.json (collect()) and
then into the same report as a lab bench, with "time" (CLOCK_MONOTONIC on
that machine) where the lab's reports say instruction-time, and no stock
column: one kernel runs every mode.
"""

import json
import re
import shutil

from ..core import config
from ..core.util import LabError, say
from ..guest import image, results
from ..guest.workloads import BY_NAME, default_names, named, plan
from ..kernel import source

PLAN = "bench-plan.sh"
# run-here.sh drops the caches through its own helper (LAB_HERE_ROOT)
DROP_CACHES = {"sync; echo 3 > /proc/sys/vm/drop_caches": "lab_drop_caches"}
UNAMES = {"x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}


def bundle_plan(workloads, reps, quick, arch_name=None):
    """The patched kernel's bench plan for run-here.sh: no kprobe runs, the
    programs under $LAB_HOME, no lib.sh (run-here.sh has the helpers); the
    switches arch_name's kernel shows."""
    text = plan(workloads, reps, "patched", quick, switch_arch=arch_name)
    lines = [DROP_CACHES.get(line, line) for line in text.splitlines()
             if line not in (". /lab/lib.sh", "exit 0", "cd /tmp")]
    text = "\n".join(lines) + "\n"
    text = text.replace("/lab/bench/", '"$LAB_HOME"/bench/')
    if "/lab/" in text:
        raise LabError("the bench plan names a /lab/ path that a bundle does not "
                       "have: " + next(x for x in text.splitlines() if "/lab/" in x))
    return text


def default_workloads(arch_name):
    """The workloads of a bundle when none is named: those of the arch,
    but not a retired one, nor one that boots a QEMU CPU model of its own,
    which on a machine would run again what its default-CPU twin runs, nor
    one that needs the lab's two NUMA nodes, which a machine may not have."""
    return [n for n in default_names()
            if BY_NAME[n].runs_on(arch_name) and "cpu" not in BY_NAME[n].boot
            and "numa" not in BY_NAME[n].boot]


def bundle(dest, arch_name, names=None, quick=False, reps=3):
    """Write a bundle for one arch into dest (see the module docstring)."""
    chosen = named(names or default_workloads(arch_name))
    other = [w.name for w in chosen if not w.runs_on(arch_name)]
    if other:
        raise LabError(f"{', '.join(other)}: not a workload for {arch_name}")
    if reps < 1:
        raise LabError("--repeats must be at least 1")
    source.fetch()
    log = config.log_dir() / f"bundle-{arch_name}.log"
    log.write_text("")
    programs = image.build_guest_programs(arch_name, log) / "bench"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(programs, dest / "bench", dirs_exist_ok=True)
    shutil.copy2(config.GUEST / "run-here.sh", dest / "run-here.sh")
    (dest / PLAN).write_text(bundle_plan(chosen, reps, quick, arch_name))
    (dest / "arch").write_text(arch_name + "\n")
    (dest / "bundle.json").write_text(json.dumps({
        "arch": arch_name, "workloads": names, "quick": quick, "repeats": reps,
        "scale": {w.name: w.quick_scale if quick else w.scale for w in chosen},
        "series_hash": source.series_hash(), "source": source.base_version()},
        indent=1) + "\n")
    say(f"bundle for {arch_name} in {dest}: {len(chosen)} workloads x {reps} repeats; "
        f"on the machine: sudo {dest}/run-here.sh [-o OUT] [-x XFS_DIR], then "
        f"'lab report OUT' here")
    return dest


def read_host(path):
    """host.txt of run-here.sh: one 'key value' per line."""
    host = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "model" or key == "CPU":      # "model name\t: ..." / "CPU part\t: ..."
            host["cpu"] = re.sub(r"^.*?:\s*", "", line)
        elif key:
            host[key] = value.strip()
    return host


def collect(outdir, bundle_info=None):
    """bench.log and host.txt of a run-here.sh directory -> its runs (also
    written to runs.json).  bundle_info is bundle.json's content when the
    directory has no copy of it."""
    logf, hostf = outdir / "bench.log", outdir / "host.txt"
    if not logf.exists() or not hostf.exists():
        raise LabError(f"{outdir} has neither runs.json nor run-here.sh's "
                       "bench.log and host.txt")
    host = read_host(hostf)
    arch = UNAMES.get(host.get("arch", ""))
    if not arch:
        raise LabError(f"{hostf}: unknown arch '{host.get('arch', '')}'")
    info = bundle_info
    if info is None and (outdir / "bundle.json").exists():
        info = json.loads((outdir / "bundle.json").read_text())
    info = info or {}
    runs, skipped, failed = [], [], []
    for n, line in enumerate(logf.read_text(errors="replace").splitlines(), 1):
        if line.startswith("# here: "):
            skipped.append(line[len("# here: "):])
        try:
            rec = results.bench_record(line)
        except ValueError as e:
            raise LabError(f"{logf}:{n}: not a BENCH record ({e}): {line[:120]}") from e
        if rec is None:
            continue
        if rec.get("exit") != 0:
            failed.append(f"{rec.get('workload')} {rec.get('mode')} rep {rec.get('rep')} "
                          f"(exit {rec.get('exit')})")
            continue
        w = BY_NAME.get(rec["workload"])
        if w is None:
            raise LabError(f"{logf}: a run of workload '{rec['workload']}', which "
                           "this lab does not know")
        rec.update(arch=arch, flavour="patched", kernel=host.get("kernel", "unknown"),
                   clock="native", probe=False, wall_s=None,
                   machine=host.get("machine", ""), cpu=host.get("cpu", ""),
                   cpus=host.get("cpus", ""), quick=info.get("quick"),
                   series_hash=info.get("series_hash"),
                   scale=info.get("scale", {}).get(w.name, ""))
        runs.append(rec)
    if not runs:
        raise LabError(f"{logf} holds no BENCH line of a run that exited 0"
                       + (f"; failed: {'; '.join(failed)}" if failed else "")
                       + (f"; skipped: {'; '.join(skipped)}" if skipped else ""))
    for s in skipped:
        say(f"run-here skipped {s}")
    for f in failed:
        say(f"left out, as lab bench leaves out a failed run: {f}")
    (outdir / "runs.json").write_text(json.dumps(runs, indent=1))
    return runs


# --- the guest check ('lab test') ------------------------------------------
#
# A guest of the patched kernel is such a machine: 'lab test' boots it once
# (x86_64) with a bundle plan of GUEST_WORKLOADS, one repeat, run by the
# image's /lab/run-here.sh against the guest's XFS disk, and checks what a
# user would get: run-here.sh exits 0, every knob reads as before, every
# workload and mode has a run that exited 0, and 'lab report' makes the
# report of the directory it wrote.
GUEST_ARCHES = ("x86_64",)
GUEST_WORKLOADS = ("pt-reclaim", "mremap-64k", "file-reclaim")
KNOBS = ("/sys/kernel/mm/foliobatch/* /sys/kernel/mm/transparent_hugepage/enabled "
         "/sys/kernel/mm/transparent_hugepage/hugepages-*/enabled "
         "/sys/kernel/mm/lru_gen/enabled")
FILE_MARK = "HERE-FILE "


def guest_plan(arch_name):
    """The guest plan of the check: KTAP 'run-here' and 'knobs-restored',
    then run-here.sh's files on the console, each line after FILE_MARK."""
    ws = [BY_NAME[n] for n in GUEST_WORKLOADS]
    return "\n".join([
        ". /lab/lib.sh",
        # knobs away from what the plan leaves behind (its last lines set
        # every switch to 1), so that only a restore brings them back
        "lab_switch unmap_batch 0",
        "lab_sysfs /sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled madvise",
        f"for f in {KNOBS}; do echo \"$f $(cat $f)\"; done > /tmp/knobs.before",
        f"cat > /lab/{PLAN} <<'LAB_HERE_PLAN'",
        bundle_plan(ws, 1, quick=True, arch_name=arch_name).rstrip("\n"),
        "LAB_HERE_PLAN",
        f"echo {arch_name} > /lab/arch",
        "lab_plan 2",
        "lab_run run-here 1200 sh /lab/run-here.sh -o /tmp/here -x /mnt/xfs",
        f"for f in {KNOBS}; do echo \"$f $(cat $f)\"; done > /tmp/knobs.after",
        "lab_run knobs-restored 10 sh -c 'cmp -s /tmp/knobs.before /tmp/knobs.after "
        "|| { cat /tmp/knobs.before /tmp/knobs.after; exit 1; }'",
        "for f in bench.log host.txt; do",
        f"  sed \"s|^|{FILE_MARK}$f |\" /tmp/here/$f",
        "done",
        ""])


def files_from_console(text, dest):
    """Write the files guest_plan() printed into dest; return their names."""
    files = {}
    for line in text.splitlines():
        if line.startswith(FILE_MARK):
            name, _, rest = line[len(FILE_MARK):].partition(" ")
            files.setdefault(name, []).append(rest)
    dest.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (dest / name).write_text("\n".join(lines) + "\n")
    return sorted(files)


def check_guest_run(text, dest):
    """The host's half of the check: the report of what the guest's
    run-here.sh wrote, in dest.  Returns (ok, detail)."""
    got = files_from_console(text, dest)
    if "bench.log" not in got or "host.txt" not in got:
        return False, f"run-here.sh's files are not on the console (got {got})"
    try:
        runs = collect(dest, {"quick": True, "scale": {
            n: BY_NAME[n].quick_scale for n in GUEST_WORKLOADS}})
    except LabError as e:
        return False, str(e)
    want = {(n, m) for n in GUEST_WORKLOADS for m in BY_NAME[n].modes}
    have = {(r["workload"], r["mode"]) for r in runs if r["exit"] == 0}
    if want - have:
        return False, "no run that exited 0 for " + ", ".join(
            f"{w}/{m}" for w, m in sorted(want - have))
    from ..outputs import report
    ws = [BY_NAME[n] for n in GUEST_WORKLOADS]
    report.write(dest, runs, ws, [runs[0]["arch"]], lambda s: True)
    md = (dest / "report.md").read_text()
    missing = [n for n in GUEST_WORKLOADS if f"| {n} | time |" not in md]
    if missing:
        return False, f"the report has no time row for {', '.join(missing)}"
    return True, f"{len(runs)} runs; report {dest / 'report.md'}"
