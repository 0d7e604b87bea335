# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of build.build_ahead(): kernels built in a background
thread, in order, and handed to build() with their image or their error."""

import threading

import pytest

from lab.core.util import LabError
from lab.kernel import build


@pytest.fixture
def fake_build(monkeypatch):
    calls = []
    gate = threading.Event()

    def fake(arch_name, variant, flavour, jobs=None, nice=0):
        gate.wait(5)
        calls.append((arch_name, variant, flavour, nice))
        if flavour == "broken":
            raise LabError("build of broken failed")
        return f"/img/{arch_name}-{variant}-{flavour}"

    monkeypatch.setattr(build, "_build", fake)
    monkeypatch.setattr(build, "_ahead", {})
    return calls, gate


def test_build_waits_for_the_kernel_built_ahead(fake_build):
    calls, gate = fake_build
    build.build_ahead([("x86_64", "default", "stock"), ("arm64", "debug", "patched")])
    gate.set()
    assert build.build("arm64", "debug", "patched") == "/img/arm64-debug-patched"
    assert build.build("x86_64", "default", "stock") == "/img/x86_64-default-stock"
    # in the given order, at the lower priority
    assert calls == [("x86_64", "default", "stock", build.AHEAD_NICE),
                     ("arm64", "debug", "patched", build.AHEAD_NICE)]


def test_an_error_reaches_the_caller_and_later_kernels_still_build(fake_build):
    calls, gate = fake_build
    build.build_ahead([("x86_64", "default", "broken"), ("arm64", "default", "stock")])
    gate.set()
    with pytest.raises(LabError, match="broken failed"):
        build.build("x86_64", "default", "broken")
    assert build.build("arm64", "default", "stock") == "/img/arm64-default-stock"


def test_a_second_build_call_builds_again_in_the_foreground(fake_build):
    calls, gate = fake_build
    gate.set()
    build.build_ahead([("arm64", "default", "stock")])
    build.build("arm64", "default", "stock")
    build.build("arm64", "default", "stock")
    assert [c[3] for c in calls] == [build.AHEAD_NICE, 0]
