# SPDX-License-Identifier: GPL-2.0-only
"""Provenance: where each patch of the series comes from.

Every patch says it in its message, one trailer line per source, before
its Signed-off-by:

  Upstream: <12-hex id> ("<subject>")     a merged mainline commit it follows
  Upstream: <link> (vN, not merged)       a posting it follows
  Upstream: none (<why>)                  the backport's own change

and credits upstream's authors in a sentence of its own ("Upstream's work
this follows is by A and B.").  sources() reads them; problems() names a
patch without one or with a line of another shape; dep3() gives the
DEP-3 fields (Origin, Author, Forwarded, Applied-Upstream) that
'lab export --debian' puts into the exported copy's header.
"""

import re
from dataclasses import dataclass

LINE_RE = re.compile(r"^Upstream: (.*)$", re.M)
MERGED_RE = re.compile(r'^([0-9a-f]{12}) \("(.+)"\)$')
POSTING_RE = re.compile(r"^(https?://\S+) \((v\d+), not merged\)$")
NONE_RE = re.compile(r"^none \((.+)\)$")
CREDIT_RE = re.compile(r"^Upstream's work this follows is by (.+)\.$", re.M)
LINUS = "https://git.kernel.org/linus/"


@dataclass(frozen=True)
class Source:
    kind: str           # merged | posting | none
    ref: str            # the commit id, the link, or the reason
    detail: str = ""    # the commit's subject, or the posting's version


def message(text):
    """The commit message part of a format-patch file (before '---')."""
    return text.split("\n---\n", 1)[0]


def sources(text):
    """[Source] of a patch's Upstream: lines; a line of no known shape is a
    Source of kind 'bad'."""
    out = []
    for line in LINE_RE.findall(message(text)):
        for rx, kind in ((MERGED_RE, "merged"), (POSTING_RE, "posting"), (NONE_RE, "none")):
            m = rx.match(line)
            if m:
                out.append(Source(kind, *m.groups()) if kind != "none"
                           else Source(kind, m.group(1)))
                break
        else:
            out.append(Source("bad", line))
    return out


def authors(text):
    m = CREDIT_RE.search(message(text))
    return m.group(1) if m else ""


def problems(name, text):
    """What is wrong with a patch's provenance, as lines naming it."""
    srcs = sources(text)
    bad = [f"{name}: no Upstream: line"] if not srcs else []
    bad += [f"{name}: 'Upstream: {s.ref}' is of no known shape" for s in srcs
            if s.kind == "bad"]
    if any(s.kind in ("merged", "posting") for s in srcs) and not authors(text):
        bad.append(f"{name}: follows upstream work but credits no author")
    if any(s.kind == "none" for s in srcs) and len(srcs) > 1:
        bad.append(f"{name}: 'Upstream: none' beside other sources")
    bad += [f"{name}: credits {who} twice: 'by {who}' beside the credit sentence"
            for who in twice(text)]
    return bad


def twice(text):
    """The authors of the credit sentence whom the message credits again
    elsewhere, as "by <name>" (one credit per author: the sentence)."""
    msg = message(text)
    credit = CREDIT_RE.search(msg)
    if not credit:
        return []
    rest = msg[:credit.start()] + msg[credit.end():]
    rest = re.sub(r"\s+", " ", rest)
    names = re.split(r", | and ", credit.group(1))
    return [n for n in names if re.search(r"\bby " + re.escape(n) + r"\b", rest)]


def dep3(text):
    """The DEP-3 fields of a patch, as header lines."""
    srcs = sources(text)
    merged = [s for s in srcs if s.kind == "merged"]
    posted = [s for s in srcs if s.kind == "posting"]
    who = authors(text)
    if merged:
        lines = [f"Origin: upstream, {LINUS}{merged[0].ref}",
                 "Applied-Upstream: " + ", ".join(LINUS + s.ref for s in merged)]
        lines += [f"Forwarded: not-needed"]
    elif posted:
        lines = [f"Origin: other, {posted[0].ref}", f"Forwarded: {posted[0].ref}"]
    else:
        why = srcs[0].ref if srcs else "no provenance"
        lines = ["Origin: vendor, foliobatch", f"Forwarded: no ({why})"]
    if who:
        lines.append(f"Author: {who} (upstream); backported to 6.12 by the foliobatch lab")
    return lines


def with_dep3(text):
    """text with its DEP-3 fields added at the end of its mail header (before
    the blank line that opens the message)."""
    head, sep, rest = text.partition("\n\n")
    if not sep:
        return text
    return head + "\n" + "\n".join(dep3(text)) + sep + rest
