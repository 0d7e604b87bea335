# SPDX-License-Identifier: GPL-2.0-only
"""checkpatch's findings on moved 6.12 lines: only the listed ones pass."""

from lab.kernel import cpknown

REPORT = """WARNING:AVOID_BUG: Do not crash the kernel unless it is absolutely unavoidable--use WARN_ON_ONCE() plus recovery code (if feasible) instead of BUG() or variants
#2020: FILE: mm/mprotect_walk.h:240:
+\tBUG_ON(addr >= end);

CHECK:PARENTHESIS_ALIGNMENT: Alignment should match open parenthesis
#1997: FILE: mm/mprotect_walk.h:231:
+static long change_protection_range(struct mmu_gather *tlb,
+\t\t\t\t   struct vm_area_struct *vma,

total: 0 errors, 1 warnings, 1 checks, 1925 lines checked
"""


def test_a_listed_moved_line_is_excused_and_nothing_else():
    found = cpknown.findings(REPORT)
    assert [(f["type"], f["file"]) for f in found] == [
        ("AVOID_BUG", "mm/mprotect_walk.h"),
        ("PARENTHESIS_ALIGNMENT", "mm/mprotect_walk.h")]
    assert cpknown.excused(found[0])
    assert cpknown.excused(found[1]) is None


def test_the_same_finding_elsewhere_is_not_excused():
    moved = REPORT.replace("mm/mprotect_walk.h:240", "mm/mprotect.c:240")
    assert cpknown.excused(cpknown.findings(moved)[0]) is None
    other = REPORT.replace("BUG_ON(addr >= end);", "BUG_ON(!vma);")
    assert cpknown.excused(cpknown.findings(other)[0]) is None


def test_a_message_finding_without_a_file_is_a_finding():
    report = ("WARNING:COMMIT_LOG_LONG_LINE: Prefer a maximum 75 chars per line\n"
              "#67: \nUpstream: none (a long line that goes on and on)\n\n")
    found = cpknown.findings(report)
    assert len(found) == 1 and cpknown.excused(found[0]) is None
