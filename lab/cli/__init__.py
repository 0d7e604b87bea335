# SPDX-License-Identifier: GPL-2.0-only
"""lab: the foliobatch lab's command line.

  lab deps [--install]        check/install host dependencies
  lab source fetch|apply|export|checkpatch
  lab build [-a ARCH] [-f FLAVOUR] [-v VARIANT]
  lab kernel -a ARCH -f FLAVOUR [-v VARIANT]   print a built image's path
  lab image [-a ARCH]         build the guest initramfs
  lab boot -a ARCH -f FLAVOUR [--run CMD] [--icount] ...
  lab test [-a ARCH] [-v VARIANT] [--only NAME,...] [--no-cache] ...
  lab test --list             the test programs --only may name
  lab bench [-a ARCH] [-w WORKLOAD] [--quick] [--repeats N] [--no-cache]
            [--stock] [--full] [--min-repeats N] [--kernel-config lab|debian]
  lab bench --list            the workloads, their modes and arches
  lab bench --bundle DIR -a ARCH [-w WORKLOAD] [--quick] [--repeats N]
                              the workloads and run-here.sh, for a machine
                              booted with a foliobatch kernel
  lab report DIR              the report of a bench directory again, or of
                              a directory run-here.sh wrote
  lab report --history        docs/results.md from the runs in docs/results/
  lab report --configs        docs/configs.md: the lab's kernels against Debian's configs
  lab report --patches        docs/patches.md: each patch, its upstream, tests, workloads
  lab report --tests [FILE]   the README's test counts from a stored full 'lab test'
  lab harden [-a ARCH] [-v VARIANT] [--minutes M] [--round S] [--short]
  lab profile -a ARCH -w WORKLOAD [-m MODE ...] [--quick]
                              instructions per kernel function, stock vs patched
  lab codegen [-a ARCH] [--object OBJ ...] [--stock-dir DIR --patched-dir DIR]
                              the functions the series claims compile as
                              6.12's, compared in the built kernels (objdump)
  lab fresh                   run .ci/run in a clean Debian 12 root (mmdebstrap)
  lab export --debian DIR     the series as a quilt queue for Debian's linux package
  lab lava -a ARCH -f FLAVOUR --url URL --out DIR [--only P,...] [--no-kvm]
                              LAVA jobs (qemu, and a Raspberry Pi 4) for the test plan
  lab lava --run -a ARCH [-f FLAVOUR] [--only P,...]
                              run the qemu job here with Debian's lava-dispatcher
  lab check [--all] [-k NAME] [--full|--quick] [--no-cache] [--record] [--list]
                              build the series in more configs and arches
  lab --version               the lab's commit and the tree id of patches/

Exit status: 0 done (every test or run passed), 1 a test, check or bench
run failed, 2 a usage error (an unknown option or a bad value), 3 a lab
error (one 'lab: error:' line: input refused before the work, or a step
that could not go on), 130 interrupted.
"""

import argparse
import signal
import sys

from ..core.util import LabError, stop_children
from . import (bench, boot, build, check, codegen, deps, export, fresh, harden, image,
               lava, profile, source, test)

# Each module adds its command(s) to the parser and runs them (cmd_*), in
# the order 'lab --help' lists them.
COMMANDS = (deps, source, build, image, boot, test, bench, profile, codegen, harden,
            fresh, export, lava, check)

# The exit status of a usage error (argparse's own) and of a LabError: a
# script can tell a wrong command line from a lab that could not go on,
# and both from a failed test or run (1).
USAGE_ERROR = 2
LAB_ERROR = 3


def version():
    """'lab --version': the lab's commit (+changes when the work tree
    differs from it) and the git tree id of its patches/."""
    from ..core.tally import patches_tree, repo_commit
    return f"lab {repo_commit()}\npatches_tree {patches_tree()}"


class _Version(argparse.Action):
    """--version, worked out only when asked for (it runs git)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0,
                         help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version())
        parser.exit()


def parser():
    p = argparse.ArgumentParser(prog="lab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action=_Version,
                   help="print the lab's commit and the tree id of patches/, and exit")
    sub = p.add_subparsers(dest="cmd", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    return guarded(args.fn, args)


def _stop(signum, frame):
    """SIGTERM, and Ctrl-C under guarded(): the first one stops the lab;
    those after it are ignored from here on, before the KeyboardInterrupt
    even starts on its way.  Ignoring them only in guarded()'s clean-up
    left a window (its error message, a bench's report) in which a second
    signal raised a KeyboardInterrupt inside the clean-up itself, which
    then ran no further: Python's signal.signal() runs a pending handler
    before it changes one."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is _stop:
            signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt


def _ignore_stops():
    """Ignore SIGINT and SIGTERM; return whether one came in just before
    and stopped the lab on the way (signal.signal() first runs a pending
    handler: _stop then raises, after it has ignored the rest)."""
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        return False
    except KeyboardInterrupt:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        return True


def guarded(fn, *args):
    """Run a command's function: a LabError ends it with exit LAB_ERROR and
    one line; Ctrl-C or SIGTERM with exit 130 (a bench first writes the report
    of the runs it finished).  Whatever ends it, no QEMU, make or other
    child the lab started is left running, and none is started after it
    (threads still running then fail at their next command and end).  The
    signal handlers are those of before when it returns."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGTERM, _stop)
    # Ctrl-C as Python has it by default (a lab started in the background
    # inherits SIGINT ignored: it stays so)
    if handlers[signal.SIGINT] is signal.default_int_handler:
        signal.signal(signal.SIGINT, _stop)
    code = None
    try:
        code = fn(*args)
    except LabError as e:
        print(f"lab: error: {e}", file=sys.stderr)
        code = LAB_ERROR
    except KeyboardInterrupt:
        code = 130
    finally:
        # a second Ctrl-C or SIGTERM must not cut the clean-up short, and
        # one that comes as the command ends still stops it
        if _ignore_stops():
            code = 130
        if code == 130:
            print("lab: interrupted", file=sys.stderr)
        n = stop_children()
        if n:
            print(f"lab: stopped {n} process(es) it had started", file=sys.stderr)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return code
