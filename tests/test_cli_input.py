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
