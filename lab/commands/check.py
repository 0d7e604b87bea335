# SPDX-License-Identifier: GPL-2.0-only
"""The 'lab check' command: run the selected leaves of kernel/check.py (or
print their stored verdicts), add each to a tally, and summarise; and the
CI form that 'lab test' runs.  What a leaf builds and how its warnings are
judged stays in kernel/check.py."""

import time

from ..core import config
from ..core.tally import Tally
from ..core.util import LabError
from ..kernel import build, source
from ..kernel import check as kcheck
from . import committests, debianboot, mutation


def check(v, tally, full=False, use_cache=True, quick=False, records=False,
          record=False):
    """Run one leaf (or print its stored verdict) and add it to the tally;
    quick builds a lab variant's QUICK_DIRS only (kcheck.variant_dirs()).
    With records, a verdict kept in the repository under the same key
    (kcheck.load_record()) stands for the leaf; with record, a verdict
    judged here is kept there too."""
    t = kcheck.TARGETS[v.arch]
    if v.base == "each-commit":
        stamp = config.source_tree("bisect") / f"out-{v.arch}-default" / kcheck.STAMP
    elif v.base == "debian-boot":
        stamp = config.build_dir(v.arch, config.DEBIAN_VARIANT, "patched") / \
            f"{kcheck.STAMP}-{v.name}"
    elif v.base == "mutation":
        stamp = config.source_tree(mutation.FLAVOUR) / f"{kcheck.STAMP}-{v.name}"
    elif v.base == "commit-tests":
        stamp = config.source_tree("bisect") / f"out-{v.arch}-default" / \
            f"{kcheck.STAMP}-{v.name}"
    else:
        stamp = kcheck.build_dir(v, "patched") / kcheck.STAMP
    try:
        inputs = kcheck.stamp_inputs(v, t, full, quick)
        if v.base == "debian-boot":
            inputs["boot"] = debianboot.stamp_inputs(v.arch)
        elif v.base == "mutation":
            inputs["boot"] = mutation.stamp_inputs()
        elif v.base == "commit-tests":
            inputs["boot"] = committests.stamp_inputs(v.arch)
        key = kcheck.stamp_key(inputs)
        hit = kcheck.load_stamp_entry(stamp, key) if use_cache else None
        # with record, a verdict this machine already holds is kept as it
        # was judged; a stamp without its inputs is judged again
        if hit and (not record or kcheck.load_record(v, key)):
            report(tally, v, hit["result"], cached=True)
            return
        if hit and kcheck.keep_stamp(v, key, hit):
            report(tally, v, hit["result"],
                   cached=f"judged {hit['stored']} on this machine, now kept in "
                   f"{_shown(kcheck.record_path(v))}")
            return
        kept = kcheck.load_record(v, key) if use_cache and records else None
        if kept:
            report(tally, v, kept["result"],
                   cached=f"judged {kept['stored']}, kept in {_shown(kcheck.record_path(v))}")
            return
        started = time.monotonic()
        missing = kcheck.needs(v, t)
        if missing:
            raise LabError(f"{', '.join(missing)} not found; run 'lab deps --install'")
        if v.base == "each-commit":
            failed = build.each_commit(v.arch)
            result = kcheck.verdict("fail", "does not build at "
                                    + " ".join(c[:12] for c in failed)) \
                if failed else kcheck.verdict("pass")
        elif v.base == "debian-boot":
            status, detail, error = debianboot.leaf(v.arch)
            result = kcheck.verdict(status, detail, error)
        elif v.base == "mutation":
            status, detail, error = mutation.leaf()
            result = kcheck.verdict(status, detail, error)
        elif v.base == "commit-tests":
            status, detail, error = committests.leaf(v.arch)
            result = kcheck.verdict(status, detail, error)
        else:
            result = kcheck.build_variant(v, t, full, quick)
    except LabError as e:
        report(tally, v, kcheck.verdict("fail", str(e).splitlines()[0], str(e)))
        return
    kcheck.save_stamp(stamp, key, result, inputs, time.monotonic() - started)
    if record:
        kcheck.save_record(v, key, result, inputs, time.monotonic() - started)
    report(tally, v, result)


def _shown(path):
    """@path relative to the repository when it is inside it."""
    return path.relative_to(config.REPO) if path.is_relative_to(config.REPO) else path


def report(tally, v, result, cached=False):
    """Add a verdict's row; cached: True for a stamp of this machine, or
    the words that say where a kept record came from."""
    detail = result["detail"]
    if cached:
        how = "cached" if cached is True else cached
        detail = f"{detail}, {how}" if detail else how
    tally.add(result["status"], v.leaf, detail)
    if result.get("no_sparse"):
        tally.add("skip", f"{v.leaf}/sparse", result["no_sparse"])
    if result["status"] != "pass" and result["error"] \
            and result["error"].strip() != result["detail"].strip():
        print("\n".join("    " + l for l in result["error"].splitlines()))
    for line in result["new"]:
        print(f"    new: {line}")
    for line, reason in result.get("known", []):
        print(f"    known: {line}\n      why it is false: {reason}")


def ci_form(tally, use_cache=True):
    """What 'lab test' runs: the leaves marked ci, in the quick form."""
    for v in kcheck.VARIANTS:
        if v.ci:
            check(v, tally, use_cache=use_cache, quick=True)


def main(names=None, everything=False, full=False, use_cache=True, quick=False,
         record=False):
    """'lab check': the selected leaves, then the summary; the exit status.
    A verdict kept in the repository stands for its leaf; with record,
    each verdict judged here is kept there."""
    variants = kcheck.select(names, everything)
    source.apply()
    tally = Tally()
    for v in variants:
        check(v, tally, full, use_cache, quick, records=True, record=record)
    return tally.finish(tally.save("check"))
