# SPDX-License-Identifier: GPL-2.0-only
"""Testsummary: the counts of a stored 'lab test' run, and the README's
sentence made from them.

'lab report --tests' reads a run's rows (WORK/results/test-*.json, the
newest by default), writes docs/results/test-summary.json (the counts by
status, the skips by reason, the run's date, time and commit) and
puts the sentence made from it into README.md between the TEST_SUMMARY
markers.  A host test fails when the README's sentence is not the one the
stored summary makes, so the README cannot state counts no run produced.
It takes a full run that passed only (refusal()).  Each summary it
writes is also kept as docs/results/tests/<date>-<hhmm>-<commit>.json, and the
README's sentence gives the time of the newest cold run (a new machine:
ccache empty, no kernel built, is_cold()) and of the newest warm one
beside the newest run's counts.
"""

import json
from pathlib import Path

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


def is_cold(data):
    """Did a run (a bench's manifest, a test run's record or summary) start
    on a new machine: compilations ccache could not answer, an empty
    ccache and no kernel built (its "start", kernel.build.start_state())?"""
    start = data.get("start") or {}
    return bool(data.get("compiled")) and start.get("ccache_files") == 0 \
        and start.get("kernels_built") == []


def summarize(rows, commit, when, took, compiled=None, start=None):
    """The summary of a run's rows ([{"status", "name", "detail"}]): counts
    by status, skips by reason (a skip's message without the case it names
    in parentheses, tally.skip_reason()), the commit it ran, when and
    how long it took (strings), what ccache compiled and what the machine
    held when it started (start, None when the run did not record it)."""
    by = Counter(r["status"] for r in rows)
    reasons = Counter(skip_reason(r["detail"]) for r in rows if r["status"] == "skip")
    return {"commit": commit, "when": when, "time": took, "compiled": compiled,
            "start": start,
            "passed": by["pass"], "failed": by["fail"], "skipped": by["skip"],
            "not_counted": {s: by[s] for s in ("variant", "xfail", "stockfail", "flaky")
                            if by[s]},
            "skip_reasons": dict(reasons.most_common())}


def stored(tests_dir):
    """{"cold": summary, "warm": summary}: the newest kept summary
    (docs/results/tests/*.json, by name) of each kind; a run that is not
    cold is warm.  A kind with no kept run is absent."""
    newest = {}
    for f in sorted(Path(tests_dir).glob("*.json")):
        s = json.loads(f.read_text())
        newest["cold" if is_cold(s) else "warm"] = s
    return newest


def readme_block(s, times=None):
    """The README's lines for a summary s and the kept runs' times
    (stored())."""
    reasons = "; ".join(f"{n} {r}" for r, n in s["skip_reasons"].items())
    lines = [
        BEGIN,
        f"The newest stored full run (`lab test`, commit {s['commit']}, {s['when']}, "
        f"{s['time']} on the project's machine{warmth(s.get('compiled'))}): "
        f"**{s['passed']} passed, {s['failed']} failed**, {s['skipped']} skipped"
        + (f" ({reasons})" if reasons else "") + "."]
    if times is not None:
        said = [f"{kind} {t['time']} (commit {t['commit']}, {t['when']}"
                + (f", {t['compiled']:,} compilations" if kind == "cold" else
                   warmth(t.get("compiled"))) + ")"
                for kind, t in sorted(times.items())]
        missing = [k for k in ("cold", "warm") if k not in times]
        lines[-1] += (" `lab test` cold and warm, from the kept runs that recorded "
                      "what the machine held at their start (cold: a new machine, "
                      "ccache empty and no kernel built): "
                      + ("; ".join(said) if said else "none")
                      + (f"; no {' or '.join(missing)} run kept yet" if missing else "")
                      + ".")
    return "\n".join(lines + [END])


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
