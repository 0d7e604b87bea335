# SPDX-License-Identifier: GPL-2.0-only
"""The new warnings of the series that are known to be false, each with its
reason (kernel/check.py's leaves list them as 'known:' and still pass).

A module of its own, outside check.CHECK_CODE: the table's keys are an
input of the leaves that compare warnings (check.stamp_inputs()), so an
entry added or taken out judges those leaves again and leaves the verdicts
of the boot leaves, the mutation and each-commit standing."""

# New warnings that are known to be false, in normalise() form, each with
# the reason.  A leaf lists them ('known: ...') and still passes; any other
# new warning fails it.  An entry names one function in one file, so a
# second warning of the same kind elsewhere is new.
KNOWN_FALSE = {
    "sparse: mm/pt_reclaim.c: warning: context imbalance in 'try_to_free_pte' "
    "- unexpected unlock":
        "sparse cannot see the RCU read lock that pte_offset_map_rw_nolock() "
        "takes (out of line, unannotated, as 6.12's pte_offset_map*() are) and "
        "sees pte_unmap() release it; stock 6.12 reports the same in every mm/ "
        "function that unmaps a page table it mapped (zap_pte_range(), "
        "copy_pte_range(), move_pages_pte(), ...)",
    "sparse: mm/mprotect_batch.c: warning: context imbalance in 'mprotect_starts_large' "
    "- unexpected unlock":
        "the same false report as stock 6.12's for change_pte_range(): "
        "pte_offset_map_lock() takes the RCU read lock out of sparse's sight and "
        "pte_unmap_unlock() releases it (mprotect_batch's look at the first "
        "present PTE of a page table, under its lock)",
    "sparse: mm/mprotect_batch.c: warning: context imbalance in 'change_pte_range_batched' "
    "- unexpected unlock":
        "the same false report for the batched copy of change_pte_range() "
        "(mprotect_batch), which stock 6.12 gets for change_pte_range() itself: "
        "pte_offset_map_lock() takes the RCU read lock out of sparse's sight",
    "sparse: mm/mprotect_batch.c: warning: context imbalance in 'change_pte_range' "
    "- unexpected unlock":
        "stock 6.12's own false report for change_pte_range(), in the copy of "
        "it that mprotect_batch's walk keeps beside the batched one for page "
        "tables of small folios: pte_offset_map_lock() takes the RCU read "
        "lock out of sparse's sight",
    "sparse: mm/mremap.c: warning: context imbalance in 'move_ptes_batched' "
    "- unexpected unlock":
        "stock 6.12's false report for move_ptes(), in the batched copy of its "
        "body that mremap_batch moves a range with a contiguous block by "
        "(0055): pte_offset_map_lock() takes the RCU read lock out of sparse's "
        "sight and pte_unmap_unlock() releases it",
    "sparse: mm/mremap.c: warning: context imbalance in 'mremap_finds_block' "
    "- unexpected unlock":
        "the look of mremap_batch (0055) maps the page table with "
        "pte_offset_map(), which takes the RCU read lock out of line and out "
        "of sparse's sight, and pte_unmap() releases it: the report stock 6.12 "
        "gets in every mm/ function that maps a page table and unmaps it "
        "(the same as for try_to_free_pte above)",
    "sparse: mm/mincore.c: warning: context imbalance in 'mincore_pte_range_one' "
    "- unexpected unlock":
        "stock 6.12's false report for mincore_pte_range(), in the copy of its "
        "walk that mincore_batch (0044) calls with the switch off: "
        "pte_offset_map_lock() takes the RCU read lock out of sparse's sight",
    "sparse: mm/mincore.c: warning: context imbalance in "
    "'mincore_pte_range_batched' - unexpected unlock":
        "the same report for the batched copy of mincore_pte_range() (0044)",
    "sparse: mm/mempolicy.c: warning: context imbalance in "
    "'queue_folios_pte_range_one' - unexpected unlock":
        "stock 6.12's false report for queue_folios_pte_range(), in the copy of "
        "its walk that mbind_batch (0045) calls with the switch off: "
        "pte_offset_map_lock() takes the RCU read lock out of sparse's sight",
    "sparse: mm/mempolicy.c: warning: context imbalance in "
    "'queue_folios_pte_range_batched' - unexpected unlock":
        "the same report for the batched copy of queue_folios_pte_range() (0045)",
    "sparse: mm/swapfile.c: warning: context imbalance in "
    "'__swap_duplicate_nr_fast' - different lock contexts for basic block":
        "stock 6.12's false report for __swap_entry_free() and the other "
        "users of lock_cluster_or_swap_info(): it takes the cluster lock or, "
        "without clusters, the swap device's, and sparse cannot follow "
        "which one unlock_cluster_or_swap_info() releases "
        "(swap_duplicate_nr()'s locked pass, 0049)",
    "sparse: arch/x86/include/asm/paravirt.h: warning: context imbalance in "
    "'change_pte_range_batched' - unexpected unlock":
        "the report above, placed where CONFIG_PARAVIRT_XXL (Debian's x86 "
        "config, for Xen PV) puts the function's last call, "
        "arch_leave_lazy_mmu_mode(); stock 6.12 gets it there for "
        "change_pte_range() and remap_pte_range()",
}
