# SPDX-License-Identifier: GPL-2.0-only
"""Host tests: bad input gets one clear error before any work, a usage
error and a lab error exit with different codes, and the lab says what it
has (--list) and what it is (--version)."""

import json
import subprocess

import pytest

from lab import cli
from lab.commands import test as testcmd
from lab.core import config, deps
from lab.guest import suites, workloads
from lab.kernel import build, source

LAB = str(config.REPO / "bin" / "lab")


class Reached(Exception):
    """A step that bad input must never reach."""


def _unreachable(name):
    def fn(*a, **kw):
        raise Reached(name)
    return fn


def _one_error_line(err):
    """stderr of a LabError: exactly one line, 'lab: error: ...'."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lab: error: "), err
    assert "Traceback" not in err
    return lines[0]


# A usage error (argparse) and a lab error exit with different codes, and
# docs/lab.md documents both.
def test_usage_and_lab_errors_exit_differently():
    assert cli.USAGE_ERROR == 2 and cli.LAB_ERROR not in (0, 1, 2, 130)
    usage = subprocess.run([LAB, "bench", "--no-such-option"], capture_output=True,
                           text=True)
    lab = subprocess.run([LAB, "report"], capture_output=True, text=True)
    assert usage.returncode == cli.USAGE_ERROR, usage.stderr
    assert lab.returncode == cli.LAB_ERROR, lab.stderr
    assert _one_error_line(lab.stderr).startswith("lab: error: lab report: give")
    doc = (config.REPO / "docs" / "lab.md").read_text()
    status = doc[doc.index("## Exit status"):]
    for code in (cli.USAGE_ERROR, cli.LAB_ERROR):
        assert f"| {code} |" in status


def _git(*args):
    return subprocess.run(["git", "-C", str(config.REPO), *args], capture_output=True,
                          text=True, check=True).stdout.strip()


# lab --version prints the lab's commit (+changes when the tree differs)
# and the tree id of patches/.
def test_version_prints_the_commit_and_the_patches_tree():
    dirty = bool(_git("status", "--porcelain", "--untracked-files=normal"))
    p = subprocess.run([LAB, "--version"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    commit = _git("rev-parse", "--short=7", "HEAD") + ("+changes" if dirty else "")
    assert p.stdout == f"lab {commit}\npatches_tree {_git('rev-parse', 'HEAD:patches')}\n"


# lab report DIR: a runs.json (or boots.json) that is missing, empty or
# corrupt is one 'lab: error:' line naming it, no traceback.
@pytest.mark.parametrize("name, text", [
    ("runs.json", None), ("runs.json", ""), ("runs.json", "  \n"), ("runs.json", "[{"),
    ("runs.json", "{}"), ("runs.json", "[1, 2]"), ("runs.json", '[{"workload": "x"}]'),
    ("boots.json", ""), ("boots.json", "[{]"), ("boots.json", '[{"name": "b"}]'),
])
def test_lab_report_of_a_bad_directory_is_one_error_line(tmp_path, capsys, name, text):
    from test_bench import rec
    runs = [rec("mremap-4k", m, 0, 1000, flavour=f)
            for m, f in (("off", "patched"), ("on", "patched"), ("stock", "stock"))]
    if name != "runs.json":
        (tmp_path / "runs.json").write_text(json.dumps(runs))
    if text is not None:
        (tmp_path / name).write_text(text)
    assert cli.main(["report", str(tmp_path)]) == cli.LAB_ERROR
    assert name in _one_error_line(capsys.readouterr().err)


# The whole path: ./bin/lab itself, on an empty runs.json.
def test_lab_report_of_an_empty_runs_json_exits_with_one_line(tmp_path):
    (tmp_path / "runs.json").write_text("")
    p = subprocess.run([LAB, "report", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == cli.LAB_ERROR, p.stderr
    assert "runs.json is empty" in _one_error_line(p.stderr)


INFO = '{"commit": "a", "time": "1m"}'


# lab report --tests FILE names FILE when it is missing, not JSON, not
# rows, or has no .info beside it; nothing is written.
@pytest.mark.parametrize("rows, info", [
    (None, None), ("[{", INFO), ("{}", INFO), ("[1]", INFO),
    ("[]", None), ("[]", "{"), ("[]", "{}"),
])
def test_lab_report_tests_names_the_file_given(tmp_path, monkeypatch, capsys, rows, info):
    monkeypatch.setattr(config, "REPO", tmp_path / "repo")     # nothing written there
    f = tmp_path / "test-20260101-000000.json"
    if rows is not None:
        f.write_text(rows)
    if info is not None:
        f.with_suffix(".info").write_text(info)
    assert cli.main(["report", "--tests", str(f)]) == cli.LAB_ERROR
    assert str(f) in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "repo").exists()


# lab test --only with a name that is no test program stops before the
# dependencies are checked, the source fetched or a kernel built, and names
# it; known names (own tests and upstream selftests) go through.
def test_an_unknown_only_name_stops_before_any_work(monkeypatch, capsys):
    monkeypatch.setattr(testcmd, "main", _unreachable("lab test's suites"))
    monkeypatch.setattr(deps, "check", _unreachable("deps.check"))
    monkeypatch.setattr(source, "apply", _unreachable("source.apply"))
    monkeypatch.setattr(build, "build_ahead", _unreachable("build.build_ahead"))
    assert cli.main(["test", "--only", "sanity,no_such_prog,cow"]) == cli.LAB_ERROR
    line = _one_error_line(capsys.readouterr().err)
    assert "no_such_prog" in line and "sanity," not in line.split("known")[0]
    assert cli.main(["test", "--only", ","]) == cli.LAB_ERROR
    got = []
    monkeypatch.setattr(testcmd, "main", lambda tally, *a, **kw: got.append(kw["only"]))
    cli.main(["test", "--only", "sanity,cow,soft-dirty"])   # a run of no rows fails
    assert got == [{"sanity", "cow", "soft-dirty"}]


# lab test --list names every program --only may name, own tests first.
def test_test_list_names_the_test_programs(capsys):
    assert cli.main(["test", "--list"]) == 0
    names = [line.split(":")[0] for line in capsys.readouterr().out.splitlines()]
    assert names == suites.own_tests() + list(suites.SELFTEST_ARGS)


# --repeats and --min-repeats below 1 are usage errors (argparse, exit 2).
@pytest.mark.parametrize("option", ["--repeats", "--min-repeats"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_repeats_below_one_are_refused(option, value, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parser().parse_args(["bench", option, value])
    assert e.value.code == cli.USAGE_ERROR
    assert option in capsys.readouterr().err
    assert getattr(cli.parser().parse_args(["bench", option, "1"]),
                   option[2:].replace("-", "_")) == 1


# lab bench checks the host's dependencies before it fetches or builds.
def test_lab_bench_checks_host_dependencies_first(monkeypatch, capsys):
    from lab.core.util import LabError

    def missing():
        raise LabError("host dependencies are missing; 'lab deps --install' fixes this")

    monkeypatch.setattr(deps, "check", missing)
    monkeypatch.setattr(source, "apply", _unreachable("source.apply"))
    monkeypatch.setattr(build, "build_ahead", _unreachable("build.build_ahead"))
    assert cli.main(["bench", "-a", "x86_64", "-w", "mremap-4k"]) == cli.LAB_ERROR
    assert "host dependencies are missing" in _one_error_line(capsys.readouterr().err)


# lab bench --list names every workload with its modes.
def test_bench_list_names_the_workloads(capsys):
    assert cli.main(["bench", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(f"{w.name}: modes {', '.join(w.modes)}" in out
               for w in workloads.WORKLOADS)
