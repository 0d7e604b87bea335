# SPDX-License-Identifier: GPL-2.0-only
"""lab deps: check or, with --install, install the host's dependencies."""


def add_parser(sub):
    sp = sub.add_parser("deps", help="check or install host dependencies")
    sp.add_argument("--install", action="store_true")
    sp.set_defaults(fn=cmd_deps)


def cmd_deps(args):
    from ..core import deps
    deps.install() if args.install else deps.check()
    return 0
