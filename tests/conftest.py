# SPDX-License-Identifier: GPL-2.0-only
"""Fixtures every host test gets."""
import pytest

from lab.core import config, util


@pytest.fixture(autouse=True)
def lab_may_start_children():
    """util.stop_children() (which cli.main() runs on its way out) makes
    util.spawn() refuse for the rest of the process; a test that ran a
    command in this process must not leave the next test unable to run
    one."""
    yield
    util._stopping.clear()


@pytest.fixture(autouse=True)
def work_in_tmp(tmp_path_factory, monkeypatch):
    """Every host test gets a work directory of its own under pytest's
    temporary directory, in the lab's config and in the environment its
    child processes read: results, logs and stamps a test writes never
    land in the real work/ (a fake test-*.json there would read as a run
    of 'lab test')."""
    work = tmp_path_factory.mktemp("work")
    monkeypatch.setattr(config, "WORK", work)
    monkeypatch.setenv("FOLIOBATCH_WORK", str(work))
    return work


@pytest.fixture(autouse=True)
def check_records_in_tmp(tmp_path_factory, monkeypatch):
    """The verdicts 'lab check --record' keeps go to a directory of the
    test's own, never to the repository's docs/results/check/."""
    records = tmp_path_factory.mktemp("check-records")
    monkeypatch.setattr(config, "CHECK_RECORDS", records)
    return records
