# SPDX-License-Identifier: GPL-2.0-only
"""lab image: build the guest initramfs."""

from ..core import config
from . import options


def add_parser(sub):
    sp = sub.add_parser("image", help="build the guest initramfs")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.set_defaults(fn=cmd_image)


def cmd_image(args):
    from ..guest import image
    from ..kernel import source
    source.fetch()
    for a in options.arches(args):
        print(image.build(a))
    return 0
