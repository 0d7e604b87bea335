# SPDX-License-Identifier: GPL-2.0-only
"""lab codegen: the series' claims of unchanged code, checked in the objects
of the built kernels."""

from ..core import config
from . import options


def add_parser(sub):
    sp = sub.add_parser("codegen", help="check the functions the series claims "
                        "compile as 6.12's, in the built stock and patched kernels "
                        "(objdump)")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES),
                    help="arch (repeatable; default: all)")
    sp.add_argument("--object", action="append", default=[], metavar="OBJ",
                    help="also list every function of OBJ (e.g. mm/mremap.o) as same, "
                    "differs or missing (repeatable)")
    sp.add_argument("--stock-dir", metavar="DIR",
                    help="a stock build directory other than the lab's (with "
                    "--patched-dir and one -a)")
    sp.add_argument("--patched-dir", metavar="DIR")
    sp.set_defaults(fn=cmd_codegen)


def cmd_codegen(args):
    from ..commands import codegen
    return codegen.main(options.arches(args), args.stock_dir, args.patched_dir,
                        args.object)
