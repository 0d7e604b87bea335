# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of docs/patches.md (the patch -> test -> workload map):
it is what the series and the declarations give, every patch that changes
kernel code has a test, and what the declarations name exists."""

from lab.core import config
from lab.guest import coverage, image, workloads
from lab.kernel import source
from lab.outputs import patchesdoc


def test_the_doc_is_what_the_series_and_the_declarations_give():
    assert patchesdoc.DOC.read_text() == patchesdoc.render(), \
        "docs/patches.md is stale: run './bin/lab report --patches'"


def test_every_patch_that_changes_kernel_code_has_a_test():
    assert patchesdoc.uncovered() == []


def test_every_patch_is_in_one_group():
    numbers = [patchesdoc.number(f) for f in source.series_files()]
    declared = [n for g in coverage.GROUPS for n in g.numbers()]
    assert sorted(declared) == sorted(numbers)


def test_what_the_groups_name_exists():
    own = {p.stem for p in (config.GUEST / "tests").glob("*.c")}
    harden = {p.stem for p in (config.GUEST / "harden").glob("*.c")}
    for g in coverage.GROUPS:
        assert set(g.own) <= own, g.name
        assert set(g.upstream) <= set(image.SELFTESTS), g.name
        assert set(g.harden) <= harden, g.name
        assert set(g.switches) <= set(config.SWITCHES) | {"every switch"}, g.name
    # every switch is some group's, and every live workload's switches too
    named = {s for g in coverage.GROUPS for s in g.switches}
    assert set(config.SWITCHES) <= named
    for w in workloads.WORKLOADS:
        assert set(w.switches()) <= named, w.name


def test_a_patch_without_a_test_is_found(tmp_path, monkeypatch):
    """Planted: a code patch outside every group, and a group without tests."""
    p = tmp_path / "0090-mm-something.patch"
    p.write_text("Subject: [PATCH] mm: something\n\n---\n"
                 "diff --git a/mm/rmap.c b/mm/rmap.c\n")
    doc = tmp_path / "0091-docs.patch"
    doc.write_text("Subject: [PATCH] docs\n\n---\n"
                   "diff --git a/Documentation/x.rst b/Documentation/x.rst\n")
    assert patchesdoc.uncovered([p, doc]) == [(p.name, "in no group of guest/coverage.py")]
    monkeypatch.setattr(coverage, "GROUPS",
                        coverage.GROUPS + (coverage.Group("new", "0090"),))
    assert patchesdoc.uncovered([p]) == [(p.name, "its group 'new' lists no test")]
