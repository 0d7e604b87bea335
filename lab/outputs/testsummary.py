# SPDX-License-Identifier: GPL-2.0-only
"""Testsummary: the counts of a stored 'lab test' run, and the README's
sentence made from them.

'lab report --tests' reads a run's rows (WORK/results/test-*.json, the
newest by default), writes docs/results/test-summary.json (the counts by
status, the skips by reason, the run's date, time and commit) and
puts the sentence made from it into README.md between the TEST_SUMMARY
markers.  A host test fails when the README's sentence is not the one the
stored summary makes, so the README cannot state counts no run produced.
It takes a full run that passed only (refusal()).
"""

from collections import Counter

from ..core.tally import skip_reason
from . import blocks

BEGIN = "<!-- test-summary: made by 'lab report --tests'; do not edit -->"
END = "<!-- /test-summary -->"


def refusal(info, rows):
    """Why the README's summary may not come from a stored 'lab test' run
    (info: what Tally.save() stored beside its rows), or None.  The
    summary comes from a full run (every arch, every suite and part, the
    default variant, no --only: testrun.left_out() empty) that passed:
    its recorded exit status 0 and no failed row.  A run whose record
    lacks its exit status or scope (an older lab's) is refused too."""
    if "exit" not in info or "full" not in info:
        return ("the run's record has no exit status or scope (a run of an older "
                "lab): run 'lab test' again")
    failed = sum(1 for r in rows if r["status"] == "fail")
    if info["exit"] != 0 or failed:
        return (f"the run failed (exit {info['exit']}, {failed} failed rows): the "
                "README's summary comes from a run that passed")
    if info["full"] is not True or info.get("partial"):
        what = "; ".join(map(str, info.get("partial") or [])) or "not recorded as full"
        return (f"a partial run ({what}): the README's summary comes from a full run "
                "(every arch and suite, the default variant, no --only)")
    return None


def summarize(rows, commit, when, took, compiled=None):
    """The summary of a run's rows ([{"status", "name", "detail"}]): counts
    by status, skips by reason (a skip's message without the case it names
    in parentheses, tally.skip_reason()), the commit it ran, when and
    how long it took (strings)."""
    by = Counter(r["status"] for r in rows)
    reasons = Counter(skip_reason(r["detail"]) for r in rows if r["status"] == "skip")
    return {"commit": commit, "when": when, "time": took, "compiled": compiled,
            "passed": by["pass"], "failed": by["fail"], "skipped": by["skip"],
            "not_counted": {s: by[s] for s in ("variant", "xfail", "stockfail", "flaky")
                            if by[s]},
            "skip_reasons": dict(reasons.most_common())}


def readme_block(s):
    """The README's lines for a summary s."""
    reasons = "; ".join(f"{n} {r}" for r, n in s["skip_reasons"].items())
    return "\n".join([
        BEGIN,
        f"The newest stored full run (`lab test`, commit {s['commit']}, {s['when']}, "
        f"{s['time']} on the project's machine{warmth(s.get('compiled'))}): "
        f"**{s['passed']} passed, {s['failed']} failed**, {s['skipped']} skipped"
        + (f" ({reasons})" if reasons else "") + ".",
        END])


def warmth(compiled):
    """The README's words for a run's count of compilations ccache could
    not answer: ', warm: ...' for none, ', N compilations ...' otherwise;
    '' when the run did not record it."""
    if compiled is None:
        return ""
    if compiled == 0:
        return ", warm: every compilation from ccache"
    return f", {compiled:,} compilations ccache could not answer"


def replace_block(text, block):
    """text with its BEGIN..END block replaced by block (ValueError if it has
    none)."""
    return blocks.replace(text, BEGIN, END, block, "test-summary")
