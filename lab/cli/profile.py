# SPDX-License-Identifier: GPL-2.0-only
"""lab profile: instructions per kernel function of one bench workload."""

from ..core import config
from . import options


def add_parser(sub):
    sp = sub.add_parser("profile", help="instructions per kernel function of one "
                        "bench workload, stock vs patched (QEMU plugin)")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-w", "--workload", required=True)
    sp.add_argument("-m", "--mode", action="append",
                    help="a mode of the workload to boot the patched kernel in "
                    "(repeatable; default: off); the first is compared with stock "
                    "function by function")
    sp.add_argument("--quick", action="store_true", help="the bench's small scale")
    sp.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    sp.set_defaults(fn=cmd_profile)


def cmd_profile(args):
    from ..commands import profile
    return profile.main(options.arches(args), args.workload, modes=args.mode or ["off"],
                        quick=args.quick, top=args.top)
