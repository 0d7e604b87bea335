# SPDX-License-Identifier: GPL-2.0-only
"""Host tests: a bench directory records how its runs were made
(manifest.json), and 'lab report DIR' and 'lab report --history' refuse
one whose bench failed or did not end, whose runs.json (or boots.json) no
longer matches the sha256 its manifest records, or whose runs.json and
boots.json disagree on run counts.  A directory stored before manifests
has none: the count check applies, and it is marked as not sha-checked."""

import hashlib
import json
import re
import shutil
import subprocess

import pytest

from lab.cli import main as lab_main
from lab.commands import reportdir
from lab.core import config
from lab.core.util import LabError
from lab.outputs import headline, history, manifest
from test_bench_state import bench_lines, mremap4k
from test_bench_verdict import _bench
from scratchrepo import report_repo

RESULTS = config.REPO / "docs" / "results"
STORED = "2026-11-27-1524-mprotect-numa-quick"
PRUNED = "2026-11-26-0003-full-arm64"


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _clean_bench(tmp_path, monkeypatch):
    """A bench of mremap-4k on x86_64 whose runs all arrived, with a built
    .config of each kernel: (exit status, its directory)."""
    for fl in config.FLAVOURS:
        d = tmp_path / "src" / fl / "out-x86_64-default"
        d.mkdir(parents=True)
        (d / ".config").write_text(f"CONFIG_{fl.upper()}=y\n")
    rc, out, _ = _bench(tmp_path, monkeypatch,
                        bench_lines(mremap4k("off", 0), mremap4k("on", 0)))
    return rc, out


def test_a_bench_records_how_its_runs_were_made(tmp_path, monkeypatch):
    rc, out = _clean_bench(tmp_path, monkeypatch)
    assert rc == 0
    m = json.loads((out / manifest.NAME).read_text())
    git = ["git", "-C", str(config.REPO), "rev-parse"]
    head = subprocess.run(git + ["HEAD"], capture_output=True, text=True).stdout.strip()
    assert re.fullmatch(re.escape(head) + r"(\+changes)?", m["lab_commit"]), m["lab_commit"]
    assert m["patches_tree"] == subprocess.run(git + ["HEAD:patches"], capture_output=True,
                                               text=True).stdout.strip()
    for fl in config.FLAVOURS:
        f = tmp_path / "src" / fl / "out-x86_64-default" / ".config"
        assert m["kernels"][f"x86_64/{fl}"] == {"config": str(f), "sha256": _sha(f)}
    assert set(m["tools"]["x86_64"]) == {"gcc", "ld", "qemu"}
    assert m["exit_status"] == 0
    assert m["sha256"] == {"runs.json": _sha(out / "runs.json"),
                           "boots.json": _sha(out / "boots.json")}
    # 'lab report DIR' takes it, and the report says what it was checked against
    reportdir.report_dir(out)
    assert f"{manifest.NAME}: lab {m['lab_commit']}" in (out / "report.md").read_text()


def _refused(capsys, d, *words):
    """'lab report DIR' refuses d: exit 3, one 'lab: error:' line naming d
    and saying why (words)."""
    capsys.readouterr()
    assert lab_main(["report", str(d)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"lab: error: {d}: refused: "), err
    for w in words:
        assert w in err[0], err[0]


def test_a_failed_bench_is_refused(tmp_path, monkeypatch, capsys):
    rc, out, _ = _bench(tmp_path, monkeypatch,
                        bench_lines(mremap4k("off", 0), mremap4k("on", 0, exit=3)))
    assert rc == 1
    assert json.loads((out / manifest.NAME).read_text())["exit_status"] == 1
    _refused(capsys, out, "its bench failed (exit status 1)")


def test_a_bench_that_did_not_end_is_refused(tmp_path, monkeypatch, capsys):
    rc, out = _clean_bench(tmp_path, monkeypatch)
    m = json.loads((out / manifest.NAME).read_text())
    m["exit_status"] = None           # as the bench leaves it until it ends
    (out / manifest.NAME).write_text(json.dumps(m))
    _refused(capsys, out, "its bench did not end")


@pytest.mark.parametrize("name", ["runs.json", "boots.json"])
def test_a_file_changed_after_the_bench_is_refused(tmp_path, monkeypatch, capsys, name):
    rc, out = _clean_bench(tmp_path, monkeypatch)
    records = json.loads((out / name).read_text())
    if name == "runs.json":
        records[0]["metrics"]["time_ns"] -= 1          # one figure touched up
    else:
        records[0]["first_report"] = "edited"
    (out / name).write_text(json.dumps(records, indent=1))
    _refused(capsys, out, f"{name} does not match the sha256 {manifest.NAME} records")


# A stored directory without a manifest (stored before benches wrote one)
# whose runs.json was pruned by hand: boots.json still counts the runs.
def test_runs_pruned_from_a_stored_measurement_are_refused(tmp_path, capsys):
    d = tmp_path / STORED
    shutil.copytree(RESULTS / STORED, d)
    runs = json.loads((d / "runs.json").read_text())
    gone = next(r for r in runs if r["arch"] == "arm64" and r["flavour"] == "stock")
    runs.remove(gone)
    (d / "runs.json").write_text(json.dumps(runs, indent=1))
    boot = next(b for b in json.loads((d / "boots.json").read_text())
                if b["console"] == gone["console"])
    _refused(capsys, d, "runs.json and boots.json disagree on run counts",
             f"boots.json says {boot['runs']} runs kept of {boot['name']}, runs.json "
             f"holds {boot['runs'] - 1}")
    # the measurement that was pruned by hand is refused for that reason
    why = "; ".join(history.refusal(RESULTS / PRUNED))
    assert "boots.json says 104 runs kept of arm64-bench-patched-r0, runs.json holds 96" \
        in why and "says 40 runs kept of arm64-bench-stock-r0, runs.json holds 36" in why


# A directory stored before manifests is not passed as checked: the report,
# results.md and the README's headline say it has none.
def test_a_measurement_without_a_manifest_is_marked(tmp_path):
    d = tmp_path / STORED
    shutil.copytree(RESULTS / STORED, d)
    assert not (d / manifest.NAME).exists()
    reportdir.report_dir(d)
    assert f"No {manifest.NAME}: stored before benches recorded one" in \
        (d / "report.md").read_text()
    assert f"No {manifest.NAME}: stored before" in history.section(d)
    (tmp_path / headline.DECLARATIONS).write_text(
        f'[[series]]\nname = "s"\nswitch = "x"\n  [[series.figure]]\n  arch = "arm64"\n'
        f'  results = "{STORED}"\n  workload = "mprotect-numa"\n')
    row = next(line for line in headline.readme_block(tmp_path).splitlines()
               if "| mprotect-numa:" in line)
    assert "/report.md) (no manifest) |" in row


def _repo(tmp_path, monkeypatch, headline_toml):
    """scratchrepo.report_repo() with headline_toml, as config.REPO of 'lab
    report --history'."""
    results = report_repo(tmp_path)
    (tmp_path / "docs" / "results.md").write_text("old\n")
    (results / headline.DECLARATIONS).write_text(headline_toml)
    monkeypatch.setattr(reportdir.config, "REPO", tmp_path)
    return results


def _prune(d):
    runs = json.loads((d / "runs.json").read_text())
    (d / "runs.json").write_text(json.dumps(runs[1:]))


FIGURES = """[[series]]
name = "s"
switch = "x"
  [[series.figure]]
  arch = "arm64"
  results = "2026-11-27-1524-mprotect-numa-quick"
  workload = "mprotect-numa"

  [[series.figure]]
  arch = "arm64"
  results = "2026-11-28-0536-read-side-quick"
  workload = "read-mlock"
"""


# 'lab report --history' stops before writing anything when the headline
# takes figures from refused measurements, and names every refused one.
def test_lab_report_history_names_every_refused_directory(tmp_path, monkeypatch):
    results = _repo(tmp_path, monkeypatch, FIGURES)
    for name in (STORED, "2026-11-28-0536-read-side-quick"):
        _prune(results / name)
    readme = (tmp_path / "README.md").read_text()
    with pytest.raises(LabError) as e:
        reportdir.history()
    for name in (STORED, "2026-11-28-0536-read-side-quick", PRUNED):
        assert f"{results / name}: " in str(e.value), name
    assert "\n" not in str(e.value)
    assert (tmp_path / "README.md").read_text() == readme
    assert (tmp_path / "docs" / "results.md").read_text() == "old\n"


# A refused measurement that the headline does not use: results.md gives
# its words and why it is refused, and no figure of it.
def test_results_md_gives_no_figure_of_a_refused_measurement(tmp_path, monkeypatch):
    results = _repo(tmp_path, monkeypatch, FIGURES)
    _prune(results / "2026-11-27-1220-mremap-4k-full-arm64")
    reportdir.history()
    text = (tmp_path / "docs" / "results.md").read_text()
    for name in ("2026-11-27-1220-mremap-4k-full-arm64", PRUNED):
        note = (results / name / "note.md").read_text().strip()
        part = text[text.index(note) + len(note):]          # what follows its words
        part = part[:part.index("\n## ")]
        assert "**Refused**: runs.json and boots.json disagree on run counts" in part
        assert "| arm64 |" not in part and "±" not in part


# A stored bench without --stock is whole: results.md gives its figures
# with no stock run expected (none FAILED) and says switch off was not
# checked against stock; the README's headline refuses to take a figure
# from it, since its tables check switch off against stock.
def test_a_stored_bench_without_stock_is_whole_but_no_headline(tmp_path, monkeypatch):
    rc, out, _ = _bench(tmp_path, monkeypatch,
                        bench_lines(mremap4k("off", 0), mremap4k("on", 0)),
                        with_stock=False)
    assert rc == 0 and manifest.booted_stock(out) is False
    (out / "note.md").write_text("# a bench without --stock\n")
    text = history.section(out)
    assert "FAILED" not in text
    assert "Switch off against stock: not checked" in text
    (tmp_path / headline.DECLARATIONS).write_text(
        f'[[series]]\nname = "s"\nswitch = "mremap_batch"\n  [[series.figure]]\n'
        f'  arch = "x86_64"\n  results = "{out.name}"\n  workload = "mremap-4k"\n')
    shutil.move(str(out), tmp_path / out.name)
    with pytest.raises(LabError, match="booted no stock kernel"):
        headline.readme_block(tmp_path)
