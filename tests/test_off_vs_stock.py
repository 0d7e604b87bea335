# SPDX-License-Identifier: GPL-2.0-only
"""Host tests: the check of switch off against stock hides no difference.

DIFFERS when the ranges (min..max) of the two kernels' runs do not
overlap, however small the change and however wide the spread; a compared
counter more than 1% from stock's stands on a row (a line of the cell) of
its own with both values; a headline row's own measure is compared as well
as the workload's whole time; and the tables, the legends and '(noise)'
use one spread: the median ± half the min-max spread."""

import json

import pytest

from lab.core import config
from lab.guest import workloads
from lab.outputs import headline, stats, tables

ARCH = "x86_64"


def rec(workload, mode, rep, t, flavour="patched", source="metrics", **counts):
    r = {"workload": workload, "mode": mode, "rep": rep, "exit": 0, "arch": ARCH,
         "flavour": flavour, "total_ns": t, "metrics": {"time_ns": t},
         "vmstat": {}, "irq": {}, "mthp": {}, "scale": "s", "quick": True}
    r[source].update(counts)
    return r


def runs_of(workload, off, stock, on=None, source="metrics", **counts):
    """Runs of a workload: switch off's times off, stock's stock and switch
    on's on (default: half of switch off's), each with counts given as
    {key: (values of off, values of stock)} in source."""
    on = on or [t / 2 for t in off]
    out = []
    for mode, fl, ts, side in (("off", "patched", off, 0), ("stock", "stock", stock, 1),
                               ("on", "patched", on, 0)):
        for i, t in enumerate(ts):
            c = {k: v[side][i % len(v[side])] for k, v in counts.items()}
            out.append(rec(workload, mode, i, t, fl, source, **c))
    return out


def check(runs, name):
    return tables.off_vs_stock_check(stats.summarize(runs), ARCH, workloads.BY_NAME[name])


def report(runs, name):
    md = tables.markdown(stats.summarize(runs), [workloads.BY_NAME[name]], ARCH,
                         lambda s: True)
    return md[md.index("Switch off against stock"):]


def headline_cell(tmp_path, runs, name, measure=None, label=None):
    """The 'switch off vs stock' cell of a README headline row made from
    runs stored in tmp_path (a figure of workload name, of measure)."""
    d = tmp_path / "2026-01-01-0000-planted"
    d.mkdir(parents=True)
    (d / "runs.json").write_text(json.dumps(runs))
    fig = (f'arch = "{ARCH}"\n  results = "{d.name}"\n  workload = "{name}"\n'
           + (f'  measure = "{measure}"\n' if measure else "")
           + (f'  label = "{label}"\n' if label else ""))
    (tmp_path / headline.DECLARATIONS).write_text(
        f'[[series]]\nname = "s"\nswitch = "x"\n  [[series.figure]]\n  {fig}')
    row = next(line for line in headline.readme_block(tmp_path).splitlines()
               if f"| {name}:" in line)
    # series, switch, arch, workload: measure, off, on, change, the check, ...
    return [c.strip() for c in row.strip("|").split("|")][7]


# Switch off 0.4% slower than stock, each kernel's runs within 0.2% of one
# another: no run of one reaches the other's range.  The old rule let 2%
# pass as OK.
def test_ranges_apart_differ_however_small_the_change(tmp_path):
    runs = runs_of("bigheap", [1000, 1001, 1002], [1004, 1005, 1006])
    c = check(runs, "bigheap")
    assert c["ok"] is False and c["items"][0]["apart"]
    assert "| bigheap | DIFFERS: ranges apart | instruction-time |" in report(runs, "bigheap")
    cell = headline_cell(tmp_path, runs, "bigheap")
    assert cell.startswith("DIFFERS<br>instruction-time -0.40%, ranges apart"), cell
    # ranges that overlap within ±1% are OK
    runs = runs_of("bigheap", [1000, 1001, 1002], [1002, 1003, 1004])
    assert check(runs, "bigheap")["ok"] is True


# Runs that vary by ±9% on each kernel, but every switch-off run below
# every stock run: the old rule gave no verdict ("runs vary by 20%").
def test_ranges_apart_differ_however_wide_the_spread(tmp_path):
    runs = runs_of("bigheap", [1000, 1100, 1200], [1300, 1400, 1500])
    c = check(runs, "bigheap")
    assert c["ok"] is False
    text, ok = tables.off_vs_stock(stats.summarize(runs), ARCH,
                                   workloads.BY_NAME["bigheap"])
    assert ok is False and "ranges apart" in text
    assert "| bigheap | DIFFERS: ranges apart |" in report(runs, "bigheap")
    assert headline_cell(tmp_path, runs, "bigheap").startswith("DIFFERS<br>")
    # ranges that overlap with that spread: no verdict, and it says why
    runs = runs_of("bigheap", [1000, 1100, 1200], [1150, 1250, 1350])
    assert check(runs, "bigheap")["ok"] is None
    assert "| bigheap | INCONCLUSIVE: ranges overlap, runs vary by ±9.09% |" \
        in report(runs, "bigheap")


# pgsteal_file 2% from stock's while the time varies too much for a verdict:
# the counter is a difference on its own, named on a row (a line) of its
# own with both values; the old rule folded it into the time's no verdict.
def test_a_counter_beyond_one_percent_stands_on_its_own(tmp_path):
    runs = runs_of("file-reclaim", [1000, 1100, 1200], [1050, 1150, 1250],
                   source="vmstat", pgsteal_file=([1000], [1020]),
                   pgscan_file=([5000], [5000]))
    c = check(runs, "file-reclaim")
    assert c["ok"] is False
    rows = [line for line in report(runs, "file-reclaim").splitlines()
            if line.startswith("| file-reclaim |")]
    assert "| file-reclaim | DIFFERS: more than 1% from stock's | pgsteal_file | 1,000 | " \
        "1,020 | -1.96% |" in rows
    assert "| file-reclaim | OK: within 1% | pgscan_file | 5,000 | 5,000 | +0.00% |" in rows
    lines = headline_cell(tmp_path, runs, "file-reclaim").split("<br>")
    assert lines[0] == "DIFFERS"
    assert "pgsteal_file 1,000 vs 1,020 (-1.96%)" in lines
    assert not any("pgscan_file" in line for line in lines)


# The whole loop's time agrees with stock's; the row's own measure (the
# mremap() calls alone, the TLB shootdowns) does not: the row DIFFERS and
# says which measure.  The old check compared the whole time only.
@pytest.mark.parametrize("name, source, key, label", [
    ("mremap-4k", "metrics", "mremap_ns", "the mremap() calls"),
    ("dirty-reclaim-fixed", "irq", "TLB", "TLB shootdowns"),
])
def test_the_rows_own_measure_is_compared(tmp_path, name, source, key, label):
    runs = runs_of(name, [1000, 1001, 1002], [1000, 1001, 1002], source=source,
                   **{key: ([500, 501, 502], [520, 521, 522])})
    assert check(runs, name)["ok"] is False
    lines = headline_cell(tmp_path, runs, name, f"{source}.{key}", label).split("<br>")
    assert lines == ["DIFFERS", "instruction-time +0.00%, ranges overlap",
                     f"{label} -3.84%, ranges apart"], lines
    # the report compares each measure of the workload on a row of its own
    row = next(line for line in report(runs, name).splitlines()
               if line.startswith(f"| {name} | DIFFERS"))
    assert "ranges apart" in row and "-3.84%" in row


# One spread: each figure is its median ± half the min-max spread, and the
# change is '(noise)' only within the larger of those ± (the old rule took
# the whole spread: a +6.7% change against runs of 100..110 was noise).
def test_one_spread_convention_in_figures_noise_and_legends(tmp_path):
    a, b = stats.stats([100, 105, 110]), stats.stats([112, 112, 112])
    assert stats.change(a, b) == "+6.7%"
    assert stats.change(a, stats.stats([108, 108])) == "+2.9% (noise)"
    assert tables._fmt_num(a) == "105 (±4.8%)"
    runs = runs_of("bigheap", [1000, 1050, 1100], [1120, 1120], on=[1000, 1100, 1120])
    cell = headline_cell(tmp_path, runs, "bigheap")
    row = next(line for line in headline.readme_block(tmp_path).splitlines()
               if "| bigheap:" in line)
    assert "| 1,050 ns ±4.76% | 1,100 ns ±5.45% | +4.8% (noise) |" in row, row
    assert cell.startswith("DIFFERS")
    # the legends say that rule and no other
    block = headline.controls_block(tmp_path)
    assert "± half their min-max spread" in block
    assert "'(noise)' when it is within the larger ± of the two" in block
    assert "whatever their spread" in block and "OK within" not in block
    md = report(runs, "bigheap")
    assert "median ± half the min-max spread" in md and "whatever their spread" in md
    preamble = " ".join((config.REPO / "docs" / "results" / "preamble.md")
                        .read_text().split())
    assert '"(noise)" when it is within the larger ± of the two' in preamble
    bench_md = " ".join((config.REPO / "docs" / "bench.md").read_text().split())
    assert '"(noise)" when the change is within the larger ± of the two' in bench_md
