"""Options: the arguments several commands take, and their checks."""

from ..core import config
from ..core.util import LabError


def arches(args):
    names = args.arch or list(config.ARCHES)
    for n in names:
        config.arch(n)
    return names


def flavours(args):
    names = args.flavour or list(config.FLAVOURS)
    for n in names:
        if n not in config.FLAVOURS:
            raise LabError(f"unknown flavour '{n}' (known: {', '.join(config.FLAVOURS)})")
    return names


def add_kernel_args(sp, flavour=True):
    """-a ARCH, -f FLAVOUR and -v VARIANT: which kernels a command is about."""
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES),
                    help="arch (repeatable; default: all)")
    if flavour:
        sp.add_argument("-f", "--flavour", action="append",
                        choices=list(config.FLAVOURS),
                        help="stock or patched (repeatable; default: both)")
    sp.add_argument("-v", "--variant", default="default", choices=list(config.VARIANTS))
