# SPDX-License-Identifier: GPL-2.0-only
"""Host tests of the series' commit references (lab/kernel/commitrefs.py):
an upstream commit a message names must be in docs/upstream/commits.txt
with its upstream subject, since checkpatch cannot look it up in 6.12."""

from lab.kernel import commitrefs

TABLE = {"0aa3657df3ec": "mm: add batched versions of ptep_modify_prot_start/commit"}
NOWHERE = lambda cid: False  # noqa: E731


def test_a_wrapped_reference_is_read_whole():
    msg = ('Upstream did so in commit 0aa3657df3ec ("mm: add batched versions of\n'
           'ptep_modify_prot_start/commit").\n\n'
           'Fixes: 7efa1cd5f89b ("arm64: add batched versions of '
           'ptep_modify_prot_start/commit")\n')
    assert commitrefs.refs(msg) == [
        ("0aa3657df3ec", "mm: add batched versions of ptep_modify_prot_start/commit"),
        ("7efa1cd5f89b", "arm64: add batched versions of ptep_modify_prot_start/commit")]


def test_a_listed_commit_with_its_subject_passes():
    msg = 'Fixes: 0aa3657df3ec ("mm: add batched versions of ptep_modify_prot_start/commit")'
    assert commitrefs.problems(msg, TABLE, NOWHERE) == []


def test_an_unlisted_commit_fails():
    msg = 'Fixes: 0aa3657df3ed ("mm: add batched versions of ptep_modify_prot_start/commit")'
    assert commitrefs.problems(msg, TABLE, NOWHERE) == [
        "commit 0aa3657df3ed is neither in the tree's history nor in commits.txt"]


def test_a_wrong_subject_fails():
    msg = 'commit 0aa3657df3ec ("mm: add batched ptep_modify_prot_start")'
    assert len(commitrefs.problems(msg, TABLE, NOWHERE)) == 1


def test_a_commit_of_the_trees_history_needs_no_entry():
    msg = 'commit 1234567890ab ("mm: something 6.12 has")'
    assert commitrefs.problems(msg, TABLE, lambda cid: cid == "1234567890ab") == []


def test_every_listed_commit_has_a_subject():
    table = commitrefs.known()
    assert table and all(len(cid) == 12 and subject for cid, subject in table.items())


def test_an_upstream_reference_in_another_form_fails():
    """checkpatch checks the form only of ids it finds in the tree's
    history; an upstream id written short, or without its subject, must
    not pass unseen."""
    for msg in ('as upstream commit 0aa3657 did',
                'Commit 0aa3657df3ec changed it',
                'Fixes: 0aa3657df3ec'):
        assert commitrefs.problems(msg, TABLE, NOWHERE), msg


def test_the_series_messages_name_upstream_commits_in_checkpatchs_form():
    from lab.kernel import source
    table = commitrefs.known()
    for f in source.series_files():
        text = f.read_text()
        message = text[:text.index("\n---\n")]
        assert commitrefs.problems(message, table, NOWHERE) == [], f.name
