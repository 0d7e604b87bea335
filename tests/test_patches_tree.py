# SPDX-License-Identifier: GPL-2.0-only
"""A measurement records the series it was made of: patches_tree() is the
tree id of patches/ as the work tree holds it, so that a bench run over
an uncommitted edit of a patch does not carry the id of the committed
series (which it did not measure)."""

import subprocess

from lab.core import config, tally


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_tree_is_the_work_tree_s(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "patches").mkdir(parents=True)
    (repo / "patches" / "0001-a.patch").write_text("first form\n")
    (repo / "patches" / "series").write_text("0001-a.patch\n")
    (repo / "other").write_text("x\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    monkeypatch.setattr(config, "REPO", repo)
    committed = _git(repo, "rev-parse", "HEAD:patches")
    assert tally.patches_tree() == committed
    (repo / "other").write_text("y\n")                 # not the series
    assert tally.patches_tree() == committed
    (repo / "patches" / "0001-a.patch").write_text("second form\n")
    edited = tally.patches_tree()
    assert edited not in (committed, "unknown")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b")
    assert tally.patches_tree() == edited == _git(repo, "rev-parse", "HEAD:patches")
    assert _git(repo, "status", "--porcelain") == ""   # the real index untouched


def test_outside_git_it_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "REPO", tmp_path)
    assert tally.patches_tree() == "unknown"
