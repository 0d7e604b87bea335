# SPDX-License-Identifier: GPL-2.0-only
"""Coverage: which guest tests exercise which patches of the series.

Each Group names a run of patches (numbers as in patches/series), the
switches they add or change, and the programs that exercise them: own
tests (guest/tests/<name>.c, mechanism and correctness), the upstream
selftests of image.SELFTESTS and the race programs of 'lab harden'
(guest/harden/<name>.c).  The bench workloads of a group are those whose
modes set one of its switches (workloads.py).  docs/patches.md is made
from these declarations (outputs/patchesdoc.py), and a host test fails
when a patch that changes kernel code belongs to no group or its group
lists no test.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    name: str
    patches: str            # "0002-0003,0030-0031"
    switches: tuple = ()
    own: tuple = ()
    upstream: tuple = ()
    harden: tuple = ()
    why: str = ""           # what the tests check of it, in one line

    def numbers(self):
        """The patch numbers of the group, as ints."""
        out = []
        for part in self.patches.split(","):
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
        return out

    def tests(self):
        return [f"own: {t}" for t in self.own] + \
            [f"upstream: {t}" for t in self.upstream] + \
            [f"harden: {t}" for t in self.harden]


GROUPS = (
    Group("switches", "0001", ("every switch",), own=("switches", "sanity"),
          why="each switch's sysfs file and foliobatch= parsing; a boot with "
              "two switches off"),
    Group("001: mremap() batching", "0002-0003,0030-0031,0055", ("mremap_batch",),
          own=("mremap_batch",), upstream=("mremap_test", "mremap_dontunmap"),
          why="the moved PTEs, their bits and the batch count per folio, "
              "switch on and off"),
    Group("004: empty PTE pages freed", "0004-0010", ("pt_reclaim",),
          own=("pt_reclaim",), upstream=("khugepaged", "uffd-unit-tests",
                                         "madv_populate"),
          why="VmPTE after MADV_DONTNEED, races of the freeing with faults, "
              "khugepaged and UFFDIO_MOVE (the PMD rechecks of 0005-0006)"),
    Group("000: young bits and unmap of large folios", "0011-0018,0029,0047,0056",
          ("referenced_batch", "unmap_batch"), own=("reclaim_batch",),
          upstream=("split_huge_page_test", "cow"),
          why="young-bit and unmap calls per folio in reclaim, data after "
              "reclaim of file and lazy-free folios"),
    Group("003: MGLRU young-bit clearing", "0019-0020,0028", ("mglru_young_batch",),
          own=("reclaim_batch",),
          why="MGLRU's walk and look-around clear a folio's young bits in one call"),
    Group("002: one TLB flush per batch of dirty folios", "0021-0024,0026-0027,0057",
          ("reclaim_tlb_batch",), own=("reclaim_tlb",),
          why="flushes per batch, no lost write under reclaim, pinned folios kept"),
    Group("SHM_LOCK warning", "0025", (), harden=("shmlock",),
          why="SHM_LOCK racing reclaim of dirty shmem, with 0 kernel reports"),
    Group("mprotect() batching", "0032-0042,0046,0053-0054,0058", ("mprotect_batch",),
          own=("mprotect_batch",), upstream=("mkdirty", "soft-dirty", "uffd-unit-tests"),
          why="protection bits, dirty and exclusive state per PTE, the NUMA "
              "scan's skips, arm64's contiguous blocks and their flushes"),
    Group("read side", "0043-0045", ("contpte_early_exit", "mincore_batch",
                                     "mbind_batch"), own=("read_batch",),
          why="entries read per ptep_get(), mincore() answers, folios "
              "queued by mbind(), each against the switch off"),
    Group("anonymous swap-out batching", "0048-0052", ("anon_unmap_batch",),
          own=("anon_unmap_batch",), upstream=("cow", "uffd-unit-tests"),
          why="data, anon-exclusive, uffd-wp and soft-dirty bits across "
              "swap-out and swap-in, swapoff after it, calls per folio, races "
              "with writes, fork() and MADV_DONTNEED"),
)


def group_of(number):
    """The Group a patch number belongs to, or None."""
    for g in GROUPS:
        if number in g.numbers():
            return g
    return None
