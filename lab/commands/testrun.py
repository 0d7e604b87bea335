# SPDX-License-Identifier: GPL-2.0-only
"""The 'lab test' command as a whole: the host and guest suites (test.py),
the claims of 6.12's code in the kernels built (codegen.py), the export
row, the CI leaves of 'lab check' beside the short form of 'lab harden'
(harden.py), and the summary.

test.py and harden.py do not import each other; this module runs one after
the other under one tally.
"""

import threading
from pathlib import Path

from ..core import config
from ..core.tally import Tally
from ..core.util import LabError, say
from ..guest import image, suites
from ..kernel import build, export
from . import check, codegen, harden, test


def programs():
    """{program: what it is} of every test program 'lab test --only' may
    name: the lab's own (guest/tests/) and the upstream selftests, with
    the arches of those that do not run on every arch."""
    out = {p: "own test" for p in suites.own_tests()}
    for p in suites.SELFTEST_ARGS:
        on = [a for a in config.ARCHES if p in image.selftests_for(a)]
        out[p] = "upstream selftest" + (f" ({', '.join(on)} only)"
                                        if len(on) < len(config.ARCHES) else "")
    return out


def list_programs():
    """'lab test --list': the test programs, own then upstream."""
    for p, what in programs().items():
        print(f"{p}: {what}")


def check_only(only):
    """A LabError naming each name of --only that is no test program, before
    anything is fetched or built (the plans would drop it, and an unknown
    name would run nothing and pass)."""
    if only is None:
        return
    known = programs()
    if not only:
        raise LabError("--only names no program ('lab test --list' lists them)")
    unknown = sorted(n for n in only if n not in known)
    if unknown:
        raise LabError(f"--only: {', '.join(unknown)}: not a test program (known: "
                       f"{', '.join(known)}; 'lab test --list')")


def left_out(arches, variant="default", only=None, pytest=True, own=True,
             upstream=True, harden_too=True, check_too=True):
    """What a run of run() with these arguments leaves out of a full 'lab
    test' (every arch, every suite and part, the default variant, no
    --only), as the options that did it; empty for a full run.  Tally.save()
    records it, and 'lab report --tests' takes a full run only."""
    out = []
    missing = [a for a in config.ARCHES if a not in arches]
    if missing:
        out.append(f"-a {' -a '.join(arches)} (not {', '.join(missing)})")
    if variant != "default":
        out.append(f"-v {variant}")
    if only is not None:
        out.append(f"--only {','.join(sorted(only))}")
    out += [flag for flag, on in (("--no-pytest", pytest), ("--no-own", own),
                                  ("--no-upstream", upstream),
                                  ("--no-harden", harden_too), ("--no-check", check_too))
            if not on]
    return out


def run(arches, variant="default", only=None, pytest=True, own=True, upstream=True,
        harden_too=True, check_too=True, use_cache=True, jobs=2, kcidb_file=None):
    """Every part of 'lab test' (only: program names, which leaves out the
    export row, the check leaves and the harden short form); return the
    exit status (Tally.finish()), which the saved run records with what
    it left out (left_out())."""
    check_only(only)
    partial = left_out(arches, variant, only, pytest, own, upstream, harden_too, check_too)
    tally = Tally(start=build.start_state(arches, variant))
    harden_too = harden_too and not only
    test.main(tally, arches, variant, pytest=pytest, own=own, upstream=upstream,
              only=only, use_cache=use_cache,
              later=harden.short_kernels(arches) if harden_too else (), jobs=jobs)
    if not only:
        if variant == "default":
            # the series' claims of 6.12's code, in the kernels just built
            test.guarded(tally, "codegen/lab", codegen.tally_claims, tally, arches)
        test.guarded(tally, "export/lab", export.test_row, tally)
    checker = None
    if check_too and not only:
        # The check leaves only compile: they run beside the nosplit boot
        # and the load, once the kernels those boot are built (one build
        # at a time).
        if harden_too:
            for kernel in harden.short_kernels(arches):
                test.guarded(tally, f"{kernel[0]}/{kernel[1]}/lab", build.build, *kernel)
        checked = []

        def run_check():
            test.guarded(tally, "check/lab", check.ci_form, tally, use_cache=use_cache)
            checked.append(True)

        checker = threading.Thread(target=run_check, name="check")
        checker.start()
    if harden_too:
        # every step under the same net as the arches' threads: an
        # exception is a failed row, and the run still ends with its count
        for arch_name, kvariant, _ in harden.short_kernels(arches):
            test.nosplit_check(tally, arch_name, kvariant)   # guarded inside
        test.guarded(tally, "harden/lab", harden.short_form, tally, arches)
    if checker:
        checker.join()
        # a thread that ended without a word (SystemExit is not an
        # Exception, guarded() lets it through) must not pass by silence
        if not checked:
            tally.add("fail", "check/lab", "the check leaves ended without reporting "
                      "(see the traceback above)")
    tally.close()
    if kcidb_file:
        from ..outputs import kcidb
        nb, nt = kcidb.write(tally.rows, Path(kcidb_file))
        say(f"KCIDB I/O: {nb} builds, {nt} tests in {kcidb_file}")
    return tally.finish(tally.save("test", partial))
