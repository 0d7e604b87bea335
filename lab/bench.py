"""Bench: each seed's workload with its switch off and on, and on stock.

One boot of the patched kernel per arch runs every workload in every mode
(switch settings), alternating the order of modes from one repeat to the
next; one boot of the stock kernel runs every workload once per repeat, to
show that "off" is stock.  Both boots use -icount shift=0,sleep=off, so
CLOCK_MONOTONIC in the guest counts instructions ("instruction-time").
More boots follow for the measurements whose spread is still over 1%, up to
a cap.  Each run is saved as JSON; report.py makes the tables and plots.
A run counts only when it exited 0, its setup printed no failure and the
knobs benchrun read back before it are its mode (judge()); each boot's
console is scanned for kernel reports, and one fails the command.
A stock boot whose kernel, guest image, plan and QEMU are those of a
stored one is not booted again: its runs are read from the stored console
(cache.py; instruction-time repeats exactly under -icount), and the
report's boot table names it.
"""

import json
import math
import re
import threading
import time
from dataclasses import dataclass, field

from pathlib import Path

from . import build, cache, config, image, report, results, run, source
from .report import instr_time, spread
from .util import LabError, Timer, say, warn


@dataclass
class Mechanism:
    """A kernel function whose calls show what a series changes, counted
    with a kprobe event (lab_kprobe) in the probe runs (PROBE_REP) only.

    limit(run) is what a perfect batch would reach with the switch on
    (None: no such figure); arches are the arches that have the function."""
    label: str
    function: str
    arches: tuple
    limit: object = None
    key: str = ""        # the kprobe event's name, if not the function's

    @property
    def event(self):
        return self.key or self.function.lstrip("_")


# contpte blocks are unfolded and refolded when a range covers part of one;
# a batch that moves or clears whole blocks needs neither
UNFOLD = Mechanism("contpte unfolds: __contpte_try_unfold() calls",
                   "__contpte_try_unfold", ("arm64",), lambda r: 0)
FOLD = Mechanism("contpte folds: __contpte_try_fold() calls",
                 "__contpte_try_fold", ("arm64",), lambda r: 0)
# the young-bit helpers of arm64, per PTE (6.12) and per batch (the series)
YOUNG = [Mechanism("young, per PTE: contpte_ptep_clear_flush_young() calls",
                   "contpte_ptep_clear_flush_young", ("arm64",)),
         Mechanism("young, per PTE: contpte_ptep_test_and_clear_young() calls",
                   "contpte_ptep_test_and_clear_young", ("arm64",)),
         Mechanism("young, per batch: contpte_clear_flush_young_ptes() calls",
                   "contpte_clear_flush_young_ptes", ("arm64",)),
         Mechanism("young, per batch: contpte_test_and_clear_young_ptes() calls",
                   "contpte_test_and_clear_young_ptes", ("arm64",))]
# x86 flushes at once per unmapped PTE unless it defers to the batch
X86_FLUSH = [Mechanism("TLB flushes: flush_tlb_mm_range() calls",
                       "flush_tlb_mm_range", ("x86_64",)),
             Mechanism("deferred TLB flushes: arch_tlbbatch_flush() calls",
                       "arch_tlbbatch_flush", ("x86_64",))]
# reclaim flushes once before writing a batch of up to a folio_batch (31)
# dirty folios; with 4 kB folios, one flush per 31 pages swapped out
DIRTY_FLUSH = Mechanism("reclaim TLB flushes: try_to_unmap_flush_dirty() calls",
                        "try_to_unmap_flush_dirty", ("x86_64", "arm64"),
                        lambda r: math.ceil(r.get("vmstat", {}).get("pswpout", 0) / 31),
                        key="flushdirty")
RECLAIM_MECHANISMS = [UNFOLD] + YOUNG + X86_FLUSH


@dataclass
class Histogram:
    """A traced event whose numeric fields are counted per value in the
    probe runs (lab_hist): a tracepoint, or a kprobe defined with fetch
    arguments (kprobe: "function name=fetcharg...")."""
    event: str                    # group/name
    kprobe: str = ""

    @property
    def name(self):
        return self.event.split("/")[1]


# The dirty-reclaim batch at its flush: shrink_pageout_batch(pb) with
# pb->nr (after the two-pointer list head); each reclaimed list: the
# folios shrink_folio_list() was given (nr_scanned) and what became of them.
PAGEOUT_BATCH = Histogram("labh/pobatch", "shrink_pageout_batch nr=+16($arg1):u32")
RECLAIM_LISTS = Histogram("vmscan/mm_vmscan_lru_shrink_inactive")
BATCH_HISTOGRAMS = [PAGEOUT_BATCH, RECLAIM_LISTS]


@dataclass
class Workload:
    name: str
    what: str                     # one line for the report
    modes: dict                   # mode -> {switch: 0|1}
    setup: str                    # guest shell run before each measured run
    argv: list                    # full scale
    quick: list                   # --quick scale
    scale: str                    # human description of the full scale
    quick_scale: str
    seed: str = ""                # the seed's figure for the same metric
    # (label, source, key[, compare]): source is metrics, vmstat, irq or mthp;
    # compare=False keeps a counter out of the switch-off-equals-stock check
    metrics: list = field(default_factory=list)
    # kernel functions counted in the probe runs (the mechanism table)
    mechanisms: list = field(default_factory=list)
    # the seed's time with everything on against off, per arch, for the
    # summary chart (None where the seed gives no time figure)
    seed_ratio: dict = field(default_factory=dict)
    # run.boot() arguments that differ from boot_args() (e.g. cpus): such a
    # workload gets boots of its own
    boot: dict = field(default_factory=dict)
    # the arches the workload runs on (empty: every arch)
    arches: tuple = ()
    # traced events counted per value in the probe runs (the batch table)
    histograms: list = field(default_factory=list)

    def runs_on(self, arch_name):
        return not self.arches or arch_name in self.arches

    def switches(self):
        return sorted({s for m in self.modes.values() for s in m})


def _onoff(switch, **others):
    return {"off": {switch: 0, **others}, "on": {switch: 1, **others}}


# dirty-reclaim(-1w): classic LRU, 4 kB pages, swap on the RAM disk; reclaim's
# TLB flushes before writeback are counted in the probe runs (DIRTY_FLUSH)
DIRTY_SETUP = ("lab_sysfs /sys/kernel/mm/lru_gen/enabled n; lab_thp_only none; "
               "lab_ramswap")
# the workloads with several workers: every count follows the run's timing
# (which folios the thrashing workers get reclaimed): shown, not compared
# with stock
DIRTY_METRICS = [
    ("TLB shootdowns (x86)", "irq", "TLB", False),
    ("function-call IPIs (x86)", "irq", "CAL", False),
    ("IPI1 function call (arm64)", "irq", "IPI1", False),
    ("nr_tlb_remote_flush (x86)", "vmstat", "nr_tlb_remote_flush", False),
    ("nr_tlb_local_flush_one (x86)", "vmstat", "nr_tlb_local_flush_one", False),
    ("pswpout", "vmstat", "pswpout", False),
    ("CPU time of the workers (ns, instruction-time)", "metrics", "cpu_ns", False)]
# fault-latency: classic LRU, 4 kB pages, swap on zram; the toucher's fault
# latencies follow the run's timing (which of its pages reclaim takes, and
# when): shown, not compared with stock
FAULTLAT_SETUP = ("lab_sysfs /sys/kernel/mm/lru_gen/enabled n; lab_thp_only none; "
                  "lab_zramswap")
FAULTLAT_METRICS = [
    ("page-fault latency p50 (ns, instruction-time)", "metrics", "fault_p50_ns", False),
    ("page-fault latency p90 (ns, instruction-time)", "metrics", "fault_p90_ns", False),
    ("page-fault latency p99 (ns, instruction-time)", "metrics", "fault_p99_ns", False),
    ("page-fault latency max (ns, instruction-time)", "metrics", "fault_max_ns", False),
    ("timed faults", "metrics", "faults", False),
    ("pswpin", "vmstat", "pswpin", False),
    ("pswpout", "vmstat", "pswpout", False)]
MREMAP_SEED = "arm64 M3: 1.9 s -> 1.2 s (-37%); no regression with small folios"
# the mremap() calls alone, timed around each call in the guest program
# (a time, with its own spread: shown, not held to the counters' 1% in the
# switch-off-against-stock check, which the whole loop's time makes)
MREMAP_CALLS = ("mremap() calls alone (ns, instruction-time)", "metrics", "mremap_ns",
                False)
# seed 000's file-reclaim modes: each switch alone and both
FILE_MODES = {"off": {"referenced_batch": 0, "unmap_batch": 0},
              "referenced": {"referenced_batch": 1, "unmap_batch": 0},
              "unmap": {"referenced_batch": 0, "unmap_batch": 1},
              "on": {"referenced_batch": 1, "unmap_batch": 1}}
FILE_METRICS = [("pgsteal_file", "vmstat", "pgsteal_file"),
                ("pgscan_file", "vmstat", "pgscan_file")]


def _pte2m(name, what, mechanisms, **kw):
    """A file-reclaim workload whose page cache holds 2 MB folios, mapped
    by PTEs (filereclaim pte2m), classic LRU."""
    return Workload(name, what, FILE_MODES, "lab_sysfs /sys/kernel/mm/lru_gen/enabled n",
                    ["/lab/bench/filereclaim", "1024", "80", "pte2m"],
                    ["/lab/bench/filereclaim", "256", "80", "pte2m"],
                    "1 GiB file in 2 MB folios, 80% reclaimed",
                    "256 MiB file in 2 MB folios, 80% reclaimed", "",
                    FILE_METRICS +
                    [("2 MB file folios before reclaim (kB)", "metrics", "file_thp_kb"),
                     ("of them PMD-mapped (kB)", "metrics", "file_pmd_mapped_kb")],
                    mechanisms, **kw)


WORKLOADS = [
    Workload("pt-reclaim", "seed 004: touch 2 MB, MADV_DONTNEED 2 MB, per region",
             _onoff("pt_reclaim"), "lab_thp_only none",
             ["/lab/bench/ptreclaim", "4096"], ["/lab/bench/ptreclaim", "1024"],
             "4096 regions of 2 MB", "1024 regions of 2 MB",
             "VmPTE 102640 kB -> 240 kB (25600 regions)",
             [("VmPTE after (kB)", "metrics", "vmpte_after_kb"),
              ("function-call IPIs (x86)", "irq", "CAL", False),
              ("TLB shootdowns (x86)", "irq", "TLB", False),
              ("IPI1 function call (arm64)", "irq", "IPI1", False)]),
    Workload("mremap-64k", "seed 001: 1 MB of 64 KB folios, memset, mremap, munmap",
             _onoff("mremap_batch"), "lab_thp_only 64kB",
             ["/lab/bench/mremap", "1024", "10000"], ["/lab/bench/mremap", "1024", "1000"],
             "10000 iterations", "1000 iterations", MREMAP_SEED,
             [MREMAP_CALLS, ("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")],
             [UNFOLD, FOLD], {"arm64": 1.2 / 1.9}),
    Workload("mremap-4k", "seed 001 program with 4 KB pages only",
             _onoff("mremap_batch"), "lab_thp_only none",
             ["/lab/bench/mremap", "1024", "10000"], ["/lab/bench/mremap", "1024", "1000"],
             "10000 iterations", "1000 iterations", "no regression", [MREMAP_CALLS]),
    Workload("mremap-2m", "seed 001 program on 2 MB, PMD-mapped THP",
             _onoff("mremap_batch"), "lab_thp_only 2048kB",
             ["/lab/bench/mremap", "2048", "5000"], ["/lab/bench/mremap", "2048", "500"],
             "5000 iterations", "500 iterations", "no regression",
             [MREMAP_CALLS, ("2 MB THP faulted", "mthp", "2048kB/anon_fault_alloc")]),
    Workload("bigheap", "stress-ng --bigheap (realloc; the x86 regression upstream fixed)",
             _onoff("mremap_batch"), "lab_thp_only none",
             ["/usr/bin/stress-ng", "--bigheap", "1", "--bigheap-ops", "4000",
              "--timeout", "0", "--quiet"],
             ["/usr/bin/stress-ng", "--bigheap", "1", "--bigheap-ops", "1000",
              "--timeout", "0", "--quiet"],
             "4000 bogo ops", "1000 bogo ops",
             "x86: -37% bigheap throughput before the pte_batch_hint() fix"),
    Workload("file-reclaim", "seed 000: map clean XFS large folios in a memcg, "
             "memory.reclaim 80%",
             FILE_MODES, "lab_sysfs /sys/kernel/mm/lru_gen/enabled n",
             ["/lab/bench/filereclaim", "1024", "80"], ["/lab/bench/filereclaim", "256", "80"],
             "1 GiB file, 80% reclaimed", "256 MiB file, 80% reclaimed",
             "young batching -33% arm64 / -10% x86; batched unmap -75% arm64 / -50% x86",
             FILE_METRICS,
             RECLAIM_MECHANISMS,
             # 1.518 s -> 1.018 s -> 0.249 s (arm64); -10% then -50% (x86)
             {"arm64": 0.249 / 1.518, "x86_64": 0.9 * 0.5}),
    _pte2m("file-reclaim-pte2m", "seed 000 with 2 MB file folios mapped by PTEs, "
           "on the default CPU", RECLAIM_MECHANISMS),
    _pte2m("file-reclaim-pte2m-a72", "seed 000 on a CPU without range TLBI "
           "(QEMU -cpu cortex-a72): 2 MB file folios mapped by PTEs, so that a "
           "young or unmap batch covers 512 PTEs, the size at which arm64 "
           "invalidates the whole ASID (flush_tlb_mm()) instead of page by page",
           [UNFOLD] + YOUNG, boot={"cpu": "cortex-a72"}, arches=("arm64",)),
    Workload("file-reclaim-mglru", "seed 003: the file-reclaim workload with MGLRU on",
             # off is every batching off, so that it compares with stock;
             # young batching with MGLRU is the rmap walk's run handed to
             # the look-around (referenced_batch) and the look-around
             # window and aging walk (mglru_young_batch)
             {"off": {"referenced_batch": 0, "mglru_young_batch": 0, "unmap_batch": 0},
              "young": {"referenced_batch": 1, "mglru_young_batch": 1, "unmap_batch": 0},
              "unmap": {"referenced_batch": 0, "mglru_young_batch": 0, "unmap_batch": 1},
              "on": {"referenced_batch": 1, "mglru_young_batch": 1, "unmap_batch": 1}},
             "lab_sysfs /sys/kernel/mm/lru_gen/enabled y",
             ["/lab/bench/filereclaim", "1024", "80"], ["/lab/bench/filereclaim", "256", "80"],
             "1 GiB file, 80% reclaimed", "256 MiB file, 80% reclaimed",
             "arm64 0.470 s -> 0.180 s (-60%); x86 -15%",
             FILE_METRICS,
             RECLAIM_MECHANISMS, {"arm64": 0.180 / 0.470, "x86_64": 0.85}),
    Workload("dirty-reclaim", "seed 002: stress-ng --vm in a memcg whose memory.high is a "
             "quarter of its working set, swap on a RAM disk",
             _onoff("reclaim_tlb_batch"), DIRTY_SETUP,
             ["/lab/bench/dirtyreclaim", "2", "512", "400"],
             ["/lab/bench/dirtyreclaim", "2", "256", "100"],
             "2 workers, 512 MB, memory.high 128 MB, 400 ops in all",
             "2 workers, 256 MB, memory.high 64 MB, 100 ops in all",
             "TLB shootdowns -68.2%, function-call IPIs -57.4%, bogo ops/s +26.9%",
             DIRTY_METRICS,
             [DIRTY_FLUSH], histograms=BATCH_HISTOGRAMS),
    Workload("dirty-reclaim-1w", "seed 002 with one worker: reclaim work repeats "
             "exactly, so the measured phase is the worker's CPU time "
             "(instructions, throttling sleeps excluded)",
             _onoff("reclaim_tlb_batch"), DIRTY_SETUP,
             ["/lab/bench/dirtyreclaim", "1", "256", "200", "cpu"],
             ["/lab/bench/dirtyreclaim", "1", "128", "100", "cpu"],
             "1 worker, 256 MB, memory.high 64 MB, 200 ops",
             "1 worker, 128 MB, memory.high 32 MB, 100 ops",
             "bogo ops/s +26.9% (16 workers)",
             [("pswpout", "vmstat", "pswpout"),
              ("elapsed instruction-time (ns, throttling included)", "metrics",
               "elapsed_ns", False),
              ("TLB shootdowns (x86)", "irq", "TLB", False),
              ("nr_tlb_remote_flush (x86)", "vmstat", "nr_tlb_remote_flush", False)],
             [DIRTY_FLUSH], histograms=BATCH_HISTOGRAMS),
    Workload("dirty-reclaim-8cpu", "seed 002 at 8 vCPUs, one stress-ng --vm worker per "
             "vCPU: under -icount the vCPUs take turns on one host thread, so every "
             "remote CPU's flush and IPI handler is counted in instruction-time",
             _onoff("reclaim_tlb_batch"), DIRTY_SETUP,
             # stress-ng shares --vm-ops (and --vm-bytes) among its
             # workers: 25 ops for 8 workers faulted 70 MB and swapped nothing
             ["/lab/bench/dirtyreclaim", "8", "512", "800"],
             ["/lab/bench/dirtyreclaim", "8", "256", "200"],
             "8 workers, 512 MB, memory.high 128 MB, 800 ops",
             "8 workers, 256 MB, memory.high 64 MB, 200 ops",
             "16 CPUs: bogo ops/s +26.9%, TLB shootdowns -68.2%, function-call IPIs "
             "-57.4%",
             DIRTY_METRICS,
             [DIRTY_FLUSH], boot={"cpus": 8}, histograms=BATCH_HISTOGRAMS),
    Workload("fault-latency", "seed 002's risk: one thread dirties anonymous memory in a "
             "memcg whose memory.high is a quarter of it, swap on zram, while another "
             "times each store to one of its own pages that reclaim swapped out",
             _onoff("reclaim_tlb_batch"), FAULTLAT_SETUP,
             ["/lab/bench/faultlat", "256", "16", "64", "2"],
             ["/lab/bench/faultlat", "64", "4", "16", "2"],
             "256 MB dirtied twice, memory.high 64 MB, 16 MB touched",
             "64 MB dirtied twice, memory.high 16 MB, 4 MB touched",
             "not measured upstream (seed 002 holds up to 31 folio locks "
             "across pageout)",
             FAULTLAT_METRICS,
             [DIRTY_FLUSH], histograms=BATCH_HISTOGRAMS),
]
BY_NAME = {w.name: w for w in WORKLOADS}

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


def kprobe_lines(workloads, arch_name):
    """lab_kprobe lines for the mechanisms of the workloads on an arch."""
    seen = {}
    for w in workloads:
        for m in w.mechanisms:
            if arch_name in m.arches:
                seen.setdefault(m.event, m.function)
    return [f"lab_kprobe {e} {f}" for e, f in seen.items()]


# The rep number of a probe run: the mechanisms' kprobes are armed only in
# these runs, which the report keeps out of every time and counter figure
# (a hit costs the probe's trap, hundreds of instructions).
PROBE_REP = -1


def plan(workloads, reps, flavour, quick, rep0=0, only_mode=None, arch_name=None):
    """The guest plan; only_mode runs one mode of each patched workload.
    With arch_name, each workload and mode then runs once more as a probe
    run (rep PROBE_REP) with the kprobes of that arch's mechanisms armed."""
    lines = [". /lab/lib.sh", "swapon -s >/dev/null 2>&1", "cd /tmp"]
    probes = kprobe_lines(workloads, arch_name) if arch_name else []
    if probes:
        lines += probes + ["lab_kprobes_arm 0"]
    hists = {h.event: h for w in workloads for h in w.histograms} if arch_name else {}
    for h in hists.values():
        lines.append(f"lab_hist {h.event} '{h.kprobe}'" if h.kprobe else
                     f"lab_hist {h.event}")

    def modes_of(w):
        modes = list(w.modes) if flavour == "patched" else ["stock"]
        return [only_mode] if only_mode and flavour == "patched" else modes

    def one(w, m, r):
        argv = " ".join(w.quick if quick else w.argv)
        lines.append(w.setup)
        if flavour == "patched":
            for sw, v in sorted(w.modes[m].items()):
                lines.append(f"lab_switch {sw} {v}")
        lines.append("sync; echo 3 > /proc/sys/vm/drop_caches")
        traced = r == PROBE_REP and w.histograms and hists
        if traced:
            lines.append("lab_hist_start")
        lines.append(f"lab_bench {w.name} {m} {r} -- {argv}")
        if traced:
            lines.append(f"lab_hist_dump {w.name} {m} {r}")

    def reset():
        if flavour == "patched":
            for sw in sorted({s for w in workloads for s in w.switches()}):
                lines.append(f"lab_switch {sw} 1")

    for r in range(rep0, rep0 + reps):
        for w in workloads:
            modes = modes_of(w)
            if r % 2:
                modes.reverse()
            for m in modes:
                one(w, m, r)
        reset()
    if (probes or hists) and rep0 == 0:
        if probes:
            lines.append("lab_kprobes_arm 1")
        for w in workloads:
            if any(arch_name in mech.arches for mech in w.mechanisms) or w.histograms:
                for m in modes_of(w):
                    one(w, m, PROBE_REP)
        if probes:
            lines.append("lab_kprobes_arm 0")
        reset()
    return "\n".join(lines) + "\nexit 0\n"


def parse_runs(boot, meta):
    """BENCH lines of a boot -> run records, with host wall time per run."""
    runs = []
    start = None
    for t, line in boot.stamps:
        if line.startswith("BENCH-START"):
            start = t
        elif line.startswith("BENCH {"):
            rec = json.loads(line[len("BENCH "):])
            rec["wall_s"] = round(t - start, 3) if start is not None else None
            rec.update(meta)
            runs.append(rec)
            start = None
        elif line.startswith("BENCH-HIST {"):
            h = json.loads(line[len("BENCH-HIST "):])
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
        elif (m := re.search(r"BENCH-START (\S+) (\S+) (-?\d+)", line)):
            out[m.groups()] = since
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
    """(THP size, MGLRU) that a workload's setup sets: the size of
    'lab_thp_only SIZE' ('none' for 4 kB pages only) and 'y' or 'n' for
    lru_gen/enabled; None for what it leaves as it is."""
    thp = re.search(r"\blab_thp_only ([^\s;]+)", w.setup)
    lru = re.search(r"\blab_sysfs /sys/kernel/mm/lru_gen/enabled ([yn])\b", w.setup)
    return thp and thp.group(1), lru and lru.group(1)


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
        for sw, v in sorted(w.modes.get(mode, {}).items()):
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


def judge(boot_text, runs, flavour):
    """Mark the runs of a boot to leave out: rec['excluded'] lists why (a
    non-zero exit, a setup step that failed, knobs that did not read back
    as the run's mode); returns (kept runs, [excluded runs])."""
    failed = setup_failures(boot_text)
    kept, out = [], []
    for rec in runs:
        why = [] if rec["exit"] == 0 else [f"exit {rec['exit']}"]
        why += failed.get((rec["workload"], rec["mode"], str(rec["rep"])), [])
        why += state_problems(BY_NAME[rec["workload"]], flavour, rec["mode"], rec)
        if why:
            rec["excluded"] = why
            out.append(rec)
        else:
            kept.append(rec)
    return kept, out


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
    tail = f", about {_mmss(left)} left" if left is not None and done < planned else ""
    return f"{done}/{planned} runs, {_mmss(elapsed)}{tail}"


def _mmss(seconds):
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


class Sink:
    """The runs and boots of a bench so far, shared by the arches' threads;
    runs.json and boots.json are rewritten after every boot, so that an
    interrupted bench keeps what it finished ('lab report DIR')."""

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
    kernel = build.image_path(arch_name, "default", flavour)
    extra = workloads[0].boot
    tag = "".join(f"-{k}{v}" for k, v in sorted(extra.items()))
    name = f"{arch_name}-bench-{flavour}{tag}-r{rep0}"
    text = plan(workloads, reps, flavour, quick, rep0, arch_name=arch_name)
    planned = sum(line.startswith("lab_bench ") for line in text.splitlines())
    say(f"bench boot {name}: {len(workloads)} workloads x {reps} repeats, "
        f"{planned} runs")
    t0, done = time.monotonic(), [0]

    def echo(line):
        if line.startswith("BENCH {"):
            rec = json.loads(line[6:])
            done[0] += 1
            say(f"  {arch_name}/{flavour} {rec['workload']:20} {rec['mode']:10} "
                f"rep {rec['rep']}: {instr_time(rec) / 1e9:.4f} s instruction-time"
                f"{'' if rec['exit'] == 0 else ' EXIT ' + str(rec['exit'])}  "
                f"[{progress(done[0], planned, time.monotonic() - t0)}]")
        elif line.startswith(("LAB-", "lab: ", "# lab: could not")) or \
                "Kernel panic" in line:
            say(f"  [{name}] {line}")

    env = {"LAB_ARCH": arch_name, "LAB_FLAVOUR": flavour, "LAB_VARIANT": "default"}
    kwargs = dict(boot_args(quick), **extra)
    stored = stock_key(arch_name, kernel, text, env, kwargs) \
        if flavour == "stock" and use_cache else None
    hit = cache.load(name, stored[0]) if stored else None
    if hit:
        reused, b = hit
        say(f"bench boot {name}: stock runs reused from {reused} (key "
            f"{stored[0][:16]}: same kernel, image, plan and QEMU)")
    else:
        reused = None
        b = run.boot(arch_name, kernel, text, env, name, echo=echo, **kwargs)
    if not b.ready or b.exit_code is None:
        raise LabError(f"bench boot {name} did not complete (console: {b.console})")
    failed = []
    for line in b.text().splitlines():
        m = re.search(r"could not set a kprobe on (\S+)", line)
        if m:
            failed.append(m.group(1))
            warn(f"{name}: could not set a kprobe on {m.group(1)}; its "
                 "mechanism row is left out")
    m = re.search(r"LAB-READY: (\S+)", b.text())
    meta = dict(meta_base, flavour=flavour, kernel=m.group(1) if m else "unknown",
                console=str(b.console), kprobe_failed=failed,
                cpus=dict(boot_args(quick), **extra)["cpus"], cpu=extra.get("cpu"))
    runs = parse_runs(b, meta)
    for rec in runs:
        rec["probe"] = rec["rep"] == PROBE_REP
        w = BY_NAME[rec["workload"]]
        rec["scale"] = w.quick_scale if quick else w.scale
    text = b.text()
    kept, excluded = judge(text, runs, flavour)
    for rec in runs:
        f = outdir / "runs" / (f"{arch_name}-{flavour}-{rec['workload']}-{rec['mode']}"
                               f"-r{rec['rep']}.json")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(rec, indent=1))
    for r in excluded:
        warn(f"{arch_name}/{flavour} {r['workload']} {r['mode']} rep {r['rep']} "
             f"left out: {'; '.join(r['excluded'])}")
    reports = results.kernel_reports(text)
    if reports:
        warn(f"{name}: {len(reports)} kernel report(s), the first: {reports[0]}")
    boot = {"name": name, "arch": arch_name, "flavour": flavour,
            "console": str(b.console), "kernel_reports": len(reports),
            "first_report": reports[0] if reports else "", "runs": len(kept),
            "excluded": [{k: r[k] for k in ("workload", "mode", "rep", "excluded")}
                         for r in excluded],
            "reused": str(reused) if reused else ""}
    if stored and not reused:
        if excluded or reports:
            say(f"{name}: not stored for reuse (runs left out or kernel reports)")
        else:
            say(f"{name}: stock runs stored in {cache.store(name, *stored, b)}")
    return kept, boot


def stock_key(arch_name, kernel, plan_text, env, kwargs):
    """(key, inputs) under which a stock bench boot is stored (cache.py):
    the kernel's and the guest image's bytes, the plan, the boot's
    arguments and the QEMU version and command line; None when the kernel
    or the image is not there to hash."""
    files = {"kernel": kernel, "image": image.base_path(arch_name)}
    if not all(Path(f).is_file() for f in files.values()):
        return None
    args = dict(kwargs, arch=arch_name, env=env, bench=True,
                qemu=run.qemu_version(arch_name),
                qemu_cmd=run.qemu_cmd(arch_name, "KERNEL", "INITRD",
                                      mem_mb=kwargs["mem_mb"], cpus=kwargs["cpus"],
                                      append=kwargs.get("append", ""),
                                      icount=kwargs.get("icount", False),
                                      cpu=kwargs.get("cpu")))
    return cache.key(files, plan_text, args)


def main(arches, workloads=None, quick=False, repeats=None, min_repeats=None,
         use_cache=True):
    t = Timer()
    names = workloads or [w.name for w in WORKLOADS]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise LabError(f"unknown workload(s): {', '.join(unknown)} "
                       f"(known: {', '.join(BY_NAME)})")
    chosen = [BY_NAME[n] for n in names]
    nowhere = [w.name for w in chosen if not any(w.runs_on(a) for a in arches)]
    if nowhere and workloads:
        raise LabError(f"{', '.join(nowhere)}: not a workload for "
                       f"{', '.join(arches)} (use -a)")
    chosen = [w for w in chosen if w.name not in nowhere]
    first = min_repeats or (2 if quick else 3)
    cap = max(repeats or (3 if quick else 7), first)
    first = min(first, cap)
    source.apply()
    outdir = new_outdir(config.WORK / "results", f"bench-{time.strftime('%Y%m%d-%H%M%S')}")
    for w in chosen:
        missing = [s for s in w.switches() if not in_series(s)]
        if missing:
            warn(f"{w.name}: {', '.join(missing)} not in the series yet; the "
                 "workload runs but measures stock 6.12 in every mode")
    sink = Sink(outdir)
    # every kernel, patched ones first (the first boots of each arch), built
    # one after the other beside the boots of the kernels before them
    build.build_ahead([(a, "default", f) for f in config.FLAVOURS[::-1] for a in arches])
    errors = {}

    def one(arch_name):
        try:
            bench_arch(arch_name, chosen, first, cap, quick, outdir, sink, use_cache)
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
    page = report.write(outdir, runs, chosen, arches, in_series, boots)
    say(f"bench done in {t}: {page}")
    if interrupted or errors:
        for arch_name, e in errors.items():
            warn(f"{arch_name}: {e}")
        verdict(boots)
        return 1
    return verdict(boots)


def _join(threads):
    """Wait for the arches' threads, in short joins so that Ctrl-C reaches
    the main thread."""
    for th in threads:
        while th.is_alive():
            th.join(0.5)


def bench_arch(arch_name, chosen, first, cap, quick, outdir, sink, use_cache=True):
    """Every boot of one arch: its image, then each group of workloads that
    share boot arguments; a boot waits for its kernel (built ahead) only."""
    built = {}

    def ready(flavour):
        if flavour not in built:
            built[flavour] = build.build(arch_name, "default", flavour)

    ready("patched")
    image.build(arch_name)
    meta = {"arch": arch_name, "qemu": run.qemu_version(arch_name),
            "config_hash": {f: build.config_hash(arch_name, "default", f)
                            for f in config.FLAVOURS},
            "series_hash": source.series_hash(), "source": source.base_version(),
            "quick": quick, "icount": "shift=0,sleep=off"}
    here = [w for w in chosen if w.runs_on(arch_name)]
    for w in chosen:
        if w not in here:
            say(f"{w.name}: not on {arch_name} (runs on {', '.join(w.arches)})")
    for _, group in boot_groups(here):
        bench_group(arch_name, group, first, cap, quick, outdir, meta, sink, ready,
                    use_cache)


def verdict(boots):
    """The bench command's exit status: 1 when a boot's console holds a
    kernel report (the report lists them per boot), else 0."""
    bad = [b for b in boots if b["kernel_reports"]]
    for b in bad:
        warn(f"{b['name']}: {b['kernel_reports']} kernel report(s): {b['first_report']}")
    return 1 if bad else 0


def bench_group(arch_name, chosen, first, cap, quick, outdir, meta, sink,
                ready=lambda flavour: None, use_cache=True):
    """The boots of workloads that share boot arguments: first repeats on
    patched and stock, then up to cap while a spread is over target.  Each
    boot's runs go to sink as soon as it ends; ready(flavour) waits for
    the flavour's kernel."""
    runs = []

    def one_boot(flavour, ws, reps, rep0):
        ready(flavour)
        kept, boot = boot_bench(arch_name, flavour, ws, reps, quick, rep0, outdir, meta,
                                use_cache)
        sink.add(kept, boot)
        return kept

    for flavour in ("patched", "stock"):
        runs += one_boot(flavour, chosen, first, 0)
    done = first
    while done < cap:
        noisy = []
        for w in chosen:
            for flavour, modes in (("patched", list(w.modes)), ("stock", ["stock"])):
                for m in modes:
                    vals = [instr_time(r) for r in runs if r["workload"] == w.name
                            and r["flavour"] == flavour and r["mode"] == m
                            and not r.get("probe")]
                    if len(vals) < 2 or spread(vals) > SPREAD_TARGET:
                        noisy.append((w, flavour))
        if not noisy:
            break
        more = min(2, cap - done)
        for flavour in ("patched", "stock"):
            ws = [w for w in chosen if (w, flavour) in noisy]
            if ws:
                say(f"{arch_name}/{flavour}: spread over {SPREAD_TARGET:.0%} for "
                    f"{', '.join(w.name for w in ws)}; {more} more repeat(s)")
                runs += one_boot(flavour, ws, more, done)
        done += more
    return runs


def report_dir(outdir):
    """'lab report DIR': the report of a bench directory's runs.json again
    (with this lab's report code), e.g. of runs copied back from another
    machine, or of the directory run-here.sh wrote (here.collect())."""
    f = outdir / "runs.json"
    if (outdir / "bench.log").exists() and (outdir / "host.txt").exists():
        from . import here
        runs = here.collect(outdir)      # run-here.sh's output; writes runs.json
    elif not f.exists():
        raise LabError(f"{f} not found: a bench directory holds runs.json, and "
                       "run-here.sh's holds bench.log and host.txt")
    else:
        runs = json.loads(f.read_text())
    names = {r["workload"] for r in runs}
    unknown = sorted(names - set(BY_NAME))
    if unknown:
        raise LabError(f"{f} has runs of workloads this lab does not know: "
                       f"{', '.join(unknown)}")
    chosen = [w for w in WORKLOADS if w.name in names]
    arches = [a for a in config.ARCHES if any(r["arch"] == a for r in runs)]
    b = outdir / "boots.json"
    boots = json.loads(b.read_text()) if b.exists() else None
    return report.write(outdir, runs, chosen, arches, in_series, boots)
