# SPDX-License-Identifier: GPL-2.0-only
"""lab fresh: run .ci/run in a clean Debian 12 root."""


def add_parser(sub):
    sp = sub.add_parser("fresh", help="run .ci/run in a clean Debian 12 root made "
                        "with mmdebstrap (what a new machine does)")
    sp.add_argument("--run", default="bash .ci/run",
                    help="command run in the clone inside the root (default: "
                    "bash .ci/run)")
    sp.set_defaults(fn=cmd_fresh)


def cmd_fresh(args):
    from ..commands import fresh
    return fresh.main(args.run)
