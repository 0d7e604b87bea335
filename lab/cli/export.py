# SPDX-License-Identifier: GPL-2.0-only
"""lab export: the series as a quilt queue for Debian's linux package."""


def add_parser(sub):
    sp = sub.add_parser("export", help="the series as a quilt queue for Debian's "
                        "linux source package")
    sp.add_argument("--debian", required=True, metavar="DIR",
                    help="write DIR/debian/patches/features/all/foliobatch/*.patch, "
                    "DIR/series-lines and DIR/config-lines")
    sp.set_defaults(fn=cmd_export)


def cmd_export(args):
    from pathlib import Path

    from ..kernel import export
    export.write(Path(args.debian).resolve())
    return 0
