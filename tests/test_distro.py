# SPDX-License-Identifier: GPL-2.0-only
"""docs/configs.md: where the lab's kernels differ from Debian's pinned
configs, and why (lab/kernel/distro.py, configs/differences.tsv)."""

import pytest

from lab.core import config
from lab.core.util import LabError
from lab.kernel import distro

# the lab's real work directory (conftest gives each test a temporary one):
# its source trees and downloaded Debian configs are read, not written
REAL_WORK = config.WORK


def test_the_table_is_what_the_configs_give_and_every_difference_has_its_reason(
        monkeypatch):
    """Regenerated from Debian's pinned configs and the lab's fragments as
    kconfig takes them now: a fragment change or a new Debian config that
    is not written into docs/configs.md and differences.tsv fails."""
    if not (REAL_WORK / "src" / "patched" / "Makefile").exists():
        pytest.skip("no source tree: 'lab source apply' (lab test does it first)")
    monkeypatch.setattr(config, "source_tree", lambda flavour: REAL_WORK / "src" / flavour)
    (REAL_WORK / "dl").mkdir(exist_ok=True)
    (config.WORK / "dl").symlink_to(REAL_WORK / "dl")
    text, bad = distro.generate()
    assert bad == []
    assert distro.DOC.read_text() == text, "docs/configs.md is stale: lab report --configs"


def test_the_options_that_change_the_measured_code_are_debians():
    """The options item by item that decide the measured code are taken
    from Debian's config: none of them may sit in the table."""
    doc = distro.DOC.read_text()
    for opt in ("JUMP_LABEL", "PREEMPT_VOLUNTARY", "PREEMPT_DYNAMIC", "HZ_250",
                "SPARSEMEM_VMEMMAP", "SLUB_TINY", "CPU_MITIGATIONS",
                "MITIGATION_PAGE_TABLE_ISOLATION", "NUMA", "NUMA_BALANCING", "MEMCG",
                "LRU_GEN", "TRANSPARENT_HUGEPAGE", "THP_SWAP", "ARM64_4K_PAGES",
                "ARM64_CONTPTE", "ARM64_TLB_RANGE", "ARM64_HW_AFDBM",
                "ARM64_USE_LSE_ATOMICS", "ARM64_PTR_AUTH", "DEBUG_TLBFLUSH", "PARAVIRT",
                "X86_5LEVEL", "STACKPROTECTOR_STRONG"):
        assert f"| `{opt}` |" not in doc, opt


def test_an_option_with_a_prompt_needs_a_reason_and_a_stale_reason_fails():
    diffs = {"x86_64": [("FOO", "n", "y", True), ("FOO_HELPER", "-", "y", False)],
             "arm64": [("BAR", "y", "n", True)]}
    table = [("BAR", "arm64", "why"), ("GONE", "*", "was once")]
    bad = distro.problems(diffs, table)
    assert len(bad) == 2, bad
    assert bad[0].startswith("x86_64: FOO (lab n, Debian y) differs with no reason")
    assert "'GONE'" in bad[1] and "stale" in bad[1]
    # a reason for another arch does not cover this one
    assert distro.problems({"x86_64": [("BAR", "y", "n", True)]},
                           [("BAR", "arm64", "why")])[0].startswith("x86_64: BAR")


def test_prompts_are_read_from_the_kconfig_blocks(tmp_path):
    (tmp_path / "Kconfig").write_text(
        'config A\n\tbool "a thing"\n\tdefault y\n\n'
        'config B\n\tbool\n\tselect A\n\n'
        'menuconfig C\n\ttristate\n\tprompt "c"\n'
        'if C\nconfig D\n\tint\n\tdefault 3\nendif\n'
        'config B\n\tbool "B again, with a prompt"\n')
    assert distro.kconfig_options(tmp_path, ["Kconfig"]) == {
        "A": True, "B": True, "C": True, "D": False}


def test_a_bad_reasons_line_is_refused(tmp_path):
    p = tmp_path / "d.tsv"
    p.write_text("# comment\nFOO\t*\n")
    with pytest.raises(LabError, match="d.tsv:2"):
        distro.reasons(p)
    assert distro.reasons() and all(len(r) == 3 for r in distro.reasons())
