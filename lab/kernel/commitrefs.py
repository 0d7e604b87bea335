# SPDX-License-Identifier: GPL-2.0-only
"""Commit references in the series' messages, checked against upstream.

checkpatch.pl checks that a message names a commit as
'commit <12+ hex> ("<subject>")' or 'Fixes: <12+ hex> ("<subject>")'
(and the lab its provenance lines, 'Upstream: <12 hex> ("<subject>")',
lab/kernel/provenance.py, the same way)
(GIT_COMMIT_ID, BAD_FIXES_TAG), and then looks the commit up in the tree's
history: the upstream commits a backport names (v6.17 and later) are not in
6.12's, so it reports each as UNKNOWN_COMMIT_ID.  The series' checkpatch run
leaves that one lookup to this module, which does it against
docs/upstream/commits.txt: one line per upstream commit the messages name,
'<12 hex> <subject>', written from mainline's shortlog.
"""

import re

from ..core import config

COMMITS = config.REPO / "docs" / "upstream" / "commits.txt"

# The two forms checkpatch accepts, on a message with its line breaks made
# spaces (a subject may wrap).
_REF = re.compile(r'\b(?:commit|Fixes:|Upstream:)\s+([0-9a-f]{12,40})\s+\("(.+?)"\)')
# Any id after "commit" or "Fixes:": checkpatch checks the form of a
# reference (GIT_COMMIT_ID) only when it finds the id, so a reference to an
# upstream commit in another form is this module's to catch.
_ANY_REF = re.compile(r'\b(?:[Cc]ommit|Fixes:|Upstream:)\s+([0-9a-fA-F]{7,40})\b')


def known(path=COMMITS):
    """{12-hex id: subject} from a commits.txt."""
    table = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            cid, subject = line.split(None, 1)
            table[cid[:12]] = subject
    return table


def refs(message):
    """The (id, subject) pairs a commit message names in checkpatch's forms."""
    flat = " ".join(message.split())
    return [(cid, subject) for cid, subject in _REF.findall(flat)]


def problems(message, table, in_history):
    """What is wrong with the references of one message: each names a commit
    of the tree's own history (in_history(id) is true) or one of the table,
    with the table's subject.  Returns a list of lines, empty when all hold."""
    out = []
    good = {cid for cid, _ in refs(message)}
    flat = " ".join(message.split())
    for cid in _ANY_REF.findall(flat):
        if cid not in good and not in_history(cid):
            out.append(f'commit {cid} is not named as \'commit <12+ hex> ("<subject>")\'')
    for cid, subject in refs(message):
        if in_history(cid):
            continue
        want = table.get(cid[:12])
        if want is None:
            out.append(f"commit {cid} is neither in the tree's history nor in {COMMITS.name}")
        elif want != subject:
            out.append(f'commit {cid} is "{want}" upstream, not "{subject}"')
    return out
