# SPDX-License-Identifier: GPL-2.0-only
"""Tally: the result rows of 'lab test' and 'lab harden', and their summary."""

import json
import os
import subprocess
import tempfile
import time
from collections import Counter

from . import config
from .util import Timer, ccache_misses, say


# The rows listed but not counted, and what the summary calls them.
NOT_COUNTED = (
    ("stockfail", "upstream selftest leaves fail on stock 6.12 too (listed as STOCK-FAIL above)"),
    ("flaky", "upstream selftest leaves failed on patched and on stock alike when re-run "
              "(listed as FLAKY above)"),
    ("xfail", "expected failures (XFAIL, TODO), on stock as on patched (listed as XFAIL "
              "above)"),
    ("variant", "fixture variants for the other kernel, run by that kernel's boot"),
)


def skip_reason(detail):
    """The reason of a skip row: its message without the case it names in
    parentheses ("need more free huge pages (... hugetlb (1048576 kB))")."""
    return detail.split(" (")[0]


def info_path(rows_path):
    """Where Tally.save() puts the run's commit, time, exit status and
    scope for its rows."""
    return rows_path.with_name(rows_path.stem + ".info")


def repo_commit(full=False):
    """The repository's commit, short (all of it with full), with
    "+changes" when the work tree differs from it (files git tracks or
    would track); "unknown" outside git."""
    git = ["git", "-C", str(config.REPO)]
    head = subprocess.run(git + ["rev-parse"] + ([] if full else ["--short=7"]) + ["HEAD"],
                          capture_output=True, text=True).stdout.strip()
    if not head:
        return "unknown"
    dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=normal"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+changes" if dirty else "")


def patches_tree():
    """The git tree id of patches/ as the work tree holds it, uncommitted
    edits included (written through a temporary index): which series the
    lab builds now, the same id as git rev-parse HEAD:patches when patches/
    is committed as it is.  "unknown" outside git."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"))
        git = ["git", "-C", str(config.REPO)]
        added = subprocess.run(git + ["add", "-A", "--", "patches"], env=env,
                               capture_output=True, text=True)
        if added.returncode != 0:
            return "unknown"
        tree = subprocess.run(git + ["write-tree", "--prefix=patches/"], env=env,
                              capture_output=True, text=True).stdout.strip()
    return tree or "unknown"


class Tally:
    def __init__(self, start=None):
        self.rows = []          # (status, name, detail)
        self.notes = []         # lines for the summary (note())
        self.timer = Timer()
        # what the run tests is the tree it started from: commits made
        # while it runs are not in its builds and images
        self.commit = repo_commit()
        # compilations ccache could not answer, since the run started
        # (save(): 0 when every kernel came from the cache, warm)
        self.misses0 = ccache_misses()
        # what the machine held when the run started (kernel.build.
        # start_state()): save() records it, so that a cold run can be
        # told from a warm one
        self.start = start

    def note(self, line):
        """Add a line to the summary (once), e.g. what a plan left out."""
        if line not in self.notes:
            self.notes.append(line)

    def add(self, status, name, detail=""):
        """Add a row.  'variant' is a fixture variant for the other kernel
        that the other kernel's boot ran (skips.py): kept, not printed."""
        tag = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP",
               "stockfail": "STOCK-FAIL", "flaky": "FLAKY", "xfail": "XFAIL",
               "variant": None}[status]
        self.rows.append((status, name, detail))
        if tag:
            print(f"{tag:10} {name}{'  # ' + detail if detail else ''}", flush=True)

    def close(self):
        """Add the row that fails a run in which no row passed (no results,
        or only skips and excuses), once; save() and finish() call it, so
        that the saved rows have it too."""
        if not self.count("pass") and not any(r[1] == "run/results" for r in self.rows):
            self.add("fail", "run/results", f"no result passed ({len(self.rows)} rows, "
                     f"{self.count('skip')} skipped)")

    def save(self, kind, partial=None):
        """Write the rows to WORK/results/<kind>-<time>.json, and beside
        them (info_path()) the commit the run started from, its time so
        far and its exit status (exit_status(), what finish() returns);
        with partial (a list: what the run left out, empty for none), also
        whether it was full and what it left out.  Return the rows' path."""
        self.close()
        out = config.WORK / "results" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps([{"status": s, "name": n, "detail": d}
                                   for s, n, d in self.rows], indent=1))
        info = {"commit": self.commit, "time": str(self.timer), "exit": self.exit_status(),
                "compiled": ccache_misses() - self.misses0}
        if self.start is not None:
            info["start"] = self.start
        if partial is not None:
            info.update(full=not partial, partial=list(partial))
        info_path(out).write_text(json.dumps(info) + "\n")
        return out

    def exit_status(self):
        """The run's exit status: 1 on any failed row, else 0."""
        self.close()
        return 1 if self.count("fail") else 0

    def skip_reasons(self):
        """': N <reason>; ...' for the skips, most frequent first; a
        reason is a skip's message without the case it names in
        parentheses."""
        reasons = Counter(skip_reason(d) for s, _, d in self.rows if s == "skip")
        return "".join((": " if i == 0 else "; ") + f"{n} {r}"
                       for i, (r, n) in enumerate(reasons.most_common()))

    def count(self, status):
        return sum(1 for r in self.rows if r[0] == status)

    def finish(self, out):
        """Print the summary and the 'N passed, N failed' line; return the
        exit status (1 on any failure)."""
        self.close()
        fails = [r for r in self.rows if r[0] == "fail"]
        print()
        say(f"results: {out}  (total time {self.timer})")
        for status, what in NOT_COUNTED:
            if self.count(status):
                say(f"{self.count(status)} {what} (not counted)")
        for line in self.notes:
            say(line)
        say(f"{self.count('skip')} skipped" + self.skip_reasons())
        for s, n, d in fails:
            print(f"FAILED: {n}  {d}")
        print(f"{self.count('pass')} passed, {len(fails)} failed")
        return self.exit_status()
