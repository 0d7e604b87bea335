"""Host unit tests of build.each_commit(): every commit builds in the config
the fragments make now, not in one left from earlier fragments."""

import types

import pytest

from lab.core import config
from lab.kernel import build, source


@pytest.fixture
def fake_tree(monkeypatch, tmp_path):
    """A bisect worktree of two commits whose make and git commands are only
    recorded, and config fragments in tmp_path/configs."""
    configs = tmp_path / "configs"
    configs.mkdir()
    for name in ("common", "x86_64", "patched"):
        (configs / f"{name}.config").write_text(f"CONFIG_{name.upper()}=y\n")
    tree = tmp_path / "bisect"
    tree.mkdir()
    monkeypatch.setattr(config, "CONFIGS", configs)
    monkeypatch.setattr(config, "source_tree", lambda flavour: tmp_path / flavour)
    monkeypatch.setattr(config, "log_dir", lambda: tmp_path)
    monkeypatch.setattr(source, "apply", lambda: tmp_path / "patched")
    monkeypatch.setattr(source, "out", lambda cmd: "c1 c2" if "rev-list" in cmd else "subject")
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        if "tinyconfig" in cmd:
            (tree / "out-x86_64-default" / ".config").write_text("CONFIG_TINY=y\n")
        return types.SimpleNamespace(returncode=0)

    monkeypatch.setattr(build, "run", fake_run)
    monkeypatch.setattr(build, "say", lambda *a: None)
    return tree / "out-x86_64-default", configs, calls


def tinyconfigs(calls):
    return sum(1 for c in calls if "tinyconfig" in c)


def test_the_config_is_made_once_for_all_commits(fake_tree):
    out, _, calls = fake_tree
    assert build.each_commit("x86_64") == []
    assert tinyconfigs(calls) == 1
    assert (out / build.CONFIG_STAMP).read_text().strip() == \
        build.config_hash("x86_64", "default", "patched")
    calls.clear()
    build.each_commit("x86_64")
    assert tinyconfigs(calls) == 0


def test_a_changed_fragment_makes_the_config_again(fake_tree):
    """A .config left by a run before a fragment changed (or by a lab that
    wrote no stamp) must not be reused: olddefconfig alone keeps the old
    choices, and the leaf's verdict would be stored under the new config's
    key for a build in the old one."""
    out, configs, calls = fake_tree
    build.each_commit("x86_64")
    (configs / "x86_64.config").write_text("CONFIG_X86_64=y\nCONFIG_NEW=y\n")
    calls.clear()
    build.each_commit("x86_64")
    assert tinyconfigs(calls) == 1
    (out / build.CONFIG_STAMP).unlink()
    calls.clear()
    build.each_commit("x86_64")
    assert tinyconfigs(calls) == 1
