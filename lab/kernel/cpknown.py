# SPDX-License-Identifier: GPL-2.0-only
"""checkpatch findings on 6.12 lines that the series moves verbatim.

A patch that moves 6.12 code into a new file shows every moved line as
added, and checkpatch judges it as new code.  Where changing such a line
would change the code the compiler makes of 6.12's path (which the series
promises to keep instruction for instruction with its switch off), the
line stays as 6.12 has it and its finding is listed here, with the
reason.  Every other finding makes a commit NOT clean.

Each entry: (checkpatch type, file, the line as the patch adds it, why).
"""

KNOWN = [
    ("AVOID_BUG", "mm/mprotect_walk.h", "BUG_ON(addr >= end);",
     "6.12's change_protection_range(), moved from mm/mprotect.c so that both "
     "walks share it; a WARN_ON_ONCE() there would change the unbatched walk's "
     "code, which must stay 6.12's"),
]


def findings(report):
    """The findings of a `checkpatch.pl --show-types` report, as dicts
    with type, level, file, line (the added line, without its '+')."""
    found = []
    for block in report.split("\n\n"):
        lines = block.strip("\n").split("\n")
        head = lines[0] if lines else ""
        level, _, rest = head.partition(":")
        if level not in ("ERROR", "WARNING", "CHECK"):
            continue
        ftype = rest.split(":", 1)[0].strip()
        where, added = "", ""
        for l in lines[1:]:
            if "FILE: " in l:
                where = l.split("FILE: ", 1)[1].rsplit(":", 2)[0]
            elif l.startswith("+") and not added:
                added = l[1:].strip()
        found.append({"type": ftype, "level": level, "file": where,
                      "line": added, "text": block.strip("\n")})
    return found


def excused(finding):
    """The reason a finding is on the KNOWN list, or None."""
    for ftype, path, line, why in KNOWN:
        if (finding["type"], finding["file"], finding["line"]) == (ftype, path, line):
            return why
    return None
