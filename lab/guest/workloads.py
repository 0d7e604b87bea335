# SPDX-License-Identifier: GPL-2.0-only
"""Workloads: what 'lab bench' runs in the guest, and the plan that runs it.

Each Workload is one program of the bench (a seed's workload, or a variant
of one), declared by field name: its modes (switch settings), what it is
set up with (THP size, LRU, swap; the guest shell of its setup is made from
those fields, and nothing parses it back), its full and --quick
scale, what the report shows of it (metrics, the seed's figures) and the
kernel functions counted in its probe runs (Mechanism).  plan() makes the
guest plan of a boot from them.  'lab bench' (bench.py) boots the plans and
judges the runs; 'lab bench --bundle' (here.py) writes the same plan for a
machine of its own; 'lab profile' (profile.py) runs one workload.
"""

import math
from dataclasses import dataclass, field

from ..core import config
from ..core.util import LabError, warn
from . import suites


@dataclass
class Mechanism:
    """A kernel function whose calls show what a series changes, counted
    with a kprobe event (lab_kprobe) in the probe runs (PROBE_REP) only.

    limit(run) is what a perfect batch would reach with the switch on
    (None: no such figure); arches are the arches that have the function;
    also names functions whose calls count as the function's: the same work,
    which a kernel calls in its place (the patched kernel with a switch on),
    and which a kernel without them (stock) cannot be probed for."""
    label: str
    function: str
    arches: tuple
    limit: object = None
    key: str = ""        # the kprobe event's name, if not the function's
    also: tuple = ()

    @property
    def event(self):
        return self.key or self.function.lstrip("_")

    @property
    def probes(self):
        """(event, function) of each kprobe the mechanism counts."""
        return [(self.event, self.function)] + \
            [(f.lstrip("_"), f) for f in self.also]


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
# x86's TLB flushes as kprobe counts, where CONFIG_DEBUG_TLBFLUSH's
# nr_tlb_* counters would need a debug option Debian's config has off:
# each flush that goes to other CPUs, and each flush a CPU runs (its own
# and those it receives)
X86_REMOTE = Mechanism("remote TLB flushes: native_flush_tlb_multi() calls",
                       "native_flush_tlb_multi", ("x86_64",))
X86_RUN = Mechanism("TLB flushes run: flush_tlb_func() calls",
                    "flush_tlb_func", ("x86_64",))


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


# lru_gen/enabled for a Workload.lru, and the guest/lib.sh step of a
# Workload.swap
LRU_KNOB = {"classic": "n", "mglru": "y"}
SWAP_STEP = {"ram": "lab_ramswap", "zram": "lab_zramswap"}
# the per-size shmem knob of 64 KB folios (Workload.shmem_64k)
SHMEM_64K = "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/shmem_enabled"


@dataclass(kw_only=True)
class Workload:
    name: str
    what: str                     # one line for the report
    modes: dict                   # mode -> {switch: 0|1}
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
    # run.boot() arguments that differ from bench.boot_args() (e.g. cpus):
    # such a workload gets boots of its own
    boot: dict = field(default_factory=dict)
    # the arches the workload runs on (empty: every arch)
    arches: tuple = ()
    # traced events counted per value in the probe runs (the batch table)
    histograms: list = field(default_factory=list)
    # why a workload is no longer run (empty: it is): a retired workload is
    # kept so that stored runs of it still make their report, but no bench
    # or bundle runs it unless named
    retired: str = ""
    # What each measured run is set up with (setup): the THP size it may
    # use ("none": 4 KB pages only; lab_thp_only of guest/lib.sh), the LRU
    # ("classic" or "mglru"), the swap device ("ram": the RAM disk, "zram")
    # and the shmem knob of 64 KB folios ("always", "never"); None leaves a
    # knob as the boot has it.
    thp: str = None
    lru: str = None
    swap: str = None
    shmem_64k: str = None

    @property
    def setup(self):
        """The guest shell the plan runs before each measured run, made
        from the fields above."""
        steps = []
        if self.lru:
            steps.append(f"lab_sysfs /sys/kernel/mm/lru_gen/enabled {LRU_KNOB[self.lru]}")
        if self.thp:
            steps.append(f"lab_thp_only {self.thp}")
        if self.shmem_64k:
            steps.append(f"lab_sysfs {SHMEM_64K} {self.shmem_64k}")
        if self.swap:
            steps.append(SWAP_STEP[self.swap])
        return "; ".join(steps)

    def runs_on(self, arch_name):
        return not self.arches or arch_name in self.arches

    def switches(self, arch_name=None):
        """The switches the modes set; on @arch_name, those it builds."""
        return sorted({s for m in self.modes for s in self.mode_switches(m, arch_name)})

    def mode_switches(self, mode, arch_name=None):
        """{switch: value} of @mode ({} for a mode it lacks); on @arch_name
        only the switches its kernel shows (config.HIDDEN_SWITCHES: a mode
        may name arm64's contpte_early_exit, which x86_64 does not build)."""
        hidden = config.HIDDEN_SWITCHES.get(arch_name, ())
        return {s: v for s, v in self.modes.get(mode, {}).items() if s not in hidden}

    def settings(self, mode, arch_name=None):
        """{switch: value} a run of @mode writes: every switch the kernel
        of @arch_name shows, the mode's own as the mode sets them and every
        other one off, so that a mode measures its series against stock
        (an "off" mode is then the 6.12 code path whatever the other
        switches default to) and a run does not depend on which workloads
        ran before it.  With no @arch_name, the switches every arch shows."""
        return {**{s: 0 for s in shown_switches(arch_name)},
                **self.mode_switches(mode, arch_name)}


def shown_switches(arch_name=None):
    """The switches the kernel of @arch_name shows, in config.SWITCHES's
    order; with no @arch_name, those of every arch."""
    hidden = config.HIDDEN_SWITCHES.get(arch_name) if arch_name else \
        {s for h in config.HIDDEN_SWITCHES.values() for s in h}
    return [s for s in config.SWITCHES if s not in hidden]


def boot_kwargs(boot, extra=()):
    """run.boot() arguments of a Workload.boot: as they are, but "numa"
    (a node count; 2 only) becomes the QEMU arguments of suites.NUMA_QEMU,
    before @extra."""
    kw = dict(boot)
    nodes = kw.pop("numa", None)
    if nodes not in (None, 2):
        raise LabError(f"a workload asks for {nodes} NUMA nodes; the lab boots 2")
    kw["extra"] = list(suites.NUMA_QEMU if nodes else ()) + list(extra)
    return kw


def _onoff(switch, **others):
    return {"off": {switch: 0, **others}, "on": {switch: 1, **others}}


# dirty-reclaim*: classic LRU, 4 kB pages, swap on the RAM disk; reclaim's
# TLB flushes before writeback are counted in the probe runs (DIRTY_FLUSH)
DIRTY_SETUP = {"lru": "classic", "thp": "none", "swap": "ram"}
# the workloads with several workers: every count follows the run's timing
# (which folios the thrashing workers get reclaimed): shown, not compared
# with stock
DIRTY_METRICS = [
    ("TLB shootdowns (x86)", "irq", "TLB", False),
    ("function-call IPIs (x86)", "irq", "CAL", False),
    ("IPI1 function call (arm64)", "irq", "IPI1", False),
    ("pswpout", "vmstat", "pswpout", False),
    ("CPU time of the workers (ns, instruction-time)", "metrics", "cpu_ns", False)]
# the fixed form of dirtyreclaim: the workers do the same work each run,
# but which worker's pages reclaim takes still follows their timing, so
# the swap-outs, flushes and IPIs are shown, not compared with stock
DIRTY_FIXED_METRICS = [
    ("pswpout", "vmstat", "pswpout", False),
    ("TLB shootdowns (x86)", "irq", "TLB", False),
    ("function-call IPIs (x86)", "irq", "CAL", False),
    ("IPI1 function call (arm64)", "irq", "IPI1", False),
    ("elapsed instruction-time of the timed passes (ns)", "metrics", "elapsed_ns",
     False)]


def _dirty_fixed(name, workers, what, seed, **kw):
    """A dirty-reclaim workload of dirtyreclaim's fixed form: WORKERS share
    512 MB (256 at --quick), memory.max a quarter of it, 4 timed passes (2
    at --quick: 26 s of TCG wall time per arm64 run with 4, the main job's
    longest)."""
    return Workload(
        name=name,
        what=what,
        modes=_onoff("reclaim_tlb_batch"),
        **DIRTY_SETUP,
        argv=["/lab/bench/dirtyreclaim", str(workers), "512", "5", "fixed"],
        quick=["/lab/bench/dirtyreclaim", str(workers), "256", "3", "fixed"],
        scale=f"{workers} workers of {512 // workers} MB, memory.max 128 MB, 4 timed passes",
        quick_scale=f"{workers} workers of {256 // workers} MB, memory.max 64 MB, 2 timed passes",
        seed=seed,
        metrics=DIRTY_FIXED_METRICS,
        mechanisms=[DIRTY_FLUSH, X86_REMOTE, X86_RUN],
        histograms=BATCH_HISTOGRAMS,
        **kw)


# why every stress-ng form but dirty-reclaim (the seed's own) is no longer run
STRESS_NG_RETIRED = ("its runs did not repeat (stress-ng: see guest/bench/dirtyreclaim.c); "
                     "replaced by the fixed form, dirty-reclaim-fixed*")
# fault-latency: classic LRU, 4 kB pages, swap on zram; the toucher's fault
# latencies follow the run's timing (which of its pages reclaim takes, and
# when): shown, not compared with stock
FAULTLAT_SETUP = {"lru": "classic", "thp": "none", "swap": "zram"}
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


def _mremap(name, what, thp, kb, iters, seed, metrics=(), quick_iters=None, **kw):
    """A workload of the seed 001 program (guest/bench/mremap.c): @kb of
    memory in folios of @thp, written, moved and unmapped @iters times
    (@quick_iters, a tenth of them unless given, with --quick); the mremap()
    calls are timed alone."""
    quick_iters = quick_iters or iters // 10
    return Workload(
        name=name,
        what=what,
        modes=_onoff("mremap_batch"),
        thp=thp,
        argv=["/lab/bench/mremap", str(kb), str(iters)],
        quick=["/lab/bench/mremap", str(kb), str(quick_iters)],
        scale=f"{iters} iterations",
        quick_scale=f"{quick_iters} iterations",
        seed=seed,
        metrics=[MREMAP_CALLS] + list(metrics),
        **kw)


# the mprotect() calls alone, timed around each pair of calls in the guest
# program (shown, not held to the switch-off-against-stock check)
MPROTECT_CALLS = ("mprotect() calls alone (ns, instruction-time)", "metrics",
                  "mprotect_ns", False)


# The mprotect() workloads where batching is refused or partial: calls of
# the page-table look (mprotect_starts_large(): which copy of
# change_pte_range() a page table gets) and of the batched copy, both
# arches (both noinline in mm/mprotect_batch.c); on arm64 also the batches
# (modify_prot_start_ptes()) and the single-PTE changes
# (ptep_modify_prot_start()), which x86 has inline.  Stock 6.12 has none
# of them but ptep_modify_prot_start(): its rows read n/a there.
MPROTECT_MECHANISMS = [
    Mechanism("page tables looked at: mprotect_starts_large() calls",
              "mprotect_starts_large", ("x86_64", "arm64")),
    Mechanism("page tables changed by the batched copy: change_pte_range_batched() "
              "calls", "change_pte_range_batched", ("x86_64", "arm64")),
    Mechanism("batches: modify_prot_start_ptes() calls", "modify_prot_start_ptes",
              ("arm64",)),
    Mechanism("single-PTE changes: ptep_modify_prot_start() calls",
              "ptep_modify_prot_start", ("arm64",))]
# midfolio's calls start and end inside a contiguous block, which must be
# unfolded whatever the batching: no limit of 0 for its unfolds and folds
MIDFOLIO_FOLDS = [Mechanism(m.label, m.function, m.arches) for m in (UNFOLD, FOLD)]
# mprotect-filedirty sets the shmem knob of 64 KB folios for its MAP_SHARED
# anonymous memory (Workload.shmem_64k), and mprotect-4k-shared, whose shmem
# is of 4 KB folios, puts it back, since no setup of a boot undoes another's


def _mprotect(name, what, thp, kind, seed, metrics=(), mechanisms=(),
              seed_ratio=None, shmem_64k=None):
    """A workload of the mprotect program (guest/bench/mprotect.c): 256 MB
    (64 MB with --quick) of @kind memory, PROT_READ and back 40 (20)
    times."""
    return Workload(
        name=name,
        what=what,
        modes=_onoff("mprotect_batch"),
        thp=thp,
        argv=["/lab/bench/mprotect", "262144", "40", kind],
        quick=["/lab/bench/mprotect", "65536", "20", kind],
        scale="256 MB, 40 rounds",
        quick_scale="64 MB, 20 rounds",
        seed=seed,
        metrics=[MPROTECT_CALLS] + list(metrics),
        mechanisms=list(mechanisms),
        seed_ratio=seed_ratio or {},
        shmem_64k=shmem_64k)


# the scan passes alone (time_ns): task_numa_work() timed by a kprobe and a
# kretprobe until numa_pte_updates grew by the region's PTEs, per pass
# (guest/bench/numascan.c)
NUMA_METRICS = [("PTEs made PROT_NONE (numa_pte_updates)", "metrics", "pte_updates"),
                ("longest pass (ns, instruction-time)", "metrics", "longest_pass_ns", False)]


def _numascan(name, what, thp, seed, metrics=(), mechanisms=()):
    """A workload of the numascan program (guest/bench/numascan.c): the
    NUMA-balancing scan passes over 64 MB (32 MB with --quick) of written
    anonymous memory, 8 (4) passes."""
    return Workload(
        name=name,
        what=what,
        modes=_onoff("mprotect_batch"),
        thp=thp,
        argv=["/lab/bench/numascan", "65536", "8"],
        quick=["/lab/bench/numascan", "32768", "4"],
        scale="64 MB, 8 scan passes",
        quick_scale="32 MB, 4 scan passes",
        seed=seed,
        metrics=NUMA_METRICS + list(metrics),
        mechanisms=list(mechanisms))


def _pte2m(name, what, mechanisms, **kw):
    """A file-reclaim workload whose page cache holds 2 MB folios, mapped
    by PTEs (filereclaim pte2m), classic LRU."""
    return Workload(
        name=name,
        what=what,
        modes=FILE_MODES,
        lru="classic",
        argv=["/lab/bench/filereclaim", "1024", "80", "pte2m"],
        quick=["/lab/bench/filereclaim", "256", "80", "pte2m"],
        scale="1 GiB file in 2 MB folios, 80% reclaimed",
        quick_scale="256 MiB file in 2 MB folios, 80% reclaimed",
        seed="",
        metrics=FILE_METRICS +
                [("2 MB file folios before reclaim (kB)", "metrics", "file_thp_kb"),
                 ("of them PMD-mapped (kB)", "metrics", "file_pmd_mapped_kb")],
        mechanisms=mechanisms,
        **kw)


# The read side's modes: "off" is every read-side switch off, so that it
# compares with stock (ptep_get() of a contiguous entry on arm64, whose
# early exit every other read-side path takes too); "on" is @switch alone
# on, the figure upstream measured; "all" adds the early exit, as the
# kernel boots.  x86_64 has only mbind_batch of the three.
READ_SWITCHES = ("contpte_early_exit", "mincore_batch", "mbind_batch")


def _read_modes(switch):
    off = {s: 0 for s in READ_SWITCHES}
    modes = {"off": off, "on": dict(off, **{switch: 1})}
    if switch != "contpte_early_exit":
        modes["all"] = dict(off, **{switch: 1, "contpte_early_exit": 1})
    return modes


def _readside(name, what, switch, thp, mode, seed, metrics=(), mechanisms=(),
              **kw):
    """A workload of the readside program (guest/bench/readside.c): @mode's
    calls over 64 MB (32 MB with --quick) of written anonymous memory, 20
    (10) times; the time is the calls' alone."""
    return Workload(
        name=name,
        what=what,
        modes=_read_modes(switch),
        thp=thp,
        argv=["/lab/bench/readside", "65536", "20", mode],
        quick=["/lab/bench/readside", "32768", "10", mode],
        scale="64 MB, 20 rounds",
        quick_scale="32 MB, 10 rounds",
        seed=seed,
        metrics=list(metrics),
        mechanisms=list(mechanisms),
        **kw)


# arm64's contpte_ptep_get(): a call per ptep_get() of a contiguous entry,
# whichever loop contpte_early_exit has it read the block with
CONTPTE_READS = [Mechanism("contiguous-block reads: contpte_ptep_get() calls",
                         "contpte_ptep_get", ("arm64",))]
# the queueing walk of mbind() and migrate_pages(): a folio look-up per PTE
# in 6.12, per folio with mbind_batch
FOLIO_LOOKUPS = Mechanism("folio look-ups: vm_normal_folio() calls", "vm_normal_folio",
                          ("x86_64", "arm64"))
# two NUMA nodes of 1 GB, one vCPU each (the numa test boot's topology;
# boot_kwargs() turns it into QEMU arguments)
NUMA_BOOT = {"numa": 2}
READ_64K = ("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")

# anon_unmap_batch (patches 0048-0052): swap-out of anonymous memory on
# zram, whose same-filled pages cost no compression (guest/bench/
# anonpageout.c); the swap references are swap_duplicate() per PTE in 6.12
# and swap_duplicate_nr() per batch with the switch on
ANON_MODES = {"off": {"unmap_batch": 0, "anon_unmap_batch": 0},
              "on": {"unmap_batch": 1, "anon_unmap_batch": 1}}
ANON_SETUP = {"lru": "classic", "swap": "zram"}
ANON_METRICS = [("pswpout", "vmstat", "pswpout"),
                ("64 KB folios swapped out whole", "mthp", "64kB/swpout"),
                ("64 KB folios split to swap out", "mthp", "64kB/swpout_fallback"),
                ("pages seen swapped out", "metrics", "swapped_pages"),
                ("pages read back wrong", "metrics", "lost_pages")]
ANON_SEED = ("MADV_PAGEOUT of 256 MB of 64 KB folios: 37.40 -> 17.42 ms (-53%), "
             "Apple M3 VM; -5.6% bare-metal x86 (Dev Jain, v4, not merged)")


def _swap_refs(limit=None):
    return Mechanism("swap references: swap_duplicate() calls, swap_duplicate_nr() "
                     "with the switch on", "swap_duplicate", ("x86_64", "arm64"),
                     limit, also=("swap_duplicate_nr",))


# a perfect batch takes one swap reference call per 64 KB folio
ANON_SWAP_64K = _swap_refs(lambda r: math.ceil(r.get("vmstat", {}).get("pswpout", 0) / 16))
# the same of zero-filled folios, which 6.12 swaps out to the swap device's
# zero bitmap (swpout_zero) without a write
ANON_SWAP_64K_ZERO = _swap_refs(
    lambda r: math.ceil(r.get("vmstat", {}).get("swpout_zero", 0) / 16))
ANON_ZERO_METRICS = [("pages swapped out as zero pages", "vmstat", "swpout_zero"),
                     ("pswpout", "vmstat", "pswpout"),
                     ("pages seen swapped out", "metrics", "swapped_pages"),
                     ("pages read back wrong", "metrics", "lost_pages")]


def _anon_pageout(name, what, thp, seed, mechanisms, seed_ratio=None, zero=False):
    """A workload of guest/bench/anonpageout.c: MADV_PAGEOUT of 256 MB (32
    MB with --quick), 4 rounds (3); with zero, of zero-filled pages."""
    tail = ["zero"] if zero else []
    return Workload(
        name=name,
        what=what,
        modes=ANON_MODES,
        thp=thp,
        **ANON_SETUP,
        argv=["/lab/bench/anonpageout", "256", "4"] + tail,
        quick=["/lab/bench/anonpageout", "32", "3"] + tail,
        scale="256 MB, 4 rounds",
        quick_scale="32 MB, 3 rounds",
        seed=seed,
        metrics=ANON_ZERO_METRICS if zero else ANON_METRICS,
        mechanisms=mechanisms,
        seed_ratio=seed_ratio or {})


WORKLOADS = [
    Workload(
        name="pt-reclaim",
        what="seed 004: touch 2 MB, MADV_DONTNEED 2 MB, per region",
        modes=_onoff("pt_reclaim"),
        thp="none",
        argv=["/lab/bench/ptreclaim", "4096"],
        # 256 at --quick: 16 s of TCG wall time per x86_64 run at 512
        # regions (4 s on arm64), 30 s at 1024
        quick=["/lab/bench/ptreclaim", "256"],
        scale="4096 regions of 2 MB",
        quick_scale="256 regions of 2 MB",
        seed="VmPTE 102640 kB -> 240 kB (25600 regions)",
        metrics=[("VmPTE after (kB)", "metrics", "vmpte_after_kb"),
                 ("function-call IPIs (x86)", "irq", "CAL", False),
                 ("TLB shootdowns (x86)", "irq", "TLB", False),
                 ("IPI1 function call (arm64)", "irq", "IPI1", False)]),
    _mremap("mremap-64k", "seed 001: 1 MB of 64 KB folios, memset, mremap, munmap",
            "64kB", 1024, 10000, MREMAP_SEED,
            [("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")],
            mechanisms=[UNFOLD, FOLD], seed_ratio={"arm64": 1.2 / 1.9},
            # 50 at --quick: 13 s of TCG wall time per x86_64 run at 100
            # iterations (2 s on arm64), the main job's second longest
            quick_iters=50),
    _mremap("mremap-4k", "seed 001 program with 4 KB pages only", "none", 1024, 10000,
            "no regression"),
    _mremap("mremap-2m", "seed 001 program on 2 MB, PMD-mapped THP", "2048kB", 2048,
            5000, "no regression",
            [("2 MB THP faulted", "mthp", "2048kB/anon_fault_alloc")]),
    _mprotect("mprotect-64k", "mprotect() batching: 256 MB of 64 KB folios, "
              "PROT_READ and back, 40 times", "64kB", "private",
              "arm64 M3: 2.0 s -> 0.7 s (-65%); x86: 3.7 s -> 3.7 s",
              [("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")],
              [UNFOLD, FOLD], {"arm64": 0.7 / 2.0}),
    _mprotect("mprotect-4k", "mprotect() batching program with 4 KB pages only",
              "none", "private",
              "no regression (upstream: arm64 +10%, x86 +1%)"),
    _mprotect("mprotect-4k-shared", "mprotect() of 4 KB dirty MAP_SHARED anonymous "
              "memory (the shared-dirty report against 6.12)",
              "none", "shared",
              "no regression (upstream 6.19: +67% against 6.12 in QEMU)",
              shmem_64k="never"),
    _mprotect("mprotect-pte2m", "mprotect() of 2 MB THP mapped by PTEs",
              "2048kB", "pte2m",
              "arm64 M3: 2.1 s -> 0.65 s (-69%); x86: 3.75 s -> 3.7 s",
              [("2 MB THP faulted", "mthp", "2048kB/anon_fault_alloc")],
              [UNFOLD, FOLD], {"arm64": 0.65 / 2.1}),
    _mprotect("mprotect-mixed", "mprotect() of 64 KB folios alternating with 16 small "
              "folios in every 2 MB: two lookups that find no batch stop the lookups "
              "for the page table (on arm64 until the next contiguous block; x86_64 "
              "hands the rest of the page table to the one-PTE loop)",
              "64kB", "mixed",
              "within 1% (batching refused after small folios)",
              [("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")],
              MPROTECT_MECHANISMS + [UNFOLD, FOLD]),
    _mprotect("mprotect-midfolio", "mprotect() of 64 KB folios in calls of 2 MB that "
              "start and end in the middle of a folio",
              "64kB", "midfolio",
              "within 1% (batching partial at the calls' ends)",
              [("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")],
              MPROTECT_MECHANISMS + MIDFOLIO_FOLDS),
    _mprotect("mprotect-filedirty", "mprotect() of MAP_SHARED shmem in 64 KB folios, "
              "the first half of each dirty and the second clean: batches stop at the "
              "dirty/clean boundary (on arm64, whose folios here are off a 64 KB "
              "boundary, no block: a shared mapping is left to the one-PTE walk)",
              "none", "filedirty",
              "within 1% (batches split at the dirty/clean boundary)",
              [("64 KB shmem folios allocated", "mthp", "64kB/shmem_alloc")],
              MPROTECT_MECHANISMS + [UNFOLD, FOLD], shmem_64k="always"),
    _mprotect("mprotect-none-64k", "mprotect() of 64 KB folios to PROT_NONE and back: "
              "on arm64 the batched commit flushes each contiguous block it makes "
              "invalid (the NUMA scan's break-before-make), which mprotect() does not need",
              "64kB", "none",
              "no figure upstream (the flush is this backport's)",
              [("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")],
              [UNFOLD, FOLD]),
    _numascan("mprotect-numa", "one NUMA-balancing scan pass (MM_CP_PROT_NUMA) over "
              "64 KB folios: every PTE made PROT_NONE", "64kB",
              "upstream batch-skips and batches the scan (v6.17); no figure",
              [("64 KB folios faulted", "mthp", "64kB/anon_fault_alloc")],
              MPROTECT_MECHANISMS + [UNFOLD, MIDFOLIO_FOLDS[1]]),
    _numascan("mprotect-numa-4k", "the NUMA scan pass program with 4 KB pages only",
              "none", "within 1% (no large folio to batch)",
              mechanisms=MPROTECT_MECHANISMS),
    Workload(
        name="bigheap",
        what="stress-ng --bigheap (realloc; the x86 regression upstream fixed)",
        modes=_onoff("mremap_batch"),
        thp="none",
        argv=["/usr/bin/stress-ng", "--bigheap", "1", "--bigheap-ops", "4000",
              "--timeout", "0", "--quiet"],
        quick=["/usr/bin/stress-ng", "--bigheap", "1", "--bigheap-ops", "1000",
               "--timeout", "0", "--quiet"],
        scale="4000 bogo ops",
        quick_scale="1000 bogo ops",
        seed="x86: -37% bigheap throughput before the pte_batch_hint() fix"),
    Workload(
        name="file-reclaim",
        what="seed 000: map clean XFS large folios in a memcg, "
             "memory.reclaim 80%",
        modes=FILE_MODES,
        lru="classic",
        argv=["/lab/bench/filereclaim", "1024", "80"],
        quick=["/lab/bench/filereclaim", "256", "80"],
        scale="1 GiB file, 80% reclaimed",
        quick_scale="256 MiB file, 80% reclaimed",
        seed="young batching -33% arm64 / -10% x86; batched unmap -75% arm64 / -50% x86",
        metrics=FILE_METRICS,
        mechanisms=RECLAIM_MECHANISMS,
        seed_ratio={"arm64": 0.249 / 1.518, "x86_64": 0.9 * 0.5}),
    _pte2m("file-reclaim-pte2m", "seed 000 with 2 MB file folios mapped by PTEs, "
           "on the default CPU", RECLAIM_MECHANISMS),
    _pte2m("file-reclaim-pte2m-a72", "seed 000 on a CPU without range TLBI "
           "(QEMU -cpu cortex-a72): 2 MB file folios mapped by PTEs, so that a "
           "young or unmap batch covers 512 PTEs, the size at which arm64 "
           "invalidates the whole ASID (flush_tlb_mm()) instead of page by page",
           [UNFOLD] + YOUNG, boot={"cpu": "cortex-a72"}, arches=("arm64",)),
    Workload(
        name="file-reclaim-mglru",
        what="seed 003: the file-reclaim workload with MGLRU on",
        modes={"off": {"referenced_batch": 0, "mglru_young_batch": 0, "unmap_batch": 0},
               "young": {"referenced_batch": 1, "mglru_young_batch": 1, "unmap_batch": 0},
               "unmap": {"referenced_batch": 0, "mglru_young_batch": 0, "unmap_batch": 1},
               "on": {"referenced_batch": 1, "mglru_young_batch": 1, "unmap_batch": 1}},
        lru="mglru",
        argv=["/lab/bench/filereclaim", "1024", "80"],
        quick=["/lab/bench/filereclaim", "256", "80"],
        scale="1 GiB file, 80% reclaimed",
        quick_scale="256 MiB file, 80% reclaimed",
        seed="arm64 0.470 s -> 0.180 s (-60%); x86 -15%",
        metrics=FILE_METRICS,
        mechanisms=RECLAIM_MECHANISMS,
        seed_ratio={"arm64": 0.180 / 0.470, "x86_64": 0.85}),
    Workload(
        name="dirty-reclaim",
        what="seed 002: stress-ng --vm in a memcg whose memory.high is a "
             "quarter of its working set, swap on a RAM disk",
        modes=_onoff("reclaim_tlb_batch"),
        **DIRTY_SETUP,
        argv=["/lab/bench/dirtyreclaim", "2", "512", "400"],
        quick=["/lab/bench/dirtyreclaim", "2", "256", "100"],
        scale="2 workers, 512 MB, memory.high 128 MB, 400 ops in all",
        quick_scale="2 workers, 256 MB, memory.high 64 MB, 100 ops in all",
        seed="TLB shootdowns -68.2%, function-call IPIs -57.4%, bogo ops/s +26.9%",
        metrics=DIRTY_METRICS,
        mechanisms=[DIRTY_FLUSH, X86_REMOTE, X86_RUN],
        histograms=BATCH_HISTOGRAMS),
    Workload(
        name="dirty-reclaim-1w",
        what="seed 002 with one worker: reclaim work repeats "
             "exactly, so the measured phase is the worker's CPU time "
             "(instructions, throttling sleeps excluded)",
        modes=_onoff("reclaim_tlb_batch"),
        **DIRTY_SETUP,
        argv=["/lab/bench/dirtyreclaim", "1", "256", "200", "cpu"],
        quick=["/lab/bench/dirtyreclaim", "1", "128", "100", "cpu"],
        scale="1 worker, 256 MB, memory.high 64 MB, 200 ops",
        quick_scale="1 worker, 128 MB, memory.high 32 MB, 100 ops",
        seed="bogo ops/s +26.9% (16 workers)",
        metrics=[("pswpout", "vmstat", "pswpout"),
                 ("elapsed instruction-time (ns, throttling included)", "metrics",
                  "elapsed_ns", False),
                 ("TLB shootdowns (x86)", "irq", "TLB", False)],
        mechanisms=[DIRTY_FLUSH, X86_REMOTE, X86_RUN],
        histograms=BATCH_HISTOGRAMS,
        retired=STRESS_NG_RETIRED),
    Workload(
        name="dirty-reclaim-8cpu",
        what="seed 002 at 8 vCPUs, one stress-ng --vm worker per "
             "vCPU: under -icount the vCPUs take turns on one host thread, so every "
             "remote CPU's flush and IPI handler is counted in instruction-time",
        modes=_onoff("reclaim_tlb_batch"),
        **DIRTY_SETUP,
        argv=["/lab/bench/dirtyreclaim", "8", "512", "800"],
        quick=["/lab/bench/dirtyreclaim", "8", "256", "200"],
        scale="8 workers, 512 MB, memory.high 128 MB, 800 ops",
        quick_scale="8 workers, 256 MB, memory.high 64 MB, 200 ops",
        seed="16 CPUs: bogo ops/s +26.9%, TLB shootdowns -68.2%, function-call IPIs "
             "-57.4%",
        metrics=DIRTY_METRICS,
        mechanisms=[DIRTY_FLUSH, X86_REMOTE, X86_RUN],
        boot={"cpus": 8},
        histograms=BATCH_HISTOGRAMS,
        retired=STRESS_NG_RETIRED),
    Workload(
        name="dirty-reclaim-1cpu",
        what="seed 002 on one vCPU, to see whether its runs repeat "
             "there (measured: they vary as on 2 vCPUs); no remote flush to save, only "
             "local ones",
        modes=_onoff("reclaim_tlb_batch"),
        **DIRTY_SETUP,
        argv=["/lab/bench/dirtyreclaim", "2", "512", "400"],
        quick=["/lab/bench/dirtyreclaim", "2", "256", "100"],
        scale="2 workers, 512 MB, memory.high 128 MB, 400 ops in all, 1 vCPU",
        quick_scale="2 workers, 256 MB, memory.high 64 MB, 100 ops in all, 1 vCPU",
        seed="bogo ops/s +26.9% (16 CPUs)",
        metrics=[("pswpout", "vmstat", "pswpout", False),
                 ("CPU time of the workers (ns, instruction-time)", "metrics", "cpu_ns",
                  False)],
        mechanisms=[DIRTY_FLUSH, X86_REMOTE, X86_RUN],
        boot={"cpus": 1},
        histograms=BATCH_HISTOGRAMS,
        retired=STRESS_NG_RETIRED),
    _dirty_fixed("dirty-reclaim-fixed", 2, "seed 002 with fixed work: 2 workers on 2 "
                 "vCPUs in a memcg whose memory.max is a quarter of their memory, swap "
                 "on a RAM disk; each timed pass swaps every page in, dirties it and "
                 "swaps it out again; the time is the workers' CPU time",
                 "TLB shootdowns -68.2%, function-call IPIs -57.4%, bogo ops/s +26.9% "
                 "(stress-ng, 16 CPUs)"),
    _dirty_fixed("dirty-reclaim-fixed-8cpu", 8, "the same with 8 workers on 8 vCPUs, so "
                 "that more of the pages reclaim unmaps belong to a process running on "
                 "another CPU",
                 "16 CPUs: TLB shootdowns -68.2%, function-call IPIs -57.4%, bogo ops/s "
                 "+26.9% (stress-ng)", boot={"cpus": 8}),
    Workload(
        name="fault-latency",
        what="seed 002's risk: one thread dirties anonymous memory in a "
             "memcg whose memory.high is a quarter of it, swap on zram, while another "
             "times each store to one of its own pages that reclaim swapped out",
        modes=_onoff("reclaim_tlb_batch"),
        **FAULTLAT_SETUP,
        argv=["/lab/bench/faultlat", "256", "16", "64", "2"],
        quick=["/lab/bench/faultlat", "64", "4", "16", "2"],
        scale="256 MB dirtied twice, memory.high 64 MB, 16 MB touched",
        quick_scale="64 MB dirtied twice, memory.high 16 MB, 4 MB touched",
        seed="not measured upstream (seed 002 holds up to 31 folio locks "
             "across pageout)",
        metrics=FAULTLAT_METRICS,
        mechanisms=[DIRTY_FLUSH, X86_REMOTE, X86_RUN],
        histograms=BATCH_HISTOGRAMS),
    _readside("read-mlock", "the read side: mlock() and munlock() of 64 KB folios "
              "(each reads every PTE's contiguous block)", "contpte_early_exit",
              "64kB", "mlock",
              "arm64: -50.6% instructions, -46.4% time (upstream 093ae7a033cf)",
              [READ_64K], CONTPTE_READS, arches=("arm64",)),
    _readside("read-smaps", "the read side: a read of /proc/self/smaps over 64 KB "
              "folios, written (young and dirty)", "contpte_early_exit",
              "64kB", "smaps", "goal: time on/off at most 0.70",
              [READ_64K, ("smaps bytes read", "metrics", "smaps_bytes")],
              CONTPTE_READS, arches=("arm64",)),
    _readside("read-smaps-old", "the smaps read after clear_refs made every entry "
              "old: no young entry, so both forms read all 16 entries of a block "
              "(the loop that looks for the missing bit is the difference)",
              "contpte_early_exit", "64kB", "smaps-old",
              "no early exit: every entry is read either way",
              [READ_64K, ("smaps bytes read", "metrics", "smaps_bytes")],
              CONTPTE_READS, arches=("arm64",)),
    _readside("read-mincore", "the read side: mincore() of 64 KB folios",
              "mincore_batch", "64kB", "mincore",
              "arm64: 1 GB of 64 KB mTHP 6022 -> 1115 us, -81% (upstream 4df65651f707)",
              [READ_64K, ("resident pages", "metrics", "resident_pages")],
              CONTPTE_READS, arches=("arm64",)),
    _readside("read-mincore-4k", "mincore() with 4 KB pages only (control)",
              "mincore_batch", "none", "mincore",
              "within 1% (no contiguous block)",
              [("resident pages", "metrics", "resident_pages")],
              CONTPTE_READS, arches=("arm64",)),
    _readside("read-mbind-stay", "the read side: mbind(MPOL_MF_MOVE | MPOL_MF_STRICT) "
              "of 64 KB folios to the node they are on: the queueing walk alone",
              "mbind_batch", "64kB", "mbind-stay",
              "goal: time on/off at most 0.70",
              [READ_64K, ("pages on node 1", "metrics", "node1_pages")], [FOLIO_LOOKUPS]),
    _readside("read-mbind-stay-4k", "the queueing walk of mbind() with 4 KB pages only "
              "(control)", "mbind_batch", "none", "mbind-stay",
              "within 1% (no large folio)",
              [("pages on node 1", "metrics", "node1_pages")], [FOLIO_LOOKUPS]),
    _readside("read-mbind", "the read side: mbind(MPOL_MF_MOVE) of 64 KB folios to "
              "node 1 and back (two NUMA nodes)", "mbind_batch", "64kB",
              "mbind", "goal: time on/off at most 0.70",
              [READ_64K, ("pages on node 1 after a move", "metrics", "moved_pages")],
              [FOLIO_LOOKUPS], boot=NUMA_BOOT),
    _readside("read-mbind-pte2m", "mbind(MPOL_MF_MOVE) of 2 MB THP mapped by PTEs to "
              "node 1 and back", "mbind_batch", "2048kB", "mbind-pte2m",
              "4 GB of PTE-mapped 2 MB folios: 7.5 s -> 4 s, -47% (upstream "
              "4a34c584d8cd)",
              [("2 MB THP faulted", "mthp", "2048kB/anon_fault_alloc"),
               ("pages on node 1 after a move", "metrics", "moved_pages")],
              [FOLIO_LOOKUPS], boot=NUMA_BOOT),
    _anon_pageout("anon-pageout-64k", "anon swap-out: MADV_PAGEOUT of 64 KB anonymous "
                  "folios to zram, read back", "64kB", ANON_SEED,
                  [ANON_SWAP_64K, UNFOLD] + X86_FLUSH, {"arm64": 17.42 / 37.40}),
    _anon_pageout("anon-pageout-4k", "the anon-pageout-64k program on 4 KB pages, "
                  "where nothing batches (a control)", "none", "no regression",
                  [_swap_refs()] + X86_FLUSH),
    _anon_pageout("anon-pageout-64k-zero", "upstream's benchmark for the series: "
                  "MADV_PAGEOUT of zero-filled 64 KB anonymous folios, which 6.12 "
                  "swaps out to the swap device's zero bitmap without a write, so "
                  "the time is the unmap and the swap bookkeeping", "64kB", ANON_SEED,
                  [ANON_SWAP_64K_ZERO, UNFOLD] + X86_FLUSH, {"arm64": 17.42 / 37.40},
                  zero=True),
    _anon_pageout("anon-pageout-4k-zero", "anon-pageout-64k-zero on 4 KB pages, "
                  "where nothing batches (a control)", "none", "no regression on 4 KB "
                  "folios", [_swap_refs()] + X86_FLUSH, zero=True),
    Workload(
        name="anon-reclaim-64k",
        what="anon swap-out under a memcg limit: one worker dirties 64 KB "
             "anonymous folios in a memcg whose memory.max is a quarter of them, "
             "swap on zram; each timed pass swaps every page in and out again",
        modes=ANON_MODES,
        thp="64kB",
        **ANON_SETUP,
        argv=["/lab/bench/dirtyreclaim", "1", "256", "5", "fixed"],
        quick=["/lab/bench/dirtyreclaim", "1", "128", "3", "fixed"],
        scale="1 worker of 256 MB, memory.max 64 MB, 4 timed passes",
        quick_scale="1 worker of 128 MB, memory.max 32 MB, 2 timed passes",
        seed="not measured upstream",
        metrics=DIRTY_FIXED_METRICS + [("64 KB folios swapped out whole", "mthp",
                                        "64kB/swpout")],
        mechanisms=[ANON_SWAP_64K, UNFOLD] + X86_FLUSH),
]
BY_NAME = {w.name: w for w in WORKLOADS}


def default_names():
    """The workloads a bench runs when none is named: all but the retired."""
    return [w.name for w in WORKLOADS if not w.retired]


def named(names):
    """The workloads of names, for a bench or a bundle: a LabError for a
    name this lab does not know, a warning for each retired one."""
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise LabError(f"unknown workload(s): {', '.join(unknown)} "
                       f"(known: {', '.join(BY_NAME)})")
    chosen = [BY_NAME[n] for n in names]
    for w in chosen:
        if w.retired:
            warn(f"{w.name} is retired: {w.retired}")
    return chosen


def of_runs(runs, source):
    """(workloads, arches) that bench runs were made of, each in this lab's
    order; a LabError naming source when a run's workload is not one of
    this lab's (runs from another version of it, say)."""
    names = {r["workload"] for r in runs}
    unknown = sorted(names - set(BY_NAME))
    if unknown:
        raise LabError(f"{source} has runs of workloads this lab does not know: "
                       f"{', '.join(unknown)}")
    return ([w for w in WORKLOADS if w.name in names],
            [a for a in config.ARCHES if any(r["arch"] == a for r in runs)])


def kprobe_lines(workloads, arch_name):
    """lab_kprobe lines for the mechanisms of the workloads on an arch."""
    seen = {}
    for w in workloads:
        for m in w.mechanisms:
            if arch_name in m.arches:
                for event, function in m.probes:
                    seen.setdefault(event, function)
    return [f"lab_kprobe {e} {f}" for e, f in seen.items()]


# The rep number of a probe run: the mechanisms' kprobes are armed only in
# these runs, which the report keeps out of every time and counter figure
# (a hit costs the probe's trap, hundreds of instructions).
PROBE_REP = -1


def plan(workloads, reps, flavour, quick, rep0=0, only_mode=None, arch_name=None,
         switch_arch=None):
    """The guest plan; only_mode runs one mode of each patched workload.
    With arch_name, each workload and mode then runs once more as a probe
    run (rep PROBE_REP) with the kprobes of that arch's mechanisms armed.
    The switches set are those the kernel of switch_arch (default:
    arch_name) shows."""
    sw_arch = switch_arch or arch_name
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
            for sw, v in sorted(w.settings(m, sw_arch).items()):
                lines.append(f"lab_switch {sw} {v}")
        lines.append("sync; echo 3 > /proc/sys/vm/drop_caches")
        traced = r == PROBE_REP and w.histograms and hists
        if traced:
            lines.append("lab_hist_start")
        lines.append(f"lab_bench {w.name} {m} {r} -- {argv}")
        if traced:
            lines.append(f"lab_hist_dump {w.name} {m} {r}")

    def reset():
        """Every switch back at the kernel's default (no foliobatch=)."""
        if flavour == "patched":
            for sw in sorted(shown_switches(sw_arch)):
                lines.append(f"lab_switch {sw} {int(sw not in config.DEFAULT_OFF)}")

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
