# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of 'lab lava': the jobs are valid for LAVA's own job
schema (Debian's lava-common) and read the plan's KTAP lines."""

import re

import pytest

from lab.core.util import LabError
from lab.outputs import lava


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_qemu_job_is_valid_lava(arch):
    job = lava.qemu_job(arch, "patched", "http://lab/k", "http://lab/i.cpio",
                        {"xfs": "http://lab/xfs.img", "swap": "http://lab/swap.img"})
    lava.validate(job)
    images = job["actions"][0]["deploy"]["images"]
    assert "serial=labxfs" in images["xfs"]["image_arg"]
    assert "{swap}" in images["swap"]["image_arg"]
    assert job["context"]["arch"] == {"x86_64": "amd64", "arm64": "arm64"}[arch]
    kernel = job["actions"][0]["deploy"]["images"]["kernel"]
    assert "console=" in kernel["image_arg"] and kernel["url"] == "http://lab/k"


def test_board_job_is_valid_lava():
    job = lava.board_job("patched", "http://lab/Image", "http://lab/i.cpio",
                         "http://lab/b.dtb")
    lava.validate(job)
    assert job["device_type"] == lava.BOARD
    assert job["actions"][1]["boot"]["method"] == "u-boot"


def test_an_invalid_job_is_refused():
    job = lava.qemu_job("x86_64", "stock", "http://lab/k", "http://lab/i.cpio")
    del job["actions"][0]["deploy"]["images"]["kernel"]["url"]
    with pytest.raises(LabError, match="not valid"):
        lava.validate(job)


def test_the_monitor_reads_the_plans_ktap_lines():
    job = lava.qemu_job("arm64", "patched", "http://lab/k", "http://lab/i.cpio")
    mon = job["actions"][2]["test"]["monitors"][0]
    pat = re.compile(mon["pattern"])
    m = pat.search("not ok 3 reclaim_batch # exit 1")
    assert m and m["result"] == "not ok" and m["test_case_id"] == "reclaim_batch"
    assert mon["fixupdict"][pat.search("ok 1 sanity")["result"]] == "pass"
    # the boot ends before the plan starts, so that the monitor sees it
    assert job["actions"][1]["boot"]["prompts"] == [lava.BANNER]
    assert (mon["start"], mon["end"]) == ("LAB-READY", "LAB-EXIT")


def test_lava_run_log_gives_the_job_result_and_the_monitor_cases():
    from lab.commands import lavarun
    log = "\n".join([
        '{"dt": "t", "lvl": "target", "msg": "ok 1 sanity"}',
        '{"dt": "t", "lvl": "results", "msg": {"case": "sanity", "definition": '
        '"foliobatch-patched", "extra": {"test_case_id": "sanity"}, "result": "pass"}}',
        '{"dt": "t", "lvl": "results", "msg": {"case": "x_y", "definition": '
        '"foliobatch-patched", "extra": {"test_case_id": "x.y"}, "result": "fail"}}',
        '{"dt": "t", "lvl": "results", "msg": {"case": "lava-test-monitor", '
        '"definition": "lava", "result": "pass"}}',
        'not json', '7',
        '{"dt": "t", "lvl": "results", "msg": {"case": "job", "definition": "lava", '
        '"result": "fail"}}'])
    assert lavarun.parse(log, "patched") == ("fail", {"sanity": "pass", "x.y": "fail"})
    assert lavarun.parse(log, "stock") == ("fail", {})


def test_x86_job_without_kvm_runs_under_tcg_with_the_lab_machine():
    job = lava.qemu_job("x86_64", "patched", "file:///k", "file:///i", kvm=False)
    ctx = job["context"]
    assert ctx["no_kvm"] is True
    assert ctx["extra_options"] == ["-machine q35", "-smp 2", "-cpu max"]
    assert "no_kvm" not in lava.qemu_job("x86_64", "patched", "u", "i")["context"]
    assert lava.QEMU_CONTEXT["x86_64"]["extra_options"] == ["-machine q35", "-smp 2"]
    lava.validate(job)
