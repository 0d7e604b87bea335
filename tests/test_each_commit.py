# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of build.each_commit(): every commit builds in the config
the fragments make now, not in one left from earlier fragments, and with
the tools and the lab code of now, not with those of an earlier run."""

import shutil
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
    trees = {"c1^{tree}": "t1", "c2^{tree}": "t2"}
    monkeypatch.setattr(source, "out", lambda cmd: "c1 c2" if "rev-list" in cmd
                        else trees[cmd[-1]] if "rev-parse" in cmd else "subject")
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        out = tree / "out-x86_64-default"
        if "tinyconfig" in cmd:
            (out / ".config").write_text("CONFIG_TINY=y\n")
        elif cmd[0] == "make" and "olddefconfig" not in cmd:
            image = out / config.arch("x86_64").image
            image.parent.mkdir(parents=True, exist_ok=True)
            image.write_text(f"image of the commit checked out last, {len(calls)}\n")
        return types.SimpleNamespace(returncode=0)

    monkeypatch.setattr(build, "run", fake_run)
    monkeypatch.setattr(build, "say", lambda *a: None)
    monkeypatch.setattr(build, "tool_version", lambda cmd: VERSIONS[cmd], raising=False)
    return tree / "out-x86_64-default", configs, calls


# what --version prints first, per program; a test changes an entry to
# change a tool
VERSIONS = {}


@pytest.fixture(autouse=True)
def versions():
    VERSIONS.clear()
    VERSIONS.update({"gcc": "gcc (Debian 12.2.0-14+deb12u1) 12.2.0",
                     "ld": "GNU ld (GNU Binutils for Debian) 2.40",
                     "aarch64-linux-gnu-gcc": "aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0",
                     "aarch64-linux-gnu-ld": "GNU ld (GNU Binutils for Debian) 2.40"})


def new_commits(out):
    """Forget which trees built: the next run builds every commit, as it
    would for a series of new commits."""
    shutil.rmtree(out / build.BUILT_DIR, ignore_errors=True)


def makes(calls):
    """The kernel builds among the recorded commands (not the config steps)."""
    return [c for c in calls if c[0] == "make" and not
            any(t in c for t in ("tinyconfig", "olddefconfig"))]


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
    new_commits(out)
    calls.clear()
    build.each_commit("x86_64")
    assert tinyconfigs(calls) == 1


def test_the_fragments_are_merged_at_every_commit(fake_tree):
    """An option the series adds part-way (CONFIG_PT_RECLAIM) is unknown at
    the first commit; merged again at each commit, it takes the
    fragments' value from the commit that adds it."""
    _, _, calls = fake_tree
    build.each_commit("x86_64")
    merges = [c for c in calls if str(c[0]).endswith("merge_config.sh")]
    assert len(merges) == 2


def test_a_config_cut_short_is_not_taken_for_the_old_one(fake_tree, monkeypatch):
    """Stamp of config A, fragments changed to B, the run stopped after
    tinyconfig, fragments back to A: the tinyconfig-only .config must not
    pass for A's."""
    out, configs, calls = fake_tree
    build.each_commit("x86_64")
    frag = configs / "x86_64.config"
    old = frag.read_text()
    frag.write_text(old + "CONFIG_NEW=y\n")
    real = build.run

    def stop_after_tinyconfig(cmd, **kw):
        real(cmd, **kw)
        if "tinyconfig" in cmd:
            raise KeyboardInterrupt
    monkeypatch.setattr(build, "run", stop_after_tinyconfig)
    with pytest.raises(KeyboardInterrupt):
        build.each_commit("x86_64")
    monkeypatch.setattr(build, "run", real)
    frag.write_text(old)
    new_commits(out)
    calls.clear()
    build.each_commit("x86_64")
    assert tinyconfigs(calls) == 1


def test_a_tree_that_built_in_this_config_is_not_built_again(fake_tree, monkeypatch):
    """Each commit's tree that built is stamped with the config's hash: a
    second run builds nothing, a changed commit builds alone (the commits
    before it keep their trees), and a commit that failed builds again."""
    out, configs, calls = fake_tree
    assert build.each_commit("x86_64") == []
    assert len(makes(calls)) == 2
    calls.clear()
    assert build.each_commit("x86_64") == []
    assert makes(calls) == []
    # the last patch changed: c2 carries another tree
    monkeypatch.setattr(source, "out", lambda cmd: "c1 c2" if "rev-list" in cmd
                        else {"c1^{tree}": "t1", "c2^{tree}": "t2b"}[cmd[-1]]
                        if "rev-parse" in cmd else "subject")
    calls.clear()
    assert build.each_commit("x86_64") == []
    assert len(makes(calls)) == 1
    # a changed fragment: every tree builds again in the new config
    (configs / "x86_64.config").write_text("CONFIG_X86_64=y\nCONFIG_NEW=y\n")
    calls.clear()
    build.each_commit("x86_64")
    assert len(makes(calls)) == 2


def test_a_commit_that_fails_is_not_stamped(fake_tree, monkeypatch):
    out, _, calls = fake_tree
    real = build.run

    def fail_make(cmd, **kw):
        real(cmd, **kw)
        failing = cmd[0] == "make" and "tinyconfig" not in cmd and "olddefconfig" not in cmd
        return types.SimpleNamespace(returncode=2 if failing else 0)
    monkeypatch.setattr(build, "run", fail_make)
    monkeypatch.setattr(build, "first_error", lambda log: "error")
    assert build.each_commit("x86_64") == ["c1", "c2"]
    assert not (out / build.IMAGES_DIR).exists()
    monkeypatch.setattr(build, "run", real)
    calls.clear()
    assert build.each_commit("x86_64") == []
    assert len(makes(calls)) == 2


@pytest.mark.parametrize("tool", ["gcc", "ld"])
def test_a_new_compiler_or_binutils_builds_every_commit_again(fake_tree, tool):
    """A commit that built with one gcc or ld tells nothing of the next."""
    _, _, calls = fake_tree
    build.each_commit("x86_64")
    calls.clear()
    build.each_commit("x86_64")
    assert makes(calls) == []
    VERSIONS[tool] += " (rebuilt)"
    calls.clear()
    assert build.each_commit("x86_64") == []
    assert len(makes(calls)) == 2


def test_a_change_to_the_labs_build_code_builds_every_commit_again(fake_tree, monkeypatch,
                                                                  tmp_path):
    _, _, calls = fake_tree
    repo = tmp_path / "repo"
    code = repo / "lab/kernel/build.py"
    code.parent.mkdir(parents=True)
    shutil.copyfile(config.REPO / "lab/kernel/build.py", code)
    monkeypatch.setattr(config, "REPO", repo)
    build.each_commit("x86_64")
    calls.clear()
    build.each_commit("x86_64")
    assert makes(calls) == []
    code.write_text(code.read_text() + "\n# changed\n")
    calls.clear()
    build.each_commit("x86_64")
    assert len(makes(calls)) == 2


def test_the_toolchain_of_a_cross_build_is_the_cross_gcc_and_ld(monkeypatch):
    monkeypatch.setattr(build, "tool_version", lambda cmd: VERSIONS[cmd])
    assert build.toolchain("aarch64-linux-gnu-") == {
        prog: VERSIONS[prog] for prog in ("gcc", "aarch64-linux-gnu-gcc",
                                          "aarch64-linux-gnu-ld")}


def test_tool_version_is_the_first_line_or_says_what_is_missing():
    assert build.tool_version("gcc").startswith("gcc")
    assert build.tool_version("no-such-gcc") == "no-such-gcc: not found"


def test_each_commit_keeps_the_boot_image_it_built(fake_tree):
    """Every commit tree that built keeps its own boot image, so that a
    later boot of the commit needs no build; a stamp whose image is gone
    is no proof that the tree built, and that commit builds again."""
    out, _, calls = fake_tree
    assert build.each_commit("x86_64") == []
    images = sorted((out / build.IMAGES_DIR).iterdir())
    stamps = sorted((out / build.BUILT_DIR).iterdir())
    assert [i.name for i in images] == [s.name for s in stamps] and len(images) == 2
    assert images[0].read_text() != images[1].read_text()
    images[0].unlink()
    calls.clear()
    assert build.each_commit("x86_64") == []
    assert len(makes(calls)) == 1
