# SPDX-License-Identifier: GPL-2.0-only
"""Reportdir: 'lab report DIR', the report of a bench directory again.

DIR is a directory 'lab bench' wrote (runs.json, and boots.json for the
boot table), e.g. one copied back from another machine, or the directory
run-here.sh wrote on a machine of its own (bench.log and host.txt, which
here.collect() turns into runs.json).  The report is made with this lab's
report code (report.py) and workload table (workloads.py).  Both bench.py
and here.py are below this module, so neither imports the other.
"""

import json
import time

from ..core import config
from ..core.tally import info_path
from ..core.util import LabError, say, warn
from ..guest import workloads
from ..kernel import check as kcheck
from ..kernel import build, distro, source
from ..outputs import headline
from ..outputs import history as history_md
from ..outputs import checkrecords, jobtime, manifest, report, testsummary, workloadsdoc
from . import committests, debianboot, here, mutation
from .bench import in_series


def report_dir(outdir):
    """'lab report DIR': the report of a bench directory's runs.json again
    (with this lab's report code), e.g. of runs copied back from another
    machine, or of the directory run-here.sh wrote (here.collect()).  A
    bench directory that manifest.refusals() refuses (its bench failed or
    did not end, runs.json or boots.json changed since, or their run
    counts disagree) is a LabError naming it and why; one without a
    manifest says so in the report."""
    f = outdir / "runs.json"
    provenance = None
    boots = None
    if (outdir / "bench.log").exists() and (outdir / "host.txt").exists():
        runs = here.collect(outdir)      # run-here.sh's output; writes runs.json
    elif not outdir.is_dir():
        raise LabError(f"{outdir}: no such directory")
    elif not f.exists():
        raise LabError(f"{f} not found: a bench directory holds runs.json, and "
                       "run-here.sh's holds bench.log and host.txt")
    else:
        runs = history_md.read_records(f, history_md.RUN_KEYS)
        boots = history_md.load_boots(outdir)
        manifest.check(outdir, runs, boots)
        provenance = manifest.describe(outdir)
        say(provenance)
    chosen, arches = workloads.of_runs(runs, f)
    stock = manifest.booted_stock(outdir)
    return report.write(outdir, runs, chosen, arches, in_series, boots, provenance,
                        stock=stock)


def history():
    """'lab report --history': docs/results.md from the stored measurements
    (lab.outputs.history) and the README's headline tables from those
    headline.toml names (lab.outputs.headline).  A stored measurement's
    directory is evidence and stays as its bench wrote it: its report.md
    is not made again."""
    results = config.REPO / "docs" / "results"
    refused = history_md.refused(results)
    _, figures = headline.declared(results)
    used = sorted({f.results for f in figures} & set(refused))
    if used:
        others = sorted(set(refused) - set(used))
        raise LabError(
            "headline.toml takes figures from refused measurements: "
            + "; ".join(f"{results / n}: {'; '.join(refused[n])}" for n in used)
            + (". Refused too (results.md shows no figure of them): "
               + "; ".join(f"{results / n}: {'; '.join(refused[n])}" for n in others)
               if others else ""))
    for n, why in sorted(refused.items()):
        warn(f"{results / n}: refused: {'; '.join(why)}; its section of results.md "
             "shows no figure")
    out = config.REPO / "docs" / "results.md"
    out.write_text(history_md.history(results))
    readme = config.REPO / "README.md"
    stored = {}
    text = headline.replace_block(readme.read_text(), headline.readme_block(results, stored))
    readme.write_text(jobtime.replace_block(text, jobtime.readme_block(results)))
    costs = config.REPO / "docs" / "known-costs.md"
    costs.write_text(headline.replace_controls(costs.read_text(),
                                               headline.controls_block(results, stored)))
    workloadsdoc.DOC.write_text(workloadsdoc.updated(workloadsdoc.DOC.read_text()))
    testing = config.REPO / "docs" / "testing.md"
    testing.write_text(checkrecords.replace_block(testing.read_text(), check_records_block()))
    say(f"wrote {out}, the headline tables of {readme} and the kept check verdicts "
        f"of {testing}")


def boot_codes():
    """{leaf: the hash of its boot code now} of the check leaves that boot,
    the code part of the boot inputs their key holds (commands/check.py)."""
    made = {"debian-boot": lambda v: debianboot.stamp_inputs(v.arch),
            "commit-tests": lambda v: committests.stamp_inputs(v.arch),
            "mutation": lambda v: mutation.stamp_inputs()}
    return {v.leaf: made[v.base](v)["code"] for v in kcheck.VARIANTS if v.base in made}


def check_records_block():
    """docs/testing.md's table of the check verdicts kept in the repository."""
    return checkrecords.made([v.leaf for v in kcheck.VARIANTS], source.series_hash(),
                             build.code_hash(kcheck.CHECK_CODE), boot_codes())


def _json(f, kind, keys, given):
    """The JSON of f, a kind (dict or list) with keys; a LabError that
    names given (the file the command was given) when it is not."""
    where = str(given) if f == given else f"{given}: {f.name}"
    try:
        data = json.loads(f.read_text(errors="replace"))
    except json.JSONDecodeError as e:
        raise LabError(f"{where} is not JSON: {e}") from None
    if not isinstance(data, kind) or any(k not in data for k in keys):
        shape = "list" if kind is list else "object"
        raise LabError(f"{where} is not what 'lab test' stores (a JSON {shape}"
                       f"{' with ' + ', '.join(keys) if keys else ''})")
    return data


def tests_dir():
    """Where 'lab report --tests' keeps each summary it writes."""
    return config.REPO / "docs" / "results" / "tests"


def tests(rows_file=None):
    """'lab report --tests': docs/results/test-summary.json from a stored
    'lab test' run (rows_file, or the newest WORK/results/test-*.json), and
    the README's sentence made from it (testsummary.py).  The run's commit
    and time come from what Tally.save() stored beside its rows; a run
    that was partial or failed is refused (testsummary.refusal())."""
    if rows_file is None:
        runs = sorted((config.WORK / "results").glob("test-*.json"))
        if not runs:
            raise LabError(f"no stored 'lab test' run in {config.WORK / 'results'}")
        rows_file = runs[-1]
    if not rows_file.is_file():
        raise LabError(f"{rows_file}: no such file (a 'lab test' run's rows, "
                       "work/results/test-*.json)")
    info = info_path(rows_file)
    if not info.exists():
        raise LabError(f"{rows_file}: {info.name} not found beside it: the run's "
                       "commit and time are not stored")
    meta = _json(info, dict, ("commit", "time"), rows_file)
    rows = _json(rows_file, list, (), rows_file)
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not {"status", "name", "detail"} <= set(r):
            raise LabError(f"{rows_file}: row {i} is not a 'lab test' row "
                           "(status, name, detail)")
    refused = testsummary.refusal(meta, rows)
    if refused:
        raise LabError(f"{rows_file}: {refused}")
    mtime = time.localtime(rows_file.stat().st_mtime)
    s = testsummary.summarize(rows, meta["commit"], time.strftime("%Y-%m-%d", mtime),
                              meta["time"], meta.get("compiled"), meta.get("start"))
    text = json.dumps(s, indent=1) + "\n"
    out = config.REPO / "docs" / "results" / "test-summary.json"
    out.write_text(text)
    kept = tests_dir() / f"{time.strftime('%Y-%m-%d-%H%M', mtime)}-{s['commit']}.json"
    kept.parent.mkdir(exist_ok=True)
    kept.write_text(text)
    readme = config.REPO / "README.md"
    block = testsummary.readme_block(s, testsummary.stored(tests_dir()))
    readme.write_text(testsummary.replace_block(readme.read_text(), block))
    say(f"{out} and README.md from {rows_file}: {s['passed']} passed, "
        f"{s['failed']} failed, {s['skipped']} skipped")


def configs():
    """'lab report --configs': docs/configs.md from the pinned Debian configs
    and the lab's fragments (kernel/distro.py); a LabError, writing nothing,
    when configs/differences.tsv does not account for every difference."""
    text, bad = distro.generate()
    if bad:
        raise LabError("configs/differences.tsv does not account for the "
                       "configs:\n  " + "\n  ".join(bad))
    distro.DOC.write_text(text)
    say(f"wrote {distro.DOC}")


def patches():
    """'lab report --patches': docs/patches.md (outputs/patchesdoc.py); a
    LabError, writing nothing, when a patch that changes kernel code has no
    test."""
    from ..outputs import patchesdoc
    bad = patchesdoc.uncovered()
    if bad:
        raise LabError("patches without a test (lab/guest/coverage.py):\n  " +
                       "\n  ".join(f"{n}: {why}" for n, why in bad))
    patchesdoc.DOC.write_text(patchesdoc.render())
    say(f"wrote {patchesdoc.DOC}")
