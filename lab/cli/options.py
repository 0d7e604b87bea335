# SPDX-License-Identifier: GPL-2.0-only
"""Options: the arguments several commands take, and their checks."""

import argparse

from ..core import config
from ..core.util import LabError


def at_least_one(text):
    """argparse type of a count that must be 1 or more (--repeats,
    --min-repeats): a usage error for 0, a negative number or a word."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


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
