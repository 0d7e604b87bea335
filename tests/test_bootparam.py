# SPDX-License-Identifier: GPL-2.0-only
"""The expected switch values the lab passes to the boot-parameter test
(LAB_EXPECT_SWITCHES, checked by guest/tests/switches.c boot_values)."""

import re

import pytest

from lab.core import config
from lab.guest import suites

def defaults(arch_name):
    return ",".join(f"{s}={v}" for s, v in config.SWITCH_DEFAULTS[arch_name].items())


def exported(plan, uname="x86_64"):
    """The values of every LAB_EXPECT_SWITCHES export in a plan for a guest
    whose uname -m is uname."""
    return re.findall(rf"^{uname}\) export LAB_EXPECT_SWITCHES=(\S*) ;;$", plan, re.M)


def test_boot_param_sets_two_switches_off_and_ignores_the_rest():
    # no_such_switch=1 is unknown, mremap_batch=2 is no boolean: both ignored
    assert suites.expected_switches(suites.BOOT_PARAM, "x86_64") == (
        "pt_reclaim=0,mremap_batch=1,referenced_batch=1,unmap_batch=0,"
        "mglru_young_batch=1,reclaim_tlb_batch=0,mprotect_batch=1,mbind_batch=1,"
        "anon_unmap_batch=0")
    # arm64 also shows its contiguous-PTE switches
    assert suites.expected_switches(suites.BOOT_PARAM, "arm64") == (
        "pt_reclaim=0,mremap_batch=1,referenced_batch=1,unmap_batch=0,"
        "mglru_young_batch=1,reclaim_tlb_batch=0,mprotect_batch=1,"
        "contpte_early_exit=1,mincore_batch=1,mbind_batch=1,anon_unmap_batch=0")


def test_the_boot_param_plan_exports_what_boot_param_sets_once():
    plan = suites.boot_param_plan()
    assert exported(plan) == [suites.expected_switches(suites.BOOT_PARAM, "x86_64")]
    assert "lab_run switches " in plan
    # the export comes before the program that reads it
    assert plan.index("export LAB_EXPECT_SWITCHES") < plan.index("lab_run switches")


def test_a_changed_boot_param_changes_the_expected_values(monkeypatch):
    before = exported(suites.boot_param_plan())
    monkeypatch.setattr(suites, "BOOT_PARAM", "foliobatch=all=0,reclaim_tlb_batch=on")
    after = exported(suites.boot_param_plan())
    assert after != before
    assert after == ["pt_reclaim=0,mremap_batch=0,referenced_batch=0,unmap_batch=0,"
                     "mglru_young_batch=0,reclaim_tlb_batch=1,mprotect_batch=0,"
                     "mbind_batch=0,anon_unmap_batch=0"]


def test_the_test_plan_expects_the_defaults():
    for uname, arch_name in config.UNAME_ARCH.items():
        for plan_arch in ("x86_64", "arm64"):
            plan = suites.test_plan(plan_arch)
            assert exported(plan, uname) == [defaults(arch_name)]
            plan = suites.test_plan(plan_arch, only={"switches"})
            assert exported(plan, uname) == [defaults(arch_name)]


@pytest.mark.parametrize("arch_name, count", [("x86_64", 9), ("arm64", 11)])
def test_every_shown_switch_is_named_once_in_config_order(arch_name, count):
    names = [item.split("=")[0] for item in suites.expected_switches("", arch_name).split(",")]
    assert names == [s for s in config.SWITCHES
                     if s not in config.HIDDEN_SWITCHES[arch_name]]
    assert len(set(names)) == count


@pytest.mark.parametrize("cmdline, changed", [
    ("", {}),
    ("console=ttyS0 quiet", {}),
    # later items and later arguments win
    ("foliobatch=pt_reclaim=0,pt_reclaim=1", {}),
    ("foliobatch=pt_reclaim=0 foliobatch=pt_reclaim=1", {}),
    ("foliobatch=all=0,mremap_batch=1",
     {s: 0 for s in config.SWITCHES if s != "mremap_batch"}),
    # what kstrtobool() accepts: first character, or 'o' and the next
    ("foliobatch=pt_reclaim=n,unmap_batch=off,mremap_batch=No",
     {"pt_reclaim": 0, "unmap_batch": 0, "mremap_batch": 0}),
    ("foliobatch=all=0,pt_reclaim=y,unmap_batch=on,mremap_batch=1x,"
     "referenced_batch=True",
     {s: 0 for s in config.SWITCHES
      if s not in ("pt_reclaim", "unmap_batch", "mremap_batch", "referenced_batch")}),
    # and what it rejects, with unknown names and items without '='
    ("foliobatch=pt_reclaim=2,unmap_batch=,mremap_batch=o,referenced_batch=ox,"
     "reclaim_tlb_batch=-1,nope=0,all,=0,ALL=0,Pt_reclaim=0", {}),
    # arguments after "--" are init's
    ("quiet -- foliobatch=all=0", {}),
    # quotes are dropped, a longer parameter name is another parameter
    ('foliobatch="pt_reclaim=0" foliobatchx=unmap_batch=0', {"pt_reclaim": 0}),
])
@pytest.mark.parametrize("arch_name", ["x86_64", "arm64"])
def test_expected_switches_follow_the_kernels_parser(cmdline, changed, arch_name):
    default = config.SWITCH_DEFAULTS[arch_name]
    want = {s: changed.get(s, default[s]) for s in default}
    assert suites.expected_switches(cmdline, arch_name) == ",".join(
        f"{s}={v}" for s, v in want.items())


def test_a_guest_of_another_arch_gets_no_expected_values():
    # the switches test then fails on the unset variable
    plan = suites.test_plan("x86_64")
    assert exported(plan, "riscv64") == []
    assert plan.count("export LAB_EXPECT_SWITCHES=") == len(config.UNAME_ARCH)
