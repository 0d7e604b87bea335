# SPDX-License-Identifier: GPL-2.0-only
"""Each patch says where it comes from (lab/kernel/provenance.py), and
'lab export --debian' turns that into DEP-3 fields."""

from lab.kernel import provenance, source

MERGED = """\
From 1 Mon Sep 17 00:00:00 2001
From: foliobatch lab <lab@foliobatch.invalid>
Subject: [PATCH] mm/mremap: move the PTEs of a large folio in one batch

Why and how.

Upstream's work this follows is by Dev Jain and Lorenzo Stoakes.

Upstream: f822a9a81a31 ("mm: optimize mremap() by PTE batching")
Upstream: 0b5be138ce00 ("mm/mremap: avoid expensive folio lookup on mremap folio pte batch")
Signed-off-by: foliobatch lab <lab@foliobatch.invalid>
---
 mm/mremap.c | 1 +
"""


def test_every_patch_of_the_series_says_where_it_comes_from():
    files = source.series_files()
    assert len(files) >= 47
    bad = [line for f in files for line in provenance.problems(f.name, f.read_text())]
    assert bad == []


def test_the_three_shapes_are_read_and_others_are_refused():
    assert provenance.sources(MERGED) == [
        provenance.Source("merged", "f822a9a81a31", "mm: optimize mremap() by PTE batching"),
        provenance.Source("merged", "0b5be138ce00",
                          "mm/mremap: avoid expensive folio lookup on mremap folio pte batch")]
    posted = MERGED.replace('f822a9a81a31 ("mm: optimize mremap() by PTE batching")',
                            "https://lore.kernel.org/linux-mm/x@y/ (v2, not merged)")
    assert provenance.sources(posted)[0] == provenance.Source(
        "posting", "https://lore.kernel.org/linux-mm/x@y/", "v2")
    assert provenance.problems("p", MERGED) == []
    # a short id, a missing author, no line at all, none beside a source
    assert provenance.problems("p", MERGED.replace("f822a9a81a31", "f822a9a"))[0] \
        .endswith("is of no known shape")
    assert "credits no author" in provenance.problems(
        "p", MERGED.replace("Upstream's work this follows is by", "By"))[0]
    assert provenance.problems("p", "Subject: x\n\nno lines\n---\n") == ["p: no Upstream: line"]
    both = MERGED.replace("Signed-off-by", "Upstream: none (own)\nSigned-off-by")
    assert any("beside other sources" in b for b in provenance.problems("p", both))
    # a line in the diff is not the message's
    assert provenance.sources("Subject: x\n\n---\n+Upstream: none (a diff line)\n") == []


def test_dep3_fields_follow_the_lines():
    text = provenance.with_dep3(MERGED)
    head = text.split("\n\n", 1)[0].splitlines()
    assert "Origin: upstream, https://git.kernel.org/linus/f822a9a81a31" in head
    assert "Forwarded: not-needed" in head
    assert any(h.startswith("Author: Dev Jain and Lorenzo Stoakes (upstream)") for h in head)
    assert text.endswith(MERGED.split("\n\n", 1)[1])
    own = MERGED.replace("Upstream's work this follows is by Dev Jain and Lorenzo Stoakes.\n\n",
                         "").replace('Upstream: f822a9a81a31 ("mm: optimize mremap() by PTE '
                                     'batching")\nUpstream: 0b5be138ce00 ("mm/mremap: avoid '
                                     'expensive folio lookup on mremap folio pte batch")',
                                     "Upstream: none (the runtime switches)")
    head = provenance.with_dep3(own).split("\n\n", 1)[0].splitlines()
    assert "Origin: vendor, foliobatch" in head and \
        "Forwarded: no (the runtime switches)" in head


def test_an_author_is_credited_once():
    """The credit sentence names upstream's authors; a "by <name>" of one
    of them elsewhere in the message credits them twice."""
    again = MERGED.replace("Why and how.", 'This follows upstream commit f822a9a81a31\n'
                           '("mm: optimize mremap() by PTE batching") by Dev\nJain, v6.17.')
    assert provenance.twice(again) == ["Dev Jain"]
    assert provenance.problems("p", again) == [
        "p: credits Dev Jain twice: 'by Dev Jain' beside the credit sentence"]
    # a mention that is not a credit, and a name the sentence does not hold
    other = MERGED.replace("Why and how.", "Dev Jain's later fix, reported by A. Person.")
    assert provenance.twice(other) == [] and provenance.problems("p", other) == []
