# SPDX-License-Identifier: GPL-2.0-only
"""lab check: build the series in more configs and arches."""

from ..core.util import LabError


def add_parser(sub):
    sp = sub.add_parser("check", help="build the series in more configs and arches "
                        "(Debian, defconfig, lab config variants); new warnings")
    sp.add_argument("--all", action="store_true",
                    help="every variant (default: the cheap ones, marked * by --list)")
    sp.add_argument("-k", dest="names", action="append", metavar="NAME",
                    help="variant NAME or ARCH/NAME, shell wildcards allowed (repeatable)")
    sp.add_argument("--full", action="store_true",
                    help="build the whole kernel, modules too, for the variants that "
                    "otherwise build some directories only")
    sp.add_argument("--quick", action="store_true",
                    help="lab variants build mm/, arch/ARCH/mm/ and the directories "
                    "of the changed files, not the whole kernel (what lab test runs)")
    sp.add_argument("--no-cache", action="store_true",
                    help="build even when a leaf's stored verdict has the same inputs")
    sp.add_argument("--record", action="store_true",
                    help="keep each verdict judged in docs/results/check/ (commit it), "
                    "where a later 'lab check' on any machine with the same inputs "
                    "takes it")
    sp.add_argument("--list", action="store_true", help="list the variants")
    sp.set_defaults(fn=cmd_check)


def cmd_check(args):
    from ..commands import check
    from ..kernel import check as kcheck
    if args.list:
        kcheck.list_variants()
        return 0
    if args.full and args.quick:
        raise LabError("--full and --quick contradict each other")
    return check.main(args.names, everything=args.all, full=args.full,
                      use_cache=not args.no_cache, quick=args.quick, record=args.record)
