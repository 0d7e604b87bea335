# SPDX-License-Identifier: GPL-2.0-only
"""Check records: the table of the 'lab check' verdicts kept in
docs/results/check/ ('lab check --record'), one row per leaf of
kernel/check.py, for docs/testing.md ('lab report --history' writes the
block; a host test checks it).  A row says whether its verdict was
judged on the series in patches/ now (the record's series hash) and by
the lab's check code as it is now (the record's code hash, and for a
leaf that boots its guest code's: a record judged by other code is run
again by the next 'lab check'), so the
table shows at a glance how much of 'lab check --all' holds for it."""

import json

from ..core import config
from ..core.util import mmss
from . import blocks

BEGIN = ("<!-- check-records: made by 'lab report --history' from "
         "docs/results/check/*.json; do not edit -->")
END = "<!-- /check-records -->"


def load(records_dir):
    """{leaf: record} of the records kept in @records_dir."""
    kept = {}
    for f in sorted(records_dir.glob("*.json")):
        data = json.loads(f.read_text())
        kept[data["leaf"]] = data
    return kept


def block(leaves, kept, series, code, boot=None):
    """The markdown block: a row per leaf of @leaves (kernel/check.py's
    order) with its kept verdict, or none; @series: the series hash of
    patches/ now; @code: the hash of the lab's check code now
    (check.CHECK_CODE); @boot: {leaf: the hash of its boot code now} for
    the leaves that boot (their key holds the guest's side too: the test
    programs, the image, the plan and their judges), whose record holds
    only for that code as well."""
    boot = boot or {}
    rows = ["| leaf | verdict | judged | took | on the series in patches/ "
            "| by the check code now |",
            "|---|---|---|---|---|---|"]
    current = 0
    for leaf in leaves:
        r = kept.get(leaf)
        if r is None:
            rows.append(f"| `{leaf}` | none kept | | | | |")
            continue
        status = r["result"]["status"].upper()
        detail = r["result"].get("detail") or ""
        verdict = f"{status}, {detail}" if detail else status
        here = r["inputs"].get("series") == series
        same = r["inputs"].get("code") == code
        was = (r["inputs"].get("boot") or {}).get("code", "?")
        guest = leaf not in boot or was == boot[leaf]
        current += here and same and guest and r["result"]["status"] == "pass"
        by = ("yes" if same and guest else
              "no, code " + r["inputs"].get("code", "?") if not same else
              "no, guest code " + was[:16])
        rows.append(f"| `{leaf}` | {verdict} | {r['stored']} | {mmss(r['took'])} | "
                    f"{'yes' if here else 'no, series ' + r['inputs'].get('series', '?')} | "
                    f"{by} |")
    head = (f"{current} of {len(leaves)} leaves of `lab check --all` have a kept PASS "
            f"judged on the series in patches/ now (series {series}) by the lab's "
            f"check code now (code {code}).")
    return "\n".join([BEGIN, head, "", *rows, END])


def replace_block(text, new):
    return blocks.replace(text, BEGIN, END, new, "check-records")


def made(leaves, series, code, boot=None):
    """The block the records kept in the repository make now."""
    return block(leaves, load(config.CHECK_RECORDS), series, code, boot)
