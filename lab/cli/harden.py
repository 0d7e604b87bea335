# SPDX-License-Identifier: GPL-2.0-only
"""lab harden: debug kernels under stress-ng, trinity and switch flips."""

from ..core import config
from ..core.util import LabError
from . import options


def add_parser(sub):
    sp = sub.add_parser("harden", help="debug kernels under stress-ng, trinity and "
                        "switch flips")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-v", "--variant", choices=list(config.VARIANTS),
                    help="default: debug; with --short, the kernel 'lab test' "
                    "loads (suites.SHORT_VARIANT)")
    sp.add_argument("--minutes", type=float, default=30.0,
                    help="minutes of load per arch (default 30)")
    sp.add_argument("--round", type=int, default=300,
                    help="seconds per round; rounds alternate LRU and MGLRU (default 300)")
    sp.add_argument("--no-suite", action="store_true",
                    help="skip the boot that runs the whole guest suite first")
    sp.add_argument("--short", action="store_true",
                    help="the CI form: no suite, a few minutes of load")
    sp.set_defaults(fn=cmd_harden)


def cmd_harden(args):
    from ..commands import harden
    from ..guest import suites
    minutes, round_s, suite = args.minutes, args.round, not args.no_suite
    variant = args.variant or "debug"
    if args.short:
        minutes, round_s, suite = suites.SHORT_MINUTES, suites.SHORT_ROUND, False
        variant = args.variant or suites.SHORT_VARIANT
    if minutes <= 0 or round_s <= 0:
        raise LabError("--minutes and --round must be positive")
    return harden.main(options.arches(args), variant, minutes, round_s, suite)
