# SPDX-License-Identifier: GPL-2.0-only
"""lab build, lab kernel: build kernels, and print the path of a built one."""

from ..core.util import LabError
from . import options


def add_parser(sub):
    sp = sub.add_parser("build", help="build kernels; prints image paths")
    options.add_kernel_args(sp)
    sp.add_argument("--each-commit", action="store_true",
                    help="build every commit of the series (bisectability)")
    sp.set_defaults(fn=cmd_build)

    sp = sub.add_parser("kernel", help="print the path of a built kernel image")
    options.add_kernel_args(sp)
    sp.set_defaults(fn=cmd_kernel)


def cmd_build(args):
    from ..kernel import build, source
    if args.each_commit:
        failed = []
        for a in options.arches(args):
            failed += build.each_commit(a, args.variant)
        return 1 if failed else 0
    source.apply()
    for a in options.arches(args):
        for f in options.flavours(args):
            print(build.build(a, args.variant, f))
    return 0


def cmd_kernel(args):
    from ..kernel import build
    path = build.image_path(args.arch[0] if args.arch else "x86_64", args.variant,
                            args.flavour[0] if args.flavour else "patched")
    if not path.exists():
        raise LabError(f"{path} is not built; run 'lab build'")
    print(path)
    return 0
