# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of how 'lab test' runs its arches: side by side with
--jobs 2, one after the other with --jobs 1, a lab error as a row."""

import threading

import pytest

from lab.commands import test as testcmd
from lab.core import config, deps
from lab.core.tally import Tally
from lab.core.util import LabError
from lab.guest import suites
from lab.kernel import build, source


@pytest.fixture
def quiet(monkeypatch):
    monkeypatch.setattr(deps, "check", lambda: None)
    monkeypatch.setattr(source, "apply", lambda: None)
    monkeypatch.setattr(build, "build_ahead", lambda kernels: None)


def test_two_arches_run_side_by_side(quiet, monkeypatch):
    # each arch waits until the other one has started: only passes when
    # both are in flight at once (a serial run would time out the barrier)
    barrier = threading.Barrier(2, timeout=5)
    seen = []

    def fake(tally, arch_name, *args):
        barrier.wait()
        seen.append(arch_name)
        tally.add("pass", f"{arch_name}/x")

    monkeypatch.setattr(testcmd, "test_arch", fake)
    tally = Tally()
    testcmd.main(tally, ["x86_64", "arm64"], pytest=False, jobs=2)
    assert sorted(seen) == ["arm64", "x86_64"]
    assert tally.count("pass") == 2


def test_jobs_1_runs_the_arches_in_order(quiet, monkeypatch):
    active, order = [], []

    def fake(tally, arch_name, *args):
        active.append(arch_name)
        assert len(active) == 1, "two arches at once with --jobs 1"
        order.append(arch_name)
        active.remove(arch_name)

    monkeypatch.setattr(testcmd, "test_arch", fake)
    testcmd.main(Tally(), ["x86_64", "arm64"], pytest=False, jobs=1)
    assert order == ["x86_64", "arm64"]


def test_a_lab_error_in_one_arch_is_a_failed_row_and_the_other_arch_runs(quiet, monkeypatch):
    def fake(tally, arch_name, *args):
        if arch_name == "arm64":
            raise LabError("the arm64 kernel did not build\nmore text")
        tally.add("pass", f"{arch_name}/x")

    monkeypatch.setattr(testcmd, "test_arch", fake)
    tally = Tally()
    testcmd.main(tally, ["x86_64", "arm64"], pytest=False, jobs=2)
    assert ("fail", "arm64/default/lab", "the arm64 kernel did not build") in tally.rows
    assert ("pass", "x86_64/x", "") in tally.rows


class FakeBoot:
    console = "/tmp/console.log"

    def __init__(self, text):
        self._text = text

    def text(self):
        return self._text


MAX_CONSOLE = """[    0.056032] CPU features: detected: TLB range maintenance instructions
[    0.056074] CPU features: detected: Speculative Store Bypassing Safe (SSBS)
[    0.084470] CPU features: detected: Hardware dirty bit management on CPU0-1
"""


def test_cpu_features_pass_when_every_wanted_feature_is_detected():
    tally = Tally()
    testcmd.cpu_features(tally, "arm64/default/patched", FakeBoot(MAX_CONSOLE),
                         want=suites.CPU_FEATURES["arm64"])
    assert tally.count("pass") == 1 and tally.count("fail") == 0


def test_cpu_features_fail_names_what_is_missing():
    # the console of a kernel built without CONFIG_ARM64_HW_AFDBM
    text = MAX_CONSOLE.splitlines()[0] + "\n"
    tally = Tally()
    testcmd.cpu_features(tally, "arm64/default/patched", FakeBoot(text),
                         want=suites.CPU_FEATURES["arm64"])
    assert tally.count("fail") == 1
    assert "missing: Hardware dirty bit management" in str(tally.rows)


def test_cpu_features_fail_when_an_unwanted_feature_is_detected():
    # the cortex-a72 boot exists to run without range TLBI
    tally = Tally()
    testcmd.cpu_features(tally, "arm64/default/patched-cortex-a72",
                         FakeBoot(MAX_CONSOLE), unwanted=suites.CPU_FEATURES["arm64"][:1])
    assert tally.count("fail") == 1
    assert "detected: TLB range maintenance instructions" in str(tally.rows)
    tally = Tally()
    testcmd.cpu_features(tally, "arm64/default/patched-cortex-a72",
                         FakeBoot("CPU features: detected: CRC32 instructions\n"),
                         unwanted=suites.CPU_FEATURES["arm64"][:1])
    assert tally.count("pass") == 1


def test_cpu_features_fail_on_a_console_without_feature_lines():
    # nothing detected is not evidence that range TLBI is absent
    tally = Tally()
    testcmd.cpu_features(tally, "arm64/default/patched-cortex-a72",
                         FakeBoot("Booting Linux on physical CPU 0x0\n"),
                         unwanted=suites.CPU_FEATURES["arm64"][:1])
    assert tally.count("fail") == 1


def test_a_host_test_saves_results_under_its_temporary_work_only(quiet):
    """The conftest fixture work_in_tmp: a tally saved by a host test (as
    'lab test' saves its rows) lands in the test's own work directory,
    never in the real work/results, where it would read as a run."""
    real = config.REPO / "work" / "results"
    before = set(real.glob("test-*.json")) if real.exists() else set()
    tally = Tally()
    tally.add("pass", "x86_64/x")
    out = tally.save("test")
    after = set(real.glob("test-*.json")) if real.exists() else set()
    assert after == before
    assert out.parent == config.WORK / "results"
    assert config.REPO not in out.parents
