# SPDX-License-Identifier: GPL-2.0-only
"""lab boot: boot a built kernel and run a command in the guest."""

from ..core.util import LabError, say
from . import options


def add_parser(sub):
    sp = sub.add_parser("boot", help="boot a built kernel and run a command")
    options.add_kernel_args(sp)
    sp.add_argument("--run", help="shell command(s) to run in the guest")
    sp.add_argument("--append", default="", help="extra kernel command line")
    sp.add_argument("--mem", type=int, default=2048, help="MiB (default 2048)")
    sp.add_argument("--cpus", type=int, default=2)
    sp.add_argument("--icount", action="store_true",
                    help="-icount shift=0,sleep=off (instruction-time)")
    sp.add_argument("--timeout", type=int, default=600)
    sp.set_defaults(fn=cmd_boot)


def cmd_boot(args):
    from ..guest import run
    from ..kernel import build
    a = args.arch[0] if args.arch else "x86_64"
    f = args.flavour[0] if args.flavour else "patched"
    kernel = build.image_path(a, args.variant, f)
    if not kernel.exists():
        raise LabError(f"{kernel} is not built; run 'lab build -a {a} -f {f}'")
    plan = ". /lab/lib.sh\n" + (args.run or "uname -a; cat /proc/cmdline") + "\n"
    spec = run.BootSpec(arch=a, kernel=kernel, plan=plan,
                        env={"LAB_ARCH": a, "LAB_FLAVOUR": f, "LAB_VARIANT": args.variant},
                        name=f"{a}-{args.variant}-{f}-manual", mem_mb=args.mem,
                        cpus=args.cpus, append=args.append, icount=args.icount,
                        timeout=args.timeout)
    b = run.boot(spec, echo=print)
    say(f"exit {b.exit_code}; console saved in {b.console}")
    say("qemu: " + " ".join(b.cmdline))
    return 0 if b.exit_code == 0 else 1
