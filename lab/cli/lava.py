# SPDX-License-Identifier: GPL-2.0-only
"""lab lava: LAVA jobs for the test plan, or the qemu job run here."""

from ..core.util import LabError
from . import options


def add_parser(sub):
    sp = sub.add_parser("lava", help="LAVA job definitions that run the test plan "
                        "on LAVA's qemu device type (and arm64 on a Raspberry Pi 4)")
    options.add_kernel_args(sp)
    sp.add_argument("--url",
                    help="where LAVA fetches the files from (http://... or file://DIR)")
    sp.add_argument("--out", help="directory for the files and jobs")
    sp.add_argument("--run", action="store_true",
                    help="run the qemu job here with Debian's lava-dispatcher (lava-run "
                    "in a Debian 12 root under WORK/lava; needs root)")
    sp.add_argument("--dtb-url", help="the board's device tree (default URL/"
                    "bcm2711-rpi-4-b.dtb)")
    sp.add_argument("--only", help="comma-separated programs of the plan to run "
                    "(default: the whole plan of lab test)")
    sp.add_argument("--no-kvm", action="store_true",
                    help="x86_64: the qemu job runs the guest under TCG (a worker "
                    "without a usable /dev/kvm)")
    sp.set_defaults(fn=cmd_lava)


def cmd_lava(args):
    from pathlib import Path

    from ..outputs import lava
    a = args.arch[0] if args.arch else "x86_64"
    f = args.flavour[0] if args.flavour else "patched"
    only = set(args.only.split(",")) if args.only else None
    if args.run:
        from ..commands import lavarun
        return lavarun.main(a, f, only=only)
    if not args.url or not args.out:
        raise LabError("lab lava needs --url and --out (or --run)")
    lava.write(a, f, args.url, Path(args.out).resolve(), args.dtb_url, only=only,
               kvm=not args.no_kvm)
    return 0
