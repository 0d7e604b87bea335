# SPDX-License-Identifier: GPL-2.0-only
"""Bench: each seed's workload with its switch off and on, and on stock.

A boot of the patched kernel per arch runs every workload in every mode
(switch settings), alternating the order of modes from one repeat to the
next; with stock (lab bench --stock), a boot of the stock kernel runs
every workload once per repeat, to show that "off" is stock; then each
kernel's first repeats are shared by two boots (first_boots()), since two
boots of one kernel differ by more than one boot's runs do.  Without it
the stock kernels are neither built nor booted: the baseline is switch off
on the patched kernel, and the report says that switch off was not checked
against stock.  Every boot uses -icount shift=0,sleep=off, so
CLOCK_MONOTONIC in the guest counts instructions ("instruction-time").
More boots follow for the measurements whose spread is still over 1%, up to
a cap.  The workloads and the guest plan that runs them are workloads.py's.
Each run is saved as JSON; outputs/report.py makes the tables and plots.
A run counts only when it exited 0, its setup printed no failure and the
knobs benchrun read back before it are its mode (judge()); each boot's
console is scanned for kernel reports.  The command exits 0 only when every
planned run of every mode arrived and counts, and no boot has a kernel
report or a non-zero LAB-EXIT (verdict()); the report marks the rows of a
mode with a run left out FAILED, with no figure (tables.failed_keys()).
A stock boot whose kernel, guest image, plan and QEMU are those of a
stored one is not booted again: its runs are read from the stored console
(cache.py; a boot's runs are what that boot measured, and a stored boot
is one of the boots of that kernel), and the report's boot table names
it.
The bench directory's manifest.json (outputs/manifest.py) records the
lab's commit and patches tree and the tools from the start, with no exit
status until the bench ends; then the kernels' .config, the exit status
and the sha256 of runs.json and boots.json, against which 'lab report'
checks the directory.
"""

import dataclasses
import json
import re
import threading
import time

from ..core import config, deps
from ..core.tally import patches_tree, repo_commit
from ..core.util import LabError, Timer, ccache_misses, ccache_stats, mmss, say, warn
from ..guest import cache, image, results, run, workloads
from ..guest.workloads import BY_NAME, PROBE_REP, boot_kwargs, default_names, named, plan
from ..kernel import build, source
from ..outputs import headline, manifest, report
from ..outputs.stats import instr_time, spread

SPREAD_TARGET = 0.01
# the RAM disk the dirty-reclaim workload swaps to (lab_ramswap)
RAMSWAP_MB = 768
BOOT_APPEND = f"brd.rd_nr=1 brd.rd_size={RAMSWAP_MB * 1024}"


def boot_args(quick):
    """run.boot() arguments of a bench boot (lab profile boots the same way)."""
    return dict(mem_mb=2048, cpus=2, icount=True, timeout=4 * 3600, append=BOOT_APPEND,
                swap_mb=2048, xfs_mb=1024 if quick else 3072)


def in_series(switch):
    """Is a switch wired by some patch of the series (not only declared)?"""
    pat = re.compile(rf"^\+.*foliobatch_enabled\({switch}\)", re.M)
    return any(pat.search(p.read_text(errors="replace")) for p in source.series_files())


def parse_runs(boot, meta):
    """BENCH lines of a boot -> run records, with host wall time per run."""
    runs = []
    start = None
    for t, line in boot.stamps:
        if results.bench_start(line):
            start = t
        elif (rec := results.bench_record(line)) is not None:
            rec["wall_s"] = round(t - start, 3) if start is not None else None
            rec.update(meta)
            runs.append(rec)
            start = None
        elif (h := results.bench_record(line, "BENCH-HIST")) is not None:
            for rec in runs[::-1]:
                if (rec["workload"], rec["mode"], rec["rep"]) == \
                        (h["workload"], h["mode"], h["rep"]):
                    rec["hist"], rec["hist_lost"] = h["hist"], h["lost"]
                    break
    return runs


# A line the plan's shell helpers (guest/lib.sh) print when a knob or the
# RAM-disk swap could not be set up; "could not set a kprobe" is the kprobe
# runs' own (their rows are left out, bench.boot_bench())
SETUP_FAILED = re.compile(r"# lab: could not (?!set a kprobe)")


def setup_failures(text):
    """{(workload, mode, rep): the lines of a console text that say a setup
    step failed, printed since the run before it ended}: the plan's lines
    for a run (its setup, its switches, and the switch reset after the
    repeat before it) stand between the previous run's BENCH line and the
    run's BENCH-START line."""
    out, since = {}, []
    for line in text.splitlines():
        if SETUP_FAILED.search(line):
            since.append(line.strip())
        elif (started := results.bench_start(line)):
            out[started] = since
        elif line.startswith("BENCH {"):
            since = []
    return out


THP = "transparent_hugepage"


def new_outdir(parent, name):
    """A new directory parent/name, or parent/name-2, -3, ... when another
    bench started in the same second has taken it."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 100):
        d = parent / (name if n == 1 else f"{name}-{n}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise LabError(f"{parent}: no free directory name for {name}")


def wanted_setup(w):
    """(THP size, MGLRU) that a workload sets up: its thp ('none' for 4 kB
    pages only) and 'y' or 'n' for lru_gen/enabled; None for what it leaves
    as it is."""
    return w.thp, workloads.LRU_KNOB.get(w.lru)


def state_problems(w, flavour, mode, rec):
    """Why the knobs a run read back before it started (benchrun's 'knobs'
    and 'foliobatch_dir') are not the run's mode: each switch of the mode
    as the mode sets it, no /sys/kernel/mm/foliobatch on stock, the THP
    sizes and MGLRU as the workload's setup sets them.  [] when they are."""
    knobs = rec.get("knobs")
    if knobs is None or "foliobatch_dir" not in rec:
        return ["no read-back of the knobs in the run's record"]
    why = []
    if flavour == "stock":
        if rec["foliobatch_dir"] or any(k.startswith("foliobatch/") for k in knobs):
            why.append("stock kernel has /sys/kernel/mm/foliobatch")
    elif not rec["foliobatch_dir"]:
        why.append("no /sys/kernel/mm/foliobatch")
    else:
        for sw, v in sorted(w.settings(mode, rec.get("arch")).items()):
            got = knobs.get(f"foliobatch/{sw}")
            if got != str(v):
                why.append(f"{sw} reads {got if got is not None else 'nothing'}, "
                           f"mode {mode} sets {v}")
    thp, lru = wanted_setup(w)
    if thp:
        if knobs.get(f"{THP}/enabled") != "never":
            why.append(f"THP enabled reads {knobs.get(f'{THP}/enabled')}, "
                       f"lab_thp_only {thp} sets never")
        sizes = {k[len(THP) + len("/hugepages-"):-len("/enabled")]: v
                 for k, v in knobs.items()
                 if k.startswith(f"{THP}/hugepages-") and k.endswith("/enabled")}
        if thp != "none" and thp not in sizes:
            why.append(f"no THP size {thp}")
        for size, v in sorted(sizes.items()):
            want = "always" if size == thp else "never"
            if v != want:
                why.append(f"THP {size} reads {v}, lab_thp_only {thp} sets {want}")
    if lru:
        got = knobs.get("lru_gen/enabled")
        try:
            on = int(got, 16) & 1 if got is not None else None
        except ValueError:
            on = None
        if on is None or on != (lru == "y"):
            why.append(f"lru_gen/enabled reads {got if got is not None else 'nothing'}, "
                       f"the setup sets {lru}")
    return why


# a run whose workload found data it stored gone (dirtyreclaim's fixed form,
# METRIC lost_stores): left out like any failed run, and it fails the bench
LOST = "lost stores"


def judge(boot_text, runs, flavour):
    """Mark the runs of a boot to leave out: rec['excluded'] lists why (a
    non-zero exit, a setup step that failed, knobs that did not read back
    as the run's mode); returns (kept runs, [excluded runs])."""
    failed = setup_failures(boot_text)
    kept, out = [], []
    for rec in runs:
        why = [] if rec["exit"] == 0 else [f"exit {rec['exit']}"]
        lost = rec.get("metrics", {}).get("lost_stores", 0)
        if lost:
            why.append(f"{LOST} ({lost})")
        why += failed.get((rec["workload"], rec["mode"], str(rec["rep"])), [])
        why += state_problems(BY_NAME[rec["workload"]], flavour, rec["mode"], rec)
        if why:
            rec["excluded"] = why
            out.append(rec)
        else:
            kept.append(rec)
    return kept, out


# why a planned run that printed no BENCH line is left out
NO_RESULT = "no result: the run never reported (it died, or the plan stopped before it)"
PLANNED_RE = re.compile(r"^lab_bench (\S+) (\S+) (-?\d+) -- ", re.MULTILINE)


def missing_runs(plan_text, runs):
    """The runs a plan has (its lab_bench lines) that no BENCH record of
    @runs answers, as left-out records: a result that was expected and did
    not arrive."""
    got = {(r["workload"], r["mode"], int(r["rep"])) for r in runs}
    out = []
    for w, m, rep in PLANNED_RE.findall(plan_text):
        if (w, m, int(rep)) not in got:
            out.append({"workload": w, "mode": m, "rep": int(rep),
                        "excluded": [NO_RESULT]})
    return out


def boot_groups(workloads):
    """[(boot overrides, workloads)]: workloads with the same Workload.boot
    share boots, in the order they are given."""
    groups = []
    for w in workloads:
        for extra, ws in groups:
            if extra == w.boot:
                ws.append(w)
                break
        else:
            groups.append((w.boot, [w]))
    return groups


def progress(done, planned, elapsed):
    """'3/8 runs, 2m10s, about 3m37s left' for a boot: what is left is
    estimated from the mean host time of the runs so far."""
    left = elapsed / done * (planned - done) if done else None
    tail = f", about {mmss(left)} left" if left is not None and done < planned else ""
    return f"{done}/{planned} runs, {mmss(elapsed)}{tail}"


class Sink:
    """The runs and boots of a bench so far, shared by the arches' threads;
    runs.json and boots.json are rewritten after every boot, so that an
    interrupted bench keeps what it finished (its report holds them;
    'lab report DIR' refuses the directory, whose bench failed)."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.runs, self.boots = [], []
        self.lock = threading.Lock()

    def add(self, kept, boot):
        with self.lock:
            self.runs += kept
            self.boots.append(boot)
            self.save()

    def save(self):
        (self.outdir / "runs.json").write_text(json.dumps(self.runs, indent=1))
        (self.outdir / "boots.json").write_text(json.dumps(self.boots, indent=1))


def boot_bench(arch_name, flavour, workloads, reps, quick, rep0, outdir, meta_base,
               use_cache=True):
    variant = meta_base.get("variant", "default")
    kernel = build.image_path(arch_name, variant, flavour)
    extra = workloads[0].boot
    tag = "".join(f"-{k}{v}" for k, v in sorted(extra.items()))
    name = f"{arch_name}-bench-{flavour}{tag}-r{rep0}"
    text = plan(workloads, reps, flavour, quick, rep0, arch_name=arch_name)
    planned = sum(line.startswith("lab_bench ") for line in text.splitlines())
    say(f"bench boot {name}: {len(workloads)} workloads x {reps} repeats, "
        f"{planned} runs")
    t0, done = time.monotonic(), [0]

    def echo(line):
        rec = results.bench_record(line)
        if rec is not None:
            done[0] += 1
            say(f"  {arch_name}/{flavour} {rec['workload']:20} {rec['mode']:10} "
                f"rep {rec['rep']}: {instr_time(rec) / 1e9:.4f} s instruction-time"
                f"{'' if rec['exit'] == 0 else ' EXIT ' + str(rec['exit'])}  "
                f"[{progress(done[0], planned, time.monotonic() - t0)}]")
        elif line.startswith(("LAB-", "lab: ", "# lab: could not")) or \
                "Kernel panic" in line:
            say(f"  [{name}] {line}")

    env = {"LAB_ARCH": arch_name, "LAB_FLAVOUR": flavour, "LAB_VARIANT": variant}
    kwargs = dict(boot_args(quick), **boot_kwargs(extra))
    stored = stock_key(arch_name, kernel, text, env, kwargs) \
        if flavour == "stock" and use_cache else None
    hit = cache.load(name, stored[0]) if stored else None
    if hit:
        reused, b = hit
        say(f"bench boot {name}: stock runs reused from {reused} (key "
            f"{stored[0][:16]}: same kernel, image, plan and QEMU)")
    else:
        reused = None
        b = run.boot(run.BootSpec(arch=arch_name, kernel=kernel, plan=text, env=env,
                                  name=name, **kwargs), echo=echo)
    if not b.ready or b.exit_code is None:
        raise LabError(f"bench boot {name} did not complete (console: {b.console})")
    console = b.text()
    failed = []
    for line in console.splitlines():
        m = re.search(r"could not set a kprobe on (\S+)", line)
        if m:
            failed.append(m.group(1))
    # stock has no batched helper to probe: n/a there, not a failure
    missing = [f for f in failed
               if flavour == "patched" or build.has_function(arch_name, variant, flavour, f)]
    for f in sorted(set(failed) - set(missing)):
        say(f"{name}: no kprobe on {f}, which this kernel does not have; its "
            "counts of this kernel are n/a")
    m = re.search(r"LAB-READY: (\S+)", console)
    meta = dict(meta_base, flavour=flavour, kernel=m.group(1) if m else "unknown",
                console=str(b.console), kprobe_failed=failed,
                cpus=kwargs["cpus"], cpu=extra.get("cpu"))
    runs = parse_runs(b, meta)
    for rec in runs:
        rec["probe"] = rec["rep"] == PROBE_REP
        w = BY_NAME[rec["workload"]]
        rec["scale"] = w.quick_scale if quick else w.scale
    kept, excluded = judge(console, runs, flavour)
    excluded += missing_runs(text, runs)
    for rec in runs:
        f = outdir / "runs" / (f"{arch_name}-{flavour}-{rec['workload']}-{rec['mode']}"
                               f"-r{rec['rep']}.json")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(rec, indent=1))
    for r in excluded:
        warn(f"{arch_name}/{flavour} {r['workload']} {r['mode']} rep {r['rep']} "
             f"left out: {'; '.join(r['excluded'])}")
    reports = results.kernel_reports(console)
    if reports:
        warn(f"{name}: {len(reports)} kernel report(s), the first: {reports[0]}")
    if b.exit_code != 0:
        warn(f"{name}: the plan ended with LAB-EXIT {b.exit_code} "
             f"(console: {b.console})")
    boot = {"name": name, "arch": arch_name, "flavour": flavour,
            "console": str(b.console), "kernel_reports": len(reports),
            "lab_exit": b.exit_code,
            "first_report": reports[0] if reports else "", "runs": len(kept),
            "excluded": [{k: r[k] for k in ("workload", "mode", "rep", "excluded")}
                         for r in excluded],
            "reused": str(reused) if reused else "",
            "kprobe_failed": failed, "kprobe_missing": missing}
    if stored and not reused:
        if excluded or reports or b.exit_code != 0:
            say(f"{name}: not stored for reuse (runs left out, kernel reports "
                "or a non-zero LAB-EXIT)")
        else:
            say(f"{name}: stock runs stored in {cache.store(name, *stored, b)}")
    return kept, boot


def stock_key(arch_name, kernel, plan_text, env, kwargs):
    """(key, inputs) under which a stock bench boot is stored
    (cache.boot_key()): its arguments, with env and bench=True; None when
    the kernel or the image is not there to hash."""
    qemu_args = dict(mem_mb=kwargs["mem_mb"], cpus=kwargs["cpus"],
                     append=kwargs.get("append", ""), icount=kwargs.get("icount", False),
                     cpu=kwargs.get("cpu"))
    return cache.boot_key(arch_name, kernel, plan_text, qemu_args,
                          **dict(kwargs, arch=arch_name, env=env, bench=True))


# The main job's runs per mode when no workload is named: the headline
# workloads at the quick scale, each mode this many times (at least 3, so
# that every figure has a spread).
MAIN_REPEATS = 3


def headline_set():
    """{arch: {workload names}} of the figures of the README's headline
    table (docs/results/headline.toml) that the main job measures: not the
    controls, nor a figure marked main = false (a workload with boots of
    its own, measured with -w).  What a plain 'lab bench' runs."""
    _, figures = headline.declared(config.REPO / "docs" / "results")
    per = {}
    for f in figures:
        if f.main and not f.control:
            per.setdefault(f.arch, set()).add(f.workload)
    return per


def main(arches, workloads=None, quick=False, repeats=None, min_repeats=None,
         use_cache=True, full=False, variant="default", stock=False):
    """The bench of arches: the named workloads (at upstream's scale unless
    quick); with none named, every workload at upstream's scale (full), or
    the headline set at the quick scale, each mode MAIN_REPEATS times (the
    main job).  stock: build and boot the stock kernels too, and check
    switch off against them."""
    t = Timer()
    only_on = None
    if not workloads and not full:
        only_on = headline_set()
        workloads = sorted(set().union(*(only_on.get(a, set()) for a in arches)))
        quick = True
        min_repeats = min_repeats or MAIN_REPEATS
        repeats = repeats or max(MAIN_REPEATS, min_repeats)
    chosen = named(workloads or default_names())
    if only_on is not None:
        # the main job plans a workload only on the arches whose headline
        # rows name it: each arch's boots run it there, and the report
        # expects runs there and nowhere else
        chosen = [dataclasses.replace(w, arches=tuple(a for a in config.ARCHES
                                                      if w.name in only_on.get(a, ())))
                  for w in chosen]
    nowhere = [w.name for w in chosen if not any(w.runs_on(a) for a in arches)]
    if nowhere and workloads:
        raise LabError(f"{', '.join(nowhere)}: not a workload for "
                       f"{', '.join(arches)} (use -a)")
    chosen = [w for w in chosen if w.name not in nowhere]
    first = min_repeats or (2 if quick else 3)
    cap = max(repeats or (3 if quick else 7), first)
    first = min(first, cap)
    deps.check()
    # compiler runs ccache did not answer: 0 on a warm run, the whole of
    # four kernels on a cold one (the manifest's "compiled")
    ccache0 = ccache_stats()
    misses0 = ccache_misses(ccache0)
    start = build.start_state(arches, variant, ccache0)
    source.apply()
    outdir = new_outdir(config.WORK / "results", f"bench-{time.strftime('%Y%m%d-%H%M%S')}")
    # what the bench measures is the lab as it started: no exit status
    # until it ends, so that a bench that never ends is refused
    info = dict(run_info(arches), variant=variant, stock=stock)
    flavours = flavours_of(stock)
    manifest.write(outdir, info)
    for w in chosen:
        missing = [s for s in w.switches() if not in_series(s)]
        if missing:
            warn(f"{w.name}: {', '.join(missing)} not in the series yet; the "
                 "workload runs but measures stock 6.12 in every mode")
    sink = Sink(outdir)
    # every kernel, patched ones first (the first boots of each arch), built
    # one after the other beside the boots of the kernels before them
    build.build_ahead([(a, variant, f) for f in flavours for a in arches])
    errors = {}

    def one(arch_name):
        try:
            bench_arch(arch_name, chosen, first, cap, quick, outdir, sink, use_cache,
                       variant, flavours)
        except Exception as e:  # noqa: BLE001 - reported below, exit 1
            errors[arch_name] = e
            warn(f"{arch_name}: bench stopped: {e}")

    # under -icount a guest's instruction-time does not depend on the host,
    # so the arches' boots run side by side, one host thread each
    threads = [threading.Thread(target=one, name=f"bench-{a}", args=(a,), daemon=True)
               for a in arches]
    for th in threads:
        th.start()
    interrupted = False
    try:
        _join(threads)
    except KeyboardInterrupt:
        interrupted = True
        warn("interrupted: the report holds the runs finished so far")
    with sink.lock:
        runs, boots = list(sink.runs), list(sink.boots)
        sink.save()
    page = report.write(outdir, runs, chosen, arches, in_series, boots,
                        provenance=PROVENANCE, stock=stock)
    say(f"bench done in {t}: {page}")
    for arch_name, e in errors.items():
        warn(f"{arch_name}: {e}")
    status = verdict(boots)
    if interrupted or errors:
        status = 1
    manifest.write(outdir, dict(info, kernels=kernel_configs(arches, variant, flavours),
                                elapsed_s=int(time.monotonic() - t.t0),
                                job="main" if only_on is not None else
                                ("full" if full else "named"),
                                compiled=ccache_misses() - misses0, start=start),
                   status)
    say(f"{outdir / manifest.NAME}: exit status {status}, sha256 of runs.json and "
        "boots.json")
    return status


PROVENANCE = (f"How these runs were made: {manifest.NAME} beside this report, written "
              "when the bench ended (the lab's commit and patches tree, the sha256 of "
              "each kernel's .config, the compiler, binutils and QEMU versions, the "
              "bench's exit status and the sha256 of runs.json and boots.json).")


def run_info(arches):
    """What a bench's manifest records from its start: the lab's commit
    (all of it, +changes when the work tree differs), the git tree of
    patches/, and per arch the compiler and binutils that build its
    kernels (build.toolchain()) and its QEMU."""
    return {"lab_commit": repo_commit(full=True), "patches_tree": patches_tree(),
            "arches": list(arches),
            "tools": {a: dict(build.toolchain(config.arch(a).cross),
                              qemu=run.qemu_version(a)) for a in arches}}


def flavours_of(stock):
    """The kernels a bench builds and boots, patched first: the stock
    kernel only with stock (lab bench --stock)."""
    return ("patched", "stock") if stock else ("patched",)


def kernel_configs(arches, variant="default", flavours=config.FLAVOURS):
    """{arch/flavour: {config: the .config of the built tree, sha256: its
    sha256, None when there is none}} of the kernels a bench boots."""
    out = {}
    for a in arches:
        for fl in flavours:
            f = config.build_dir(a, variant, fl) / ".config"
            out[f"{a}/{fl}"] = {"config": str(f),
                                "sha256": manifest.sha256(f) if f.is_file() else None}
    return out


def list_workloads():
    """'lab bench --list': each workload, its modes and arches, whether a
    bench runs it when none is named, and what it runs."""
    for w in workloads.WORKLOADS:
        where = ", ".join(w.arches) + " only" if w.arches else "every arch"
        extra = "; retired, runs only when named" if w.retired else ""
        print(f"{w.name}: modes {', '.join(w.modes)}; {where}{extra}")
        print(f"    {w.what}")


def _join(threads):
    """Wait for the arches' threads, in short joins so that Ctrl-C reaches
    the main thread."""
    for th in threads:
        while th.is_alive():
            th.join(0.5)


def bench_arch(arch_name, chosen, first, cap, quick, outdir, sink, use_cache=True,
               variant="default", flavours=("patched", "stock")):
    """Every boot of one arch: its image, then each group of workloads that
    share boot arguments; a boot waits for its kernel (built ahead) only."""
    built = {}

    def ready(flavour):
        if flavour not in built:
            built[flavour] = build.build(arch_name, variant, flavour)

    ready("patched")
    image.build(arch_name)
    meta = {"arch": arch_name, "qemu": run.qemu_version(arch_name),
            "variant": variant,
            "config_hash": {f: build.config_hash(arch_name, variant, f)
                            for f in config.FLAVOURS},
            "series_hash": source.series_hash(), "source": source.base_version(),
            "quick": quick, "icount": "shift=0,sleep=off"}
    here = [w for w in chosen if w.runs_on(arch_name)]
    for w in chosen:
        if w not in here:
            say(f"{w.name}: not on {arch_name} (runs on {', '.join(w.arches)})")
    for _, group in boot_groups(here):
        bench_group(arch_name, group, first, cap, quick, outdir, meta, sink, ready,
                    use_cache, flavours)


def verdict(boots):
    """The bench command's exit status: 0 only when every boot's plan ended
    with LAB-EXIT 0, its console holds no kernel report (the report lists
    them per boot) and it left no run out, whatever the reason (judge(),
    missing_runs(): a non-zero exit or a signal, a setup line "# lab:
    could not ...", knobs that read back other than the mode, lost stores,
    a planned run that never reported); else 1.  A boot that did not
    complete has no entry here: main() fails the bench on its exception.

    A kprobe that could not be set on a function the kernel does not have
    is no failure: stock has no batched helper to probe, so the set-up
    fails there by design; its runs are kept (SETUP_FAILED does not match
    it) and the mechanism table says n/a for that kernel (kprobe_failed).
    On the patched kernel every function a workload's mechanisms name for
    the arch is there to probe (as itself or as the one clone gcc made of
    it, lib.sh's lab_kprobe), and so is any function stock's System.map
    lists: a kprobe that could not be set there is a count that was
    expected and did not arrive (kprobe_missing), and the bench fails (its
    time figures are kept)."""
    bad = [b for b in boots if b["kernel_reports"]]
    blind = [b for b in boots if b.get("kprobe_missing")]
    for b in blind:
        warn(f"{b['name']}: could not set a kprobe on "
             f"{', '.join(b['kprobe_missing'])}: its mechanism counts are missing")
    for b in bad:
        warn(f"{b['name']}: {b['kernel_reports']} kernel report(s): {b['first_report']}")
    died = [b for b in boots if b.get("lab_exit", 0) != 0]
    for b in died:
        warn(f"{b['name']}: the plan ended with LAB-EXIT {b['lab_exit']}")
    gone = [(b, r) for b in boots for r in b["excluded"]]
    for b, r in gone:
        warn(f"{b['name']}: {r['workload']} {r['mode']} rep {r['rep']} left out: "
             f"{'; '.join(r['excluded'])}")
    return 1 if bad or died or gone or blind else 0


def first_boots(first, stock):
    """[(repeats, first rep)] of the boots that run a flavour's first
    repeats: one boot without stock; with stock, two boots that share them
    (3 -> 2 + 1), so that each side of the check of switch off against
    stock holds runs of two boots.  Under -icount a boot repeats its runs
    to a few hundredths of a percent, but two boots of the same stock
    kernel put 7 of 44 workloads' runs apart (2026-11-30: by up to 2.4%,
    13% for x86_64's dirty-reclaim-fixed).  With two boots a side, all but
    two of the workloads left apart kept their sign in every measurement
    of the series (docs/known-costs.md): code, not the boot."""
    if not stock or first < 2:
        return [(first, 0)]
    a = (first + 1) // 2
    return [(a, 0), (first - a, a)]


def bench_group(arch_name, chosen, first, cap, quick, outdir, meta, sink,
                ready=lambda flavour: None, use_cache=True, flavours=("patched", "stock")):
    """The boots of workloads that share boot arguments: first repeats on
    each of flavours (patched, and stock if it is there; in two boots each
    with stock, first_boots()), then up to cap while a spread is over
    target.  Each
    boot's runs go to sink as soon as it ends; ready(flavour) waits for
    the flavour's kernel."""
    runs = []
    split = first_boots(first, "stock" in flavours)

    def one_boot(flavour, ws, reps, rep0):
        ready(flavour)
        kept, boot = boot_bench(arch_name, flavour, ws, reps, quick, rep0, outdir, meta,
                                use_cache)
        sink.add(kept, boot)
        return kept

    for flavour in flavours:
        for reps, rep0 in split:
            runs += one_boot(flavour, chosen, reps, rep0)
    done = first
    while done < cap:
        noisy = []
        for w in chosen:
            for flavour in flavours:
                for m in (w.modes if flavour == "patched" else ["stock"]):
                    vals = [instr_time(r) for r in runs if r["workload"] == w.name
                            and r["flavour"] == flavour and r["mode"] == m
                            and not r.get("probe")]
                    if len(vals) < 2 or spread(vals) > SPREAD_TARGET:
                        noisy.append((w, flavour))
        if not noisy:
            break
        more = min(2, cap - done)
        for flavour in flavours:
            ws = [w for w in chosen if (w, flavour) in noisy]
            if ws:
                say(f"{arch_name}/{flavour}: spread over {SPREAD_TARGET:.0%} for "
                    f"{', '.join(w.name for w in ws)}; {more} more repeat(s)")
                runs += one_boot(flavour, ws, more, done)
        done += more
    return runs

