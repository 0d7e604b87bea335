# SPDX-License-Identifier: GPL-2.0-only
"""lab source: fetch the pinned source, apply, export and check the series."""


def add_parser(sub):
    sp = sub.add_parser("source", help="fetch/apply/export the kernel source and series")
    sp.add_argument("action", choices=["fetch", "apply", "export", "checkpatch"])
    sp.add_argument("--force", action="store_true", help="re-apply even if unchanged")
    sp.set_defaults(fn=cmd_source)


def cmd_source(args):
    from ..kernel import source
    if args.action == "fetch":
        source.fetch()
    elif args.action == "apply":
        source.apply(force=args.force)
    elif args.action == "export":
        source.export()
    elif args.action == "checkpatch":
        return source.checkpatch()
    return 0
