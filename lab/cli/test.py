"""lab test: the host and guest test suites, with the short form of 'lab
harden' and the CI leaves of 'lab check'."""

from ..core import config
from ..core.util import say
from . import options


def add_parser(sub):
    sp = sub.add_parser("test", help="run the host and guest test suites")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-v", "--variant", default="default", choices=list(config.VARIANTS))
    sp.add_argument("--only", help="comma-separated program names to run")
    sp.add_argument("--no-pytest", action="store_true")
    sp.add_argument("--no-own", action="store_true", help="skip the project's tests")
    sp.add_argument("--no-upstream", action="store_true", help="skip upstream selftests")
    sp.add_argument("--no-harden", action="store_true",
                    help="skip the short form of 'lab harden' (debug kernels)")
    sp.add_argument("--kcidb", metavar="FILE",
                    help="also write the builds and tests in KCIDB I/O format "
                    "(validated with kcidb-io)")
    sp.add_argument("-j", "--jobs", type=int, default=2,
                    help="arches tested at the same time (default 2; 1: one "
                    "after the other)")
    sp.add_argument("--no-check", action="store_true",
                    help="skip the leaves of 'lab check' that lab test runs "
                    "(riscv64 mm/, x86_64 without PT_RECLAIM, directories only)")
    sp.add_argument("--no-cache", action="store_true",
                    help="boot the stock kernels even when a stored boot of the same "
                    "kernel, image, plan and QEMU arguments exists")
    sp.set_defaults(fn=cmd_test)


def cmd_test(args):
    import threading

    from ..commands import harden, test
    from ..core.tally import Tally
    from ..kernel import build, check, export
    only = set(args.only.split(",")) if args.only else None
    arches = options.arches(args)
    tally = Tally()
    harden_too = not args.no_harden and not only
    test.main(tally, arches, args.variant, pytest=not args.no_pytest,
              own=not args.no_own, upstream=not args.no_upstream, only=only,
              use_cache=not args.no_cache,
              later=harden.short_kernels(arches) if harden_too else (),
              jobs=args.jobs)
    if not only:
        test.guarded(tally, "export/lab", export.test_row, tally)
    checker = None
    if not args.no_check and not only:
        # The check leaves only compile: they run beside the nosplit boot
        # and the load, once the kernels those boot are built (one build
        # at a time).
        if harden_too:
            for kernel in harden.short_kernels(arches):
                test.guarded(tally, f"{kernel[0]}/{kernel[1]}/lab", build.build, *kernel)
        checked = []

        def run_check():
            test.guarded(tally, "check/lab", check.ci_form, tally,
                         use_cache=not args.no_cache)
            checked.append(True)

        checker = threading.Thread(target=run_check, name="check")
        checker.start()
    if harden_too:
        # every step under the same net as the arches' threads: an
        # exception is a failed row, and the run still ends with its count
        for arch_name, variant, _ in harden.short_kernels(arches):
            test.nosplit_check(tally, arch_name, variant)   # guarded inside
        test.guarded(tally, "harden/lab", harden.short_form, tally, arches)
    if checker:
        checker.join()
        # a thread that ended without a word (SystemExit is not an
        # Exception, guarded() lets it through) must not pass by silence
        if not checked:
            tally.add("fail", "check/lab", "the check leaves ended without reporting "
                      "(see the traceback above)")
    tally.close()
    if args.kcidb:
        from pathlib import Path

        from ..outputs import kcidb
        nb, nt = kcidb.write(tally.rows, Path(args.kcidb))
        say(f"KCIDB I/O: {nb} builds, {nt} tests in {args.kcidb}")
    return tally.finish(tally.save("test"))
