# SPDX-License-Identifier: GPL-2.0-only
"""The lab-config vs Debian-config table of results.md: a measurement on
Debian's own configs is set against the lab-config one of the same series
and workloads, and every figure comes from the two runs.json."""

import json
import shutil

from lab.core import config
from lab.outputs import configcompare, history

SOURCE = config.REPO / "docs" / "results" / "2026-11-29-1518-protnone"


def _pair(tmp_path):
    """A lab-config measurement and a copy of it marked as Debian-config,
    whose switch-on runs took half the time."""
    lab = tmp_path / "2026-01-01-0000-lab"
    deb = tmp_path / "2026-01-02-0000-debian"
    shutil.copytree(SOURCE, lab)
    shutil.copytree(SOURCE, deb)
    m = json.loads((deb / "manifest.json").read_text())
    m["variant"] = config.DEBIAN_VARIANT
    (deb / "manifest.json").write_text(json.dumps(m))
    runs = json.loads((deb / "runs.json").read_text())
    for r in runs:
        if r["mode"] == "on" and not r.get("probe"):
            r["total_ns"] //= 2
            if "time_ns" in r["metrics"]:
                r["metrics"]["time_ns"] //= 2
    (deb / "runs.json").write_text(json.dumps(runs))
    return lab, deb


def _section(lab, deb, refused=lambda d: []):
    return configcompare.section(deb, history.load(deb), history.entries(deb.parent),
                                 refused, history.load)


def test_debian_measurement_is_set_against_the_lab_one(tmp_path):
    lab, deb = _pair(tmp_path)
    text = _section(lab, deb)
    assert lab.name in text
    rows = [line for line in text.splitlines() if line.startswith("| x86_64 ")
            or line.startswith("| arm64 ")]
    # mprotect-none-64k and mprotect-64k, one mode each, both arches
    assert len(rows) == 4
    # the Debian side's switch-on time is half: the change moved
    assert all("points" in r and "+0.0 points" not in r for r in rows)


def test_a_lab_measurement_gets_no_comparison(tmp_path):
    lab, deb = _pair(tmp_path)
    assert configcompare.section(lab, history.load(lab), history.entries(tmp_path),
                                 lambda d: [], history.load) == ""


def test_no_counterpart_measured_at_another_scale(tmp_path):
    lab, deb = _pair(tmp_path)
    runs = json.loads((lab / "runs.json").read_text())
    assert lab.name in _section(lab, deb)
    for r in runs:
        if r["workload"] == "mprotect-64k":
            r["scale"] = "32 MB, 20 rounds"
    (lab / "runs.json").write_text(json.dumps(runs))
    assert "No stored measurement" in _section(lab, deb)


def test_no_counterpart_of_another_series_refused_or_lacking_a_workload(tmp_path):
    lab, deb = _pair(tmp_path)
    # refused
    assert "No stored measurement" in _section(lab, deb, refused=lambda d: ["x"])
    # another patches tree
    m = json.loads((lab / "manifest.json").read_text())
    tree = m["patches_tree"]
    m["patches_tree"] = "0" * 40
    (lab / "manifest.json").write_text(json.dumps(m))
    assert "No stored measurement" in _section(lab, deb)
    m["patches_tree"] = tree
    (lab / "manifest.json").write_text(json.dumps(m))
    assert lab.name in _section(lab, deb)
    # a workload the lab measurement lacks
    runs = [r for r in json.loads((lab / "runs.json").read_text())
            if r["workload"] != "mprotect-64k"]
    (lab / "runs.json").write_text(json.dumps(runs))
    assert "No stored measurement" in _section(lab, deb)
