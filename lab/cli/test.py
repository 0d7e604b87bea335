# SPDX-License-Identifier: GPL-2.0-only
"""lab test: the host and guest test suites, with the short form of 'lab
harden' and the CI leaves of 'lab check'."""

from ..core import config
from . import options


def add_parser(sub):
    sp = sub.add_parser("test", help="run the host and guest test suites")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-v", "--variant", default="default", choices=list(config.VARIANTS))
    sp.add_argument("--only", help="comma-separated program names to run (--list "
                    "names them; an unknown one is an error)")
    sp.add_argument("--list", action="store_true",
                    help="list the test programs --only may name, and exit")
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
    from ..commands import testrun
    if args.list:
        testrun.list_programs()
        return 0
    only = {n for n in args.only.split(",") if n} if args.only is not None else None
    return testrun.run(options.arches(args), args.variant,
                       only=only,
                       pytest=not args.no_pytest, own=not args.no_own,
                       upstream=not args.no_upstream, harden_too=not args.no_harden,
                       check_too=not args.no_check, use_cache=not args.no_cache,
                       jobs=args.jobs, kcidb_file=args.kcidb)
