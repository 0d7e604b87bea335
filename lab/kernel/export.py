# SPDX-License-Identifier: GPL-2.0-only
"""Export: the series as a quilt patch queue for Debian's linux package.

'lab export --debian DIR' writes, for a maintainer of Debian's 'linux'
source package:

  DIR/debian/patches/features/all/foliobatch/NNNN-*.patch
      the patches of patches/series (git format-patch files, which quilt
      applies with -p1, Debian's default), each with the DEP-3 fields of
      its Upstream: lines (Origin, Author, Forwarded, Applied-Upstream:
      provenance.py) added to its mail header;
  DIR/series-lines
      the lines to add to debian/patches/series, in order;
  DIR/config-lines
      the options the series adds and the value to give them, with the
      Debian config files they belong in (CONFIG_PT_RECLAIM for amd64 and
      arm64, the arches the series lets select it).

verify() proves the queue: it checks the pinned source out at 'base' in a
scratch worktree, writes the queue into it with a debian/patches/series
of just those lines, runs 'quilt push -a', and compares the tree that
results (less debian/ and quilt's .pc/) with the patched tree's HEAD.
'lab test' runs it as the row export/debian-quilt.
"""

import os
import re
import shutil

from ..core import config
from ..core.util import LabError, out, run, say
from . import provenance, source

QUEUE = "features/all/foliobatch"

# Options the series adds that have a prompt (a user can set them), with
# the value to give them and the Debian architectures whose config file
# should set it.  tests/test_export.py checks that every prompted option
# the patches add is here.
DEBIAN_CONFIG = {
    "CONFIG_PT_RECLAIM": ("y", ("amd64", "arm64")),
    # reclaim_tlb_batch starts off (patch 0027)
    "CONFIG_RECLAIM_TLB_BATCH_DEFAULT_ON": ("n", ("amd64", "arm64")),
}


def added_options(patch_texts):
    """Names (CONFIG_X) of the Kconfig options the patches add with a
    prompt: a '+config X' entry whose type line ('+\tbool "..."') has one."""
    names = []
    for text in patch_texts:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^\+(?:menu)?config (\w+)\s*$", line)
            if not m:
                continue
            for nxt in lines[i + 1:i + 4]:
                if re.match(r'^\+\s+(bool|tristate|int|hex|string)\s+"', nxt):
                    names.append("CONFIG_" + m.group(1))
                    break
    return names


def series_lines(files):
    return [f"{QUEUE}/{f.name}" for f in files]


def config_text():
    lines = ["# foliobatch: options the series adds, for Debian's config files",
             "# (under '## file: mm/Kconfig' in each file named)."]
    for opt, (value, arches) in DEBIAN_CONFIG.items():
        for a in arches:
            lines.append(f"# debian/config/{a}/config")
            lines.append(f"# {opt} is not set" if value == "n" else f"{opt}={value}")
    return "\n".join(lines) + "\n"


def write(dest):
    """Write the queue, series-lines and config-lines into dest; return the
    list of patch paths written."""
    files = source.series_files()
    if not files:
        raise LabError(f"{config.SERIES} names no patches")
    missing = sorted(set(added_options(f.read_text() for f in files)) - set(DEBIAN_CONFIG))
    if missing:
        raise LabError("the series adds options export.DEBIAN_CONFIG does not "
                       f"know: {', '.join(missing)}")
    queue = dest / "debian" / "patches" / QUEUE
    if queue.exists():
        shutil.rmtree(queue)
    queue.mkdir(parents=True)
    written = []
    bad = [line for f in files for line in provenance.problems(f.name, f.read_text())]
    if bad:
        raise LabError("patches without their provenance:\n  " + "\n  ".join(bad))
    for f in files:
        (queue / f.name).write_text(provenance.with_dep3(f.read_text()))
        written.append(queue / f.name)
    (dest / "series-lines").write_text("\n".join(series_lines(files)) + "\n")
    (dest / "config-lines").write_text(config_text())
    say(f"wrote {len(files)} patches to {queue}, and {dest / 'series-lines'} "
        f"and {dest / 'config-lines'}")
    return written


def verify():
    """Apply the exported queue with quilt to the pinned source and compare
    with the patched tree; returns (ok, detail)."""
    if not shutil.which("quilt"):
        raise LabError("quilt not found; run 'lab deps --install'")
    stock = source.fetch()
    patched = source.apply()
    want = out(["git", "-C", str(patched), "rev-parse", "HEAD"])
    tree = config.WORK / "src" / "export-check"
    git = ["git", "-C", str(stock)]
    if tree.exists():
        run(git + ["worktree", "remove", "--force", str(tree)], check=False, quiet=True)
        shutil.rmtree(tree, ignore_errors=True)
    run(git + ["worktree", "prune"], quiet=True)
    run(git + ["worktree", "add", "-q", "--detach", str(tree), source.BASE_TAG], quiet=True)
    try:
        write(tree)
        series = tree / "debian" / "patches" / "series"
        series.write_text((tree / "series-lines").read_text())
        env = dict(os.environ, QUILT_PATCHES="debian/patches", QUILT_PC=".pc")
        log = config.log_dir() / "export-quilt.log"
        log.write_text("")
        p = run(["quilt", "push", "-a", "-q"], cwd=tree, env=env, log=log, check=False)
        if p.returncode != 0:
            return False, f"quilt push -a failed (log: {log})"
        for extra in ("series-lines", "config-lines"):
            (tree / extra).unlink()
        wt = ["git", "-C", str(tree)]
        keep = [".", ":(exclude)debian", ":(exclude).pc"]
        run(wt + ["add", "-A", "-f", "--"] + keep, quiet=True)
        diff = out(wt + ["diff", "--cached", "--stat", want, "--"] + keep)
        if diff:
            return False, "quilt's tree differs from the patched tree:\n" + diff
        return True, f"{len(source.series_files())} patches, tree {want[:12]}"
    finally:
        run(git + ["worktree", "remove", "--force", str(tree)], check=False, quiet=True)


def test_row(tally):
    """The row 'lab test' adds: export/debian-quilt."""
    try:
        ok, detail = verify()
    except LabError as e:
        ok, detail = False, str(e).splitlines()[0]
    tally.add("pass" if ok else "fail", "export/debian-quilt", detail)
