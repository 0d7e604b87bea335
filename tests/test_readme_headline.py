# SPDX-License-Identifier: GPL-2.0-only
"""The README's result tables are made from stored runs
(docs/results/headline.toml, 'lab report --history'), never typed, and
the README states no measured change or time outside the blocks the lab
makes."""

import hashlib
import json
import re
import shutil

import pytest

from lab.core import config
from lab.core.util import LabError
from lab.outputs import blocks, headline, history, testsummary

RESULTS = config.REPO / "docs" / "results"
# a measured figure: a percentage, a time, a before -> after pair or a
# ratio; the README's rules ("within 2%", "more than 10%", "more than
# ±1%") are thresholds, not measurements, and say so with those words
MEASURED = re.compile(
    r"(?<!within )(?<!than )(?<!over )(?<!than \u00b1)[+\-\u2212]?\b\d[\d.,]*\s?%"
    r"|\b\d[\d.,]*\s?(?:s|ms|ns|us|M ns|M)\b"
    r"|\b\d[\d.,]*\s?(?:->|\u2192)\s?\d"
    r"|\b0\.\d+\b")


def test_the_readme_states_the_tables_the_stored_runs_make():
    readme = (config.REPO / "README.md").read_text()
    assert headline.readme_block(RESULTS) in readme
    costs = (config.REPO / "docs" / "known-costs.md").read_text()
    assert headline.controls_block(RESULTS) in costs


def test_the_controls_are_in_the_docs_not_the_readme():
    """The README holds the gains and a short legend; the controls, with
    links that resolve from docs/, and the whole legend are in
    docs/known-costs.md."""
    readme, costs = headline.readme_block(RESULTS), headline.controls_block(RESULTS)
    assert "switch on vs stock" not in readme and "it should cost nothing" not in readme
    assert "docs/known-costs.md#controls" in readme
    assert "it should cost nothing" in costs and headline.LEGEND in costs
    links = re.findall(r"\]\(([^)]+)\)", costs)
    assert links and all(l.startswith("results/") for l in links)
    for link in set(links):
        assert (config.REPO / "docs" / link).exists(), link


def test_no_measured_figure_outside_the_blocks_the_lab_makes():
    readme = (config.REPO / "README.md").read_text()
    rest = " ".join(blocks.outside(readme, (headline.BEGIN, headline.END),
                                   (testsummary.BEGIN, testsummary.END)).split())
    assert MEASURED.findall(rest) == []
    # the check itself sees a typed figure, and lets a rule through
    for typed in ("mlock -32.5%", "32% faster", "0.2112 s", "7,159 -> 2,458",
                  "on/off 0.68", "660.0M ns"):
        assert MEASURED.search(typed), typed
    for rule in ("within 2% of stock", "by more than 10%", "spread is over 1%",
                 "vary by more than \u00b11%",
                 "patch 0031", "6.12.117"):
        assert not MEASURED.search(rule), rule


def _copy(tmp_path, toml):
    """A results directory with one stored measurement and toml as its
    declarations."""
    src = RESULTS / "2026-11-27-1524-mprotect-numa-quick"
    shutil.copytree(src, tmp_path / src.name)
    (tmp_path / headline.DECLARATIONS).write_text(toml)
    return tmp_path, src.name


FIG = """[[series]]
name = "mprotect"
switch = "mprotect_batch"
upstream = "x"
  [[series.figure]]
  arch = "arm64"
  results = "2026-11-27-1524-mprotect-numa-quick"
  workload = "mprotect-numa"
"""


def test_a_figure_follows_its_runs(tmp_path):
    d, name = _copy(tmp_path, FIG)
    row = [line for line in headline.readme_block(d).splitlines()
           if "mprotect-numa:" in line][0]
    assert "-69.6%" in row and "DIFFERS<br>instruction-time -1.26%, ranges apart" in row
    runs = json.loads((d / name / "runs.json").read_text())
    for r in runs:
        if r["arch"] == "arm64" and r["workload"] == "mprotect-numa" and r["mode"] == "on":
            r["metrics"]["time_ns"] *= 2
    (d / name / "runs.json").write_text(json.dumps(runs))
    assert "-69.6%" not in headline.readme_block(d)


# No README figure comes from a refused measurement: its bench failed, its
# runs.json no longer matches its manifest's sha256, or its runs.json and
# boots.json disagree on run counts (a runs.json pruned by hand).
def test_no_headline_figure_comes_from_a_refused_measurement():
    _, figures = headline.declared(RESULTS)
    refused = {f.results: history.refusal(RESULTS / f.results) for f in figures}
    assert {name: why for name, why in refused.items() if why} == {}


def test_a_headline_row_from_a_refused_measurement_is_an_error(tmp_path):
    d, name = _copy(tmp_path, FIG)
    runs = json.loads((d / name / "runs.json").read_text())
    (d / name / "runs.json").write_text(json.dumps(runs[:-1]))
    with pytest.raises(LabError, match=f"{name}: refused: runs.json and boots.json "
                       "disagree on run counts"):
        headline.readme_block(d)


@pytest.mark.parametrize("change, message", [
    (("2026-11-27-1524-mprotect-numa-quick", "2026-01-01-missing"), "not stored"),
    (('workload = "mprotect-numa"', 'workload = "mprotect-numa"\n  measure = "metrics.no_such_ns"'),
     "no metrics.no_such_ns"),
    (('workload = "mprotect-numa"', 'workload = "mprotect-numa"\n  mode = "all"'),
     "no mode all"),
    (('upstream = "x"', 'upstreem = "x"'), "upstreem"),
    (('workload = "mprotect-numa"', 'workload = "no-such"'), "not a workload"),
    (('workload = "mprotect-numa"', 'workload = "mprotect-numa"\n  colour = "red"'),
     "colour"),
    (('arch = "arm64"', 'arch = "riscv64"'), "has no riscv64"),
])
def test_a_declaration_that_names_nothing_is_an_error(tmp_path, change, message):
    d, _ = _copy(tmp_path, FIG.replace(*change))
    with pytest.raises(LabError, match=message):
        headline.readme_block(d)


def test_the_block_is_replaced_whole():
    text = "a\n" + headline.BEGIN + "\nold\n" + headline.END + "\nb"
    assert headline.replace_block(text, "new") == "a\nnew\nb"
    with pytest.raises(ValueError, match="headline"):
        headline.replace_block("no markers", "x")


def test_every_headline_figure_measures_the_current_series():
    """The README's tables take only measurements whose manifest records
    the patches tree of this commit (git rev-parse HEAD:patches): a change
    to patches/ means measuring again."""
    from lab.core.tally import patches_tree
    assert headline.not_current(RESULTS, patches_tree()) == {}


def test_a_figure_of_another_series_is_found(tmp_path):
    d, name = _copy(tmp_path, FIG)
    m = d / name / "manifest.json"
    if m.exists():
        m.unlink()
    assert headline.not_current(d, "0" * 40) == {name: "no manifest"}


def _two_boots(directory):
    """Give each boot of a copied measurement's boots.json a second boot
    of the same kernel (a boots.json only: not_current() reads no runs)."""
    path = directory / "boots.json"
    boots = json.loads(path.read_text())
    path.write_text(json.dumps(boots + [dict(b, name=re.sub(r"-r0$", "-r2", b["name"]))
                                        for b in boots]))


def test_a_figure_measured_with_one_boot_of_a_kernel_is_found(tmp_path):
    """The check of switch off against stock takes each side's runs from
    two boots (lab bench --stock, bench.first_boots()): a measurement
    whose runs of a kernel come from one boot never gives a headline
    figure, since two boots of one kernel differ by more than one boot's
    runs do."""
    d, name = _copy(tmp_path, FIG)
    tree = "1" * 40
    (d / name / "manifest.json").write_text(json.dumps({"patches_tree": tree}))
    got = headline.not_current(d, tree)
    assert list(got) == [name] and "one boot of arm64-bench-patched" in got[name]
    _two_boots(d / name)
    assert headline.not_current(d, tree) == {}


def test_a_figure_measured_on_debians_config_is_found(tmp_path):
    """'lab bench --kernel-config debian' measures the same series on other
    kernels: a comparison for the note, never a headline figure."""
    d, name = _copy(tmp_path, FIG)
    _two_boots(d / name)
    m = d / name / "manifest.json"
    tree = "1" * 40
    data = {"patches_tree": tree, "variant": "debian"}
    m.write_text(json.dumps(data))
    assert headline.not_current(d, tree) == {name: f"{tree}, on the debian kernels"}
    data["variant"] = "default"
    m.write_text(json.dumps(data))
    assert headline.not_current(d, tree) == {}


def test_a_figure_measured_without_stock_is_found(tmp_path):
    """A bench without --stock has no stock runs for the tables' switch
    off against stock column: never a headline figure."""
    d, name = _copy(tmp_path, FIG)
    _two_boots(d / name)
    m = d / name / "manifest.json"
    tree = "1" * 40
    data = {"patches_tree": tree, "variant": "default", "stock": False}
    m.write_text(json.dumps(data))
    assert headline.not_current(d, tree) == {name: f"{tree}, without stock (no --stock)"}
    data["stock"] = True
    m.write_text(json.dumps(data))
    assert headline.not_current(d, tree) == {}


def test_the_controls_compare_the_default_with_stock():
    """Each control row gives switch on against stock beside switch off vs
    on, computed from the same runs: doubling stock's runs of one control
    moves that cell and no other."""
    controls = headline.controls_block(RESULTS)
    assert "| change | switch on vs stock | switch off vs stock |" in controls
    rows = [line for line in controls.splitlines()
            if line.startswith("|") and "mprotect-4k:" in line]
    assert rows and all(line.count("|") == 11 for line in rows)
    assert "switch on vs stock" not in headline.readme_block(RESULTS)


def test_switch_on_vs_stock_follows_the_stock_runs(tmp_path):
    d = tmp_path / "results"
    shutil.copytree(RESULTS, d)
    fig = [f for f in headline.declared(d)[1] if f.control and f.workload == "mprotect-4k"
           and f.arch == "x86_64"][0]
    m = json.loads((d / fig.results / "manifest.json").read_text())
    runs = json.loads((d / fig.results / "runs.json").read_text())

    def cell():
        row = [line for line in headline.controls_block(d).splitlines()
               if "| x86_64 | mprotect-4k:" in line][0]
        return row.split("|")[8].strip()

    before = cell()
    for r in runs:
        if r["arch"] == "x86_64" and r["workload"] == "mprotect-4k" and r["flavour"] == "stock":
            r["metrics"]["mprotect_ns"] *= 2
    (d / fig.results / "runs.json").write_text(json.dumps(runs))
    m["sha256"]["runs.json"] = hashlib.sha256((d / fig.results / "runs.json").read_bytes()).hexdigest()
    (d / fig.results / "manifest.json").write_text(json.dumps(m))
    after = cell()
    # on over twice stock: half of what it was, about -50%
    assert before != after and after.startswith(("-49.", "-50."))
