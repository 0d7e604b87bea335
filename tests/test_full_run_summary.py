# SPDX-License-Identifier: GPL-2.0-only
"""The README's test summary comes from a full run that passed only: 'lab
test' records its exit status and what it left out beside its rows, and
'lab report --tests' refuses a partial or failed run, saying why, with
one 'lab: error:' line that names the file."""

import json

import pytest

from lab import cli
from lab.commands import check, codegen, harden, testrun
from lab.commands import test as testcmd
from lab.core import config, tally
from lab.kernel import build, export
from lab.outputs import testsummary


@pytest.fixture
def lab_test(monkeypatch, tmp_path):
    """testrun.run() with every step that builds or boots stubbed out, its
    suites making the rows given; returns a function that runs it and
    returns (exit status, rows file).  The README and docs/results/ are a
    copy under tmp_path.  (testcmd.main(), stubbed, is what runs pytest.)"""
    repo = tmp_path / "repo"
    (repo / "docs" / "results").mkdir(parents=True)
    (repo / "README.md").write_text(f"x\n{testsummary.BEGIN}\nold\n{testsummary.END}\ny\n")
    monkeypatch.setattr(config, "REPO", repo)
    monkeypatch.setattr(tally, "repo_commit", lambda: "abc1234")
    monkeypatch.setattr(build, "build", lambda *a, **kw: None)
    monkeypatch.setattr(check, "ci_form", lambda t, use_cache=True: None)
    monkeypatch.setattr(export, "test_row", lambda t: None)
    monkeypatch.setattr(testcmd, "nosplit_check", lambda t, a, v: None)
    monkeypatch.setattr(harden, "short_form", lambda t, arches: None)
    monkeypatch.setattr(codegen, "tally_claims", lambda t, arches: None)

    def run(rows=(("pass", "x86_64/default/patched/sanity/global.boot_release"),),
            **kw):
        def main(t, *a, **k):
            for status, name in rows:
                t.add(status, name)
        monkeypatch.setattr(testcmd, "main", main)
        status = testrun.run(kw.pop("arches", list(config.ARCHES)), **kw)
        saved = sorted((config.WORK / "results").glob("test-*.json"))
        (saved[-1].parent / "keep").mkdir(exist_ok=True)
        out = saved[-1].rename(saved[-1].parent / "keep" / saved[-1].name)
        tally.info_path(saved[-1]).rename(tally.info_path(out))
        return status, out
    return run


def _refused(capsys, f):
    """'lab report --tests f' ends with one 'lab: error:' line naming f,
    and writes nothing; return that line."""
    readme = config.REPO / "README.md"
    before = readme.read_text()
    assert cli.main(["report", "--tests", str(f)]) == cli.LAB_ERROR
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lab: error: " + str(f)), lines
    assert readme.read_text() == before
    assert not (config.REPO / "docs" / "results" / "test-summary.json").exists()
    return lines[0]


def test_a_run_records_its_exit_status_and_what_it_left_out(lab_test):
    status, f = lab_test(only={"sanity", "cow"}, variant="default")
    info = json.loads(tally.info_path(f).read_text())
    assert status == info["exit"] == 0
    assert info["full"] is False and info["partial"] == ["--only cow,sanity"]
    status, f = lab_test(arches=["arm64"], pytest=False, upstream=False, harden_too=False,
                         rows=[("fail", "arm64/default/patched/sanity/global.x")])
    info = json.loads(tally.info_path(f).read_text())
    assert status == info["exit"] == 1
    assert info["partial"] == ["-a arm64 (not x86_64)", "--no-pytest", "--no-upstream",
                               "--no-harden"]
    assert testrun.left_out(list(config.ARCHES)) == []
    assert testrun.left_out(list(config.ARCHES), variant="debug", check_too=False,
                            own=False) == ["-v debug", "--no-own", "--no-check"]


def test_the_summary_is_made_from_a_full_run_that_passed(lab_test):
    status, f = lab_test()
    assert status == 0 and json.loads(tally.info_path(f).read_text())["full"] is True
    assert cli.main(["report", "--tests", str(f)]) == 0
    s = json.loads((config.REPO / "docs/results/test-summary.json").read_text())
    assert (s["commit"], s["passed"], s["failed"]) == ("abc1234", 1, 0)
    assert "ccache_files" in s["start"] and s["start"]["kernels_built"] == []
    kept = list((config.REPO / "docs/results/tests").glob("*-abc1234.json"))
    assert [json.loads(k.read_text()) for k in kept] == [s]
    assert "**1 passed, 0 failed**" in (config.REPO / "README.md").read_text()


def test_a_partial_run_is_refused(lab_test, capsys):
    status, f = lab_test(only={"sanity"})
    assert status == 0
    line = _refused(capsys, f)
    assert "a partial run (--only sanity)" in line


def test_a_failed_run_is_refused(lab_test, capsys):
    status, f = lab_test(rows=[("pass", "x86_64/default/patched/a"),
                               ("fail", "x86_64/default/patched/b")])
    assert status == 1
    assert "the run failed (exit 1, 1 failed rows)" in _refused(capsys, f)


def test_a_failed_row_under_a_record_of_exit_0_is_refused(lab_test, capsys):
    status, f = lab_test()
    rows = json.loads(f.read_text())
    f.write_text(json.dumps(rows + [{"status": "fail", "name": "planted", "detail": ""}]))
    assert "the run failed (exit 0, 1 failed rows)" in _refused(capsys, f)


@pytest.mark.parametrize("info", [
    {"commit": "a", "time": "1m"},                                  # an older lab's
    {"commit": "a", "time": "1m", "exit": 0},                       # harden's, check's
    {"commit": "a", "time": "1m", "exit": 0, "full": True, "partial": ["-v debug"]},
    {"commit": "a", "time": "1m", "exit": 0, "full": "yes", "partial": []},
])
def test_a_run_whose_record_does_not_say_full_and_passed_is_refused(tmp_path, capsys,
                                                                     monkeypatch, info):
    monkeypatch.setattr(config, "REPO", tmp_path / "repo")     # nothing written there
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "README.md").write_text("")
    f = tmp_path / "test-20260101-000000.json"
    f.write_text(json.dumps([{"status": "pass", "name": "a", "detail": ""}]))
    tally.info_path(f).write_text(json.dumps(info))
    _refused(capsys, f)


def test_a_full_run_checks_the_code_claims_and_fails_on_one(lab_test, monkeypatch):
    """The claims of 6.12's code (lab codegen) are rows of a run of the
    default kernels; a claim that does not hold, or a check that raised,
    ends the run 1.  A run of --only or of another variant leaves them out."""
    calls = []

    def claims(t, arches, rows=(("pass", "x86_64/default/codegen/mm/a.o:f"),)):
        calls.append(list(arches))
        for status, name in rows:
            t.add(status, name)
    monkeypatch.setattr(codegen, "tally_claims", claims)
    assert lab_test()[0] == 0 and calls == [list(config.ARCHES)]
    monkeypatch.setattr(codegen, "tally_claims", lambda t, arches: claims(
        t, arches, (("fail", "x86_64/default/codegen/mm/a.o:f"),)))
    assert lab_test()[0] == 1

    def raises(t, arches):
        raise FileNotFoundError("objdump")
    monkeypatch.setattr(codegen, "tally_claims", raises)
    status, f = lab_test()
    assert status == 1
    assert {"status": "fail", "name": "codegen/lab",
            "detail": "FileNotFoundError: objdump"} in json.loads(f.read_text())
    calls.clear()
    monkeypatch.setattr(codegen, "tally_claims", claims)
    lab_test(only={"sanity"})
    lab_test(variant="debug")
    assert calls == []
