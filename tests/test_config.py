# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of config fragment handling, plans and cpio lists."""

import re

import pytest

from lab.core import config
from lab.core.util import LabError
from lab.guest import harness, image, results, run, suites
from lab.kernel import build


def test_fragment_parse(tmp_path):
    f = tmp_path / "a.config"
    f.write_text("# comment\nCONFIG_A=y\nCONFIG_B=n\n# CONFIG_C is not set\nCONFIG_D=8\n")
    assert build.parse_fragment(f) == {"CONFIG_A": "y", "CONFIG_B": "n",
                                       "CONFIG_C": "n", "CONFIG_D": "8"}


def test_check_config_reports_options_that_did_not_stick(tmp_path):
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_A=y\nCONFIG_B=n\nCONFIG_C=y\n")
    dot = tmp_path / ".config"
    dot.write_text("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\n")
    with pytest.raises(LabError) as e:
        build.check_config(dot, [frag])
    assert "CONFIG_C=y" in str(e.value) and "CONFIG_A" not in str(e.value)
    dot.write_text("CONFIG_A=y\nCONFIG_C=y\n")
    build.check_config(dot, [frag])


def test_real_fragments_parse_and_variants():
    for a in config.ARCHES:
        for v in config.VARIANTS:
            for f in build.fragments(a, v):
                assert build.parse_fragment(f), f
    assert len(build.fragments("arm64", "debug")) == 4
    assert len(build.fragments("x86_64", "debug")) == 3
    assert build.fragments("x86_64", "default", "patched")[-1].name == "patched.config"
    assert build.config_hash("x86_64", "default", "stock") != \
        build.config_hash("x86_64", "default", "patched")
    with pytest.raises(LabError):
        build.fragments("arm64", "nonsense")


def test_unknown_arch_is_a_clear_error():
    with pytest.raises(SystemExit) as e:
        config.arch("riscv")
    assert "unknown arch" in str(e.value)


def test_plan_runs_each_program_with_a_timeout():
    plan = suites.test_plan("arm64")
    assert plan.startswith(". /lab/lib.sh")
    assert "lab_run soft-dirty" not in plan          # x86 only
    assert "lab_run transhuge-stress 120 /lab/selftests/mm/transhuge-stress -d 10" in plan
    n = len(suites.plan_programs(plan))
    assert f"lab_plan {n}" in plan
    # lab lava --only counts them: before, the lab_run_cases program (and
    # so --only uffd-unit-tests) was not counted
    assert suites.plan_programs(suites.test_plan("arm64", only={"uffd-unit-tests", "cow"})) \
        == ["cow", "uffd-unit-tests"]
    # the upstream programs, several of which map at fixed addresses, run
    # without address randomisation; the own tests with it
    assert "\nlab_no_aslr lab_run khugepaged 1200 /lab/selftests/mm/khugepaged\n" in plan
    assert "\nlab_no_aslr lab_run_cases uffd-unit-tests 300 " in plan
    assert "\nlab_no_aslr lab_run mremap_test 900 " in plan
    assert "\nlab_no_aslr lab_run split_huge_page_test 1200 " in plan
    runs = [l for l in plan.splitlines() if " lab_run" in l or l.startswith("lab_run")]
    for l in runs:
        prog = l.removeprefix("lab_no_aslr ").split()[1]
        assert l.startswith("lab_no_aslr ") == suites.is_upstream(prog), l
    assert {suites.is_upstream(l.removeprefix("lab_no_aslr ").split()[1])
            for l in runs} == {True, False}
    # uffd-unit-tests runs one case at a time, each case a leaf
    assert "lab_run_cases uffd-unit-tests 300 /lab/selftests/mm/uffd-unit-tests" in plan
    assert "lab_run uffd-unit-tests" not in plan
    assert "lab_run soft-dirty" in suites.test_plan("x86_64")


def test_debug_plan_scales_timeouts():
    plan = suites.test_plan("arm64", variant="debug")
    assert "lab_run transhuge-stress 480 /lab/selftests/mm/transhuge-stress" in plan
    assert "lab_run split_huge_page_test 4800 " in plan


def test_cpio_list_creates_parent_dirs_once(tmp_path):
    cl = image.CpioList()
    cl.file("/lab/tests/a", tmp_path / "a")
    cl.file("/lab/tests/b", tmp_path / "b")
    dirs = [l for l in cl.lines if l.startswith("dir ")]
    assert dirs == ["dir /lab 0755 0 0", "dir /lab/tests 0755 0 0"]


def test_a_later_fragment_overrides_an_earlier_one(tmp_path):
    # nosplit.config sets NR_CPUS=2 over common.config's 8
    first, later = tmp_path / "a.config", tmp_path / "b.config"
    first.write_text("CONFIG_NR_CPUS=8\nCONFIG_SMP=y\n")
    later.write_text("CONFIG_NR_CPUS=2\n# CONFIG_SPLIT_PTE_PTLOCKS is not set\n")
    dot = tmp_path / ".config"
    dot.write_text("CONFIG_SMP=y\nCONFIG_NR_CPUS=2\n")
    build.check_config(dot, [first, later])
    dot.write_text("CONFIG_SMP=y\nCONFIG_NR_CPUS=2\nCONFIG_SPLIT_PTE_PTLOCKS=y\n")
    with pytest.raises(LabError) as e:
        build.check_config(dot, [first, later])
    assert "SPLIT_PTE_PTLOCKS" in str(e.value) and "NR_CPUS" not in str(e.value)


def test_the_nosplit_variant_is_the_debug_kernel_without_split_pte_locks():
    names = [f.name for f in build.fragments("arm64", "nosplit", "patched")]
    assert names == ["common.config", "arm64.config", "debug.config",
                     "arm64-debug.config", "nosplit.config", "patched.config"]
    names = [f.name for f in build.fragments("x86_64", "debug", "stock")]
    assert names == ["common.config", "x86_64.config", "debug.config"]
    frag = build.parse_fragment(config.CONFIGS / "nosplit.config")
    assert frag == {"CONFIG_NR_CPUS": "2", "CONFIG_SPLIT_PTE_PTLOCKS": "n"}
    assert suites.SHORT_VARIANT == "nosplit"
    common = build.parse_fragment(config.CONFIGS / "common.config")
    numa = ("CONFIG_NUMA", "CONFIG_MIGRATION", "CONFIG_NUMA_BALANCING")
    assert {k: common.get(k) for k in numa} == dict.fromkeys(numa, "y")
    plan = suites.race_plan(suites.NOSPLIT_TESTS, "nosplit", suites.NOSPLIT_UPSTREAM)
    assert "-t collapse_uffd_race" in plan
    assert ("lab_run mprotect_batch 2400 /lab/tests/mprotect_batch -t numa_hinting"
            " -t tags_on_every_pte -t halves_then_whole -t half_back_then_whole\n") in plan
    assert "lab_run khugepaged 4800 /lab/selftests/mm/khugepaged" in plan
    assert "lab_run_cases uffd-unit-tests 300 /lab/selftests/mm/uffd-unit-tests move\n" in plan


def test_every_test_a_boot_names_exists_in_its_program():
    """A name given to -t that no test has runs nothing: the boot would
    lose those rows without a failure (tests/test_closed_plans.py checks
    every table)."""
    for table in (suites.RACE_TESTS, suites.NOSPLIT_TESTS):
        for prog, names in table.items():
            have = harness.tests(prog)
            assert set(names) <= have, (prog, set(names) - have)


def test_arm64_debug_kernels_boot_with_tag_memory_and_have_mte(monkeypatch):
    """mprotect_batch's mte test fails on a debug kernel without MTE: the
    config and the machine must give it one; the benched kernels keep the
    plain machine."""
    def machine(arch_name, variant, cpu=None):
        cmd = run.qemu_cmd(arch_name, "K", "I", mem_mb=64, cpus=2, append="",
                           variant=variant, cpu=cpu)
        return cmd[cmd.index("-M") + 1]
    monkeypatch.setattr(run.shutil, "which", lambda name: "/usr/bin/" + name)
    assert machine("arm64", "nosplit") == machine("arm64", "debug") == "virt,mte=on"
    assert machine("arm64", "default") == "virt"
    # QEMU refuses mte=on with a CPU without MTE: the NO_RANGE_TLBI boot
    assert machine("arm64", "nosplit", suites.NO_RANGE_TLBI["arm64"][0]) == "virt"
    assert machine("x86_64", "nosplit") == machine("x86_64", "default") == "q35"
    frag = build.parse_fragment(config.CONFIGS / "arm64-debug.config")
    assert frag.get("CONFIG_ARM64_MTE") == "y"
    x86 = build.parse_fragment(config.CONFIGS / "x86_64.config")
    assert x86.get("CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS") == "y"


def test_boot_picks_the_machine_of_the_variant_in_its_env(monkeypatch, tmp_path):
    cmds = []
    monkeypatch.setattr(config, "WORK", tmp_path)
    monkeypatch.setattr(run.image, "plan_cpio", lambda *a: tmp_path / "i")
    monkeypatch.setattr(run, "_run_qemu", lambda cmd, *a: cmds.append(cmd))
    monkeypatch.setattr(run.shutil, "which", lambda name: "/usr/bin/" + name)
    for v in ("nosplit", "default"):
        run.boot(run.BootSpec(arch="arm64", kernel="K", plan="plan", env={"LAB_VARIANT": v},
                              name="t", xfs_mb=0, swap_mb=0))
    assert [c[c.index("-M") + 1] for c in cmds] == ["virt,mte=on", "virt"]


def test_the_kernels_have_the_detectors_whose_reports_the_scan_reads():
    """A REPORTS pattern whose detector is not built can never fire: soft
    lockups, hung tasks and KFENCE in every lab kernel, list corruption in
    the debug kernels."""
    common = build.parse_fragment(config.CONFIGS / "common.config")
    for opt in ("CONFIG_KFENCE", "CONFIG_SOFTLOCKUP_DETECTOR", "CONFIG_DETECT_HUNG_TASK"):
        assert common.get(opt) == "y", opt
    debug = build.parse_fragment(config.CONFIGS / "debug.config")
    assert debug.get("CONFIG_DEBUG_LIST") == "y"
    patterns = " ".join(p.pattern for p in results.REPORTS)
    for line in ("KFENCE", "soft lockup", "blocked for more than", "list_(add|del) corruption"):
        assert line in patterns


def test_no_own_test_maps_at_a_fixed_hint():
    """The own tests run with address space randomisation (only the upstream
    programs go without, suites._lines): none of them may map at a literal
    address, which randomisation could take first."""
    hint = re.compile(r"mmap\(\s*\(void\s*\*\)\s*\(?\s*(0x[0-9a-fA-F]+|\d+)")
    for src in sorted((config.GUEST / "tests").glob("*.c")):
        assert not hint.search(src.read_text()), src.name
