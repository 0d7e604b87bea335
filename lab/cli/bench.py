# SPDX-License-Identifier: GPL-2.0-only
"""lab bench, lab report: the bench (or a bundle of it for a machine of its
own), and the report of a bench directory again."""

from ..core import config
from ..core.util import LabError
from . import options


def add_parser(sub):
    sp = sub.add_parser("bench", help="benchmark comparison: switch off vs on (and "
                        "stock, with --stock)")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-w", "--workload", action="append", help="workload (repeatable)")
    sp.add_argument("--quick", action="store_true",
                    help="small scale, fewer repeats (for named workloads)")
    sp.add_argument("--full", action="store_true",
                    help="every workload at upstream's scale (several hours on 2 "
                    "cores); without it and without -w, the main job: the headline "
                    "table's workloads (not its controls) at the quick scale, 3 runs "
                    "per mode")
    sp.add_argument("--repeats", type=options.at_least_one,
                    help="maximum repeats per measurement (1 or more)")
    sp.add_argument("--min-repeats", type=options.at_least_one,
                    help="repeats every measurement gets, however small its spread "
                    "(1 or more)")
    sp.add_argument("--bundle", metavar="DIR",
                    help="write the workload programs, their plan (--repeats of "
                    "each mode, default 3) and run-here.sh into DIR, to run on a "
                    "machine booted with a foliobatch kernel; no boot here")
    sp.add_argument("--stock", action="store_true",
                    help="build and boot the stock kernels too, and check each "
                    "workload's switch off against stock 6.12 (two more kernel "
                    "builds and boots: the README's tables are measured with it)")
    sp.add_argument("--kernel-config", choices=("lab", "debian"), default="lab",
                    help="the kernels' config: the lab's (default) or Debian's own "
                    "(the debian build variant: Debian's pinned config, the guest's "
                    "drivers built in; kernels of about twice the lab's objects)")
    sp.add_argument("--no-cache", action="store_true",
                    help="with --stock, boot the stock kernel afresh even where an "
                    "earlier bench "
                    "stored its runs for the same kernel, image, plan and QEMU")
    sp.add_argument("--list", action="store_true",
                    help="list the workloads (their modes and arches) and exit")
    sp.set_defaults(fn=cmd_bench)

    sp = sub.add_parser("report", help="make the report of a bench directory "
                        "(runs.json) again, or of run-here.sh's output")
    sp.add_argument("dir", nargs="?", help="work/results/bench-<time> or a copy of "
                    "one, or the directory run-here.sh wrote (bench.log, host.txt)")
    sp.add_argument("--history", action="store_true",
                    help="make docs/results.md from the measurements stored in "
                    "docs/results/ (writing nothing into their directories) and the "
                    "README's headline tables from those docs/results/headline.toml "
                    "names")
    sp.add_argument("--tests", nargs="?", const="newest", metavar="RESULTS",
                    help="docs/results/test-summary.json and the README's counts from "
                    "a stored full 'lab test' run that passed (default: the newest "
                    "work/results/test-*.json; a partial or failed run is refused)")
    sp.add_argument("--patches", action="store_true",
                    help="docs/patches.md: each patch with its upstream, switch, guest "
                    "tests and bench workloads (lab/guest/coverage.py)")
    sp.add_argument("--configs", action="store_true",
                    help="docs/configs.md: where the lab's kernels differ from Debian's "
                    "pinned configs, with configs/differences.tsv's reasons")
    sp.set_defaults(fn=cmd_report)


def cmd_bench(args):
    from ..commands import bench
    if args.list:
        bench.list_workloads()
        return 0
    if args.bundle:
        from pathlib import Path

        from ..commands import here
        arches = options.arches(args)
        if len(arches) != 1:
            raise LabError("--bundle needs one arch (-a x86_64 or -a arm64)")
        here.bundle(Path(args.bundle), arches[0], args.workload, quick=args.quick,
                    reps=args.repeats or 3)
        return 0
    if args.full and (args.workload or args.quick):
        import sys
        print("lab bench: error: --full runs every workload at upstream's scale: "
              "not with -w or --quick", file=sys.stderr)
        return 2        # a usage error, as argparse's own
    return bench.main(options.arches(args), workloads=args.workload, quick=args.quick,
                      repeats=args.repeats, min_repeats=args.min_repeats,
                      use_cache=not args.no_cache, full=args.full,
                      variant="debian" if args.kernel_config == "debian" else "default",
                      stock=args.stock)


def cmd_report(args):
    from pathlib import Path

    from ..commands import reportdir
    if args.configs:
        reportdir.configs()
        return 0
    if args.patches:
        reportdir.patches()
        return 0
    if args.tests:
        reportdir.tests(None if args.tests == "newest" else Path(args.tests))
        return 0
    if args.history == bool(args.dir):
        raise LabError("lab report: give a bench directory, or --history")
    if args.history:
        reportdir.history()
    else:
        reportdir.report_dir(Path(args.dir))
    return 0
