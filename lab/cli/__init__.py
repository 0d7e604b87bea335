"""lab: the foliobatch lab's command line.

  lab deps [--install]        check/install host dependencies
  lab source fetch|apply|export|checkpatch
  lab build [-a ARCH] [-f FLAVOUR] [-v VARIANT]
  lab kernel -a ARCH -f FLAVOUR [-v VARIANT]   print a built image's path
  lab image [-a ARCH]         build the guest initramfs
  lab boot -a ARCH -f FLAVOUR [--run CMD] [--icount] ...
  lab test [-a ARCH] [-v VARIANT] [--only NAME,...] [--no-cache] ...
  lab bench [-a ARCH] [-w WORKLOAD] [--quick] [--repeats N] [--no-cache]
  lab bench --bundle DIR -a ARCH [-w WORKLOAD] [--quick] [--repeats N]
                              the workloads and run-here.sh, for a machine
                              booted with a foliobatch kernel
  lab report DIR              the report of a bench directory again, or of
                              a directory run-here.sh wrote
  lab harden [-a ARCH] [-v VARIANT] [--minutes M] [--round S] [--short]
  lab profile -a ARCH -w WORKLOAD [-m MODE ...] [--quick]
                              instructions per kernel function, stock vs patched
  lab fresh                   run .ci/run in a clean Debian 12 root (mmdebstrap)
  lab export --debian DIR     the series as a quilt queue for Debian's linux package
  lab lava -a ARCH -f FLAVOUR --url URL --out DIR [--only P,...] [--no-kvm]
                              LAVA jobs (qemu, and a Raspberry Pi 4) for the test plan
  lab lava --run -a ARCH [-f FLAVOUR] [--only P,...]
                              run the qemu job here with Debian's lava-dispatcher
  lab check [--all] [-k NAME] [--full|--quick] [--no-cache] [--list]
                              build the series in more configs and arches
"""

import argparse
import sys

from ..core import config
from ..core.util import LabError, say


def _arches(args):
    names = args.arch or list(config.ARCHES)
    for n in names:
        config.arch(n)
    return names


def _flavours(args):
    names = args.flavour or list(config.FLAVOURS)
    for n in names:
        if n not in config.FLAVOURS:
            raise LabError(f"unknown flavour '{n}' (known: {', '.join(config.FLAVOURS)})")
    return names


def cmd_deps(args):
    from ..core import deps
    deps.install() if args.install else deps.check()
    return 0


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


def cmd_build(args):
    from ..kernel import build, source
    if args.each_commit:
        failed = []
        for a in _arches(args):
            failed += build.each_commit(a, args.variant)
        return 1 if failed else 0
    source.apply()
    for a in _arches(args):
        for f in _flavours(args):
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


def cmd_image(args):
    from ..guest import image
    from ..kernel import source
    source.fetch()
    for a in _arches(args):
        print(image.build(a))
    return 0


def cmd_boot(args):
    from ..guest import run
    from ..kernel import build
    a = args.arch[0] if args.arch else "x86_64"
    f = args.flavour[0] if args.flavour else "patched"
    kernel = build.image_path(a, args.variant, f)
    if not kernel.exists():
        raise LabError(f"{kernel} is not built; run 'lab build -a {a} -f {f}'")
    plan = ". /lab/lib.sh\n" + (args.run or "uname -a; cat /proc/cmdline") + "\n"
    b = run.boot(a, kernel, plan, {"LAB_ARCH": a, "LAB_FLAVOUR": f,
                                   "LAB_VARIANT": args.variant},
                 f"{a}-{args.variant}-{f}-manual", mem_mb=args.mem, cpus=args.cpus,
                 append=args.append, icount=args.icount, timeout=args.timeout,
                 echo=print)
    say(f"exit {b.exit_code}; console saved in {b.console}")
    say("qemu: " + " ".join(b.cmdline))
    return 0 if b.exit_code == 0 else 1


def cmd_test(args):
    import threading

    from ..commands import harden, test
    from ..core.tally import Tally
    from ..kernel import build, check, export
    only = set(args.only.split(",")) if args.only else None
    arches = _arches(args)
    tally = Tally()
    harden_too = not args.no_harden and not only
    test.main(tally, arches, args.variant, pytest=not args.no_pytest,
              own=not args.no_own, upstream=not args.no_upstream, only=only,
              use_cache=not args.no_cache,
              later=harden.short_kernels(arches) if harden_too else (),
              jobs=args.jobs)
    if not only:
        export.test_row(tally)
    checker = None
    if not args.no_check and not only:
        # The check leaves only compile: they run beside the nosplit boot
        # and the load, once the kernels those boot are built (one build
        # at a time).
        if harden_too:
            for kernel in harden.short_kernels(arches):
                test.guarded(tally, f"{kernel[0]}/{kernel[1]}/lab", build.build, *kernel)
        checker = threading.Thread(target=test.guarded, name="check",
                                   args=(tally, "check/lab", check.ci_form, tally),
                                   kwargs={"use_cache": not args.no_cache})
        checker.start()
    if harden_too:
        for arch_name, variant, _ in harden.short_kernels(arches):
            test.nosplit_check(tally, arch_name, variant)
        harden.short_form(tally, arches)
    if checker:
        checker.join()
    if args.kcidb:
        from pathlib import Path

        from ..outputs import kcidb
        nb, nt = kcidb.write(tally.rows, Path(args.kcidb))
        say(f"KCIDB I/O: {nb} builds, {nt} tests in {args.kcidb}")
    return tally.finish(tally.save("test"))


def cmd_bench(args):
    from ..commands import bench
    if args.bundle:
        from pathlib import Path

        from ..commands import here
        arches = _arches(args)
        if len(arches) != 1:
            raise LabError("--bundle needs one arch (-a x86_64 or -a arm64)")
        here.bundle(Path(args.bundle), arches[0], args.workload, quick=args.quick,
                    reps=args.repeats or 3)
        return 0
    return bench.main(_arches(args), workloads=args.workload, quick=args.quick,
                      repeats=args.repeats, min_repeats=args.min_repeats,
                      use_cache=not args.no_cache)


def cmd_report(args):
    from pathlib import Path

    from ..commands import reportdir
    reportdir.report_dir(Path(args.dir))
    return 0


def cmd_profile(args):
    from ..commands import profile
    return profile.main(_arches(args), args.workload, modes=args.mode or ["off"],
                        quick=args.quick, top=args.top)


def cmd_harden(args):
    from ..commands import harden
    from ..guest import suites
    minutes, round_s, suite = args.minutes, args.round, not args.no_suite
    variant = args.variant or "debug"
    if args.short:
        minutes, round_s, suite = suites.SHORT_MINUTES, suites.SHORT_ROUND, False
        variant = args.variant or suites.SHORT_VARIANT
    if minutes <= 0 or round_s <= 0:
        raise LabError("--minutes and --round must be positive")
    return harden.main(_arches(args), variant, minutes, round_s, suite)


def cmd_fresh(args):
    from ..commands import fresh
    return fresh.main(args.run)


def cmd_export(args):
    from pathlib import Path

    from ..kernel import export
    export.write(Path(args.debian).resolve())
    return 0


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


def cmd_check(args):
    from ..kernel import check
    if args.list:
        check.list_variants()
        return 0
    if args.full and args.quick:
        raise LabError("--full and --quick contradict each other")
    return check.main(args.names, everything=args.all, full=args.full,
                      use_cache=not args.no_cache, quick=args.quick)


def parser():
    p = argparse.ArgumentParser(prog="lab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, flavour=True):
        sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES),
                        help="arch (repeatable; default: all)")
        if flavour:
            sp.add_argument("-f", "--flavour", action="append",
                            choices=list(config.FLAVOURS),
                            help="stock or patched (repeatable; default: both)")
        sp.add_argument("-v", "--variant", default="default", choices=list(config.VARIANTS))

    sp = sub.add_parser("deps", help="check or install host dependencies")
    sp.add_argument("--install", action="store_true")
    sp.set_defaults(fn=cmd_deps)

    sp = sub.add_parser("source", help="fetch/apply/export the kernel source and series")
    sp.add_argument("action", choices=["fetch", "apply", "export", "checkpatch"])
    sp.add_argument("--force", action="store_true", help="re-apply even if unchanged")
    sp.set_defaults(fn=cmd_source)

    sp = sub.add_parser("build", help="build kernels; prints image paths")
    common(sp)
    sp.add_argument("--each-commit", action="store_true",
                    help="build every commit of the series (bisectability)")
    sp.set_defaults(fn=cmd_build)

    sp = sub.add_parser("kernel", help="print the path of a built kernel image")
    common(sp)
    sp.set_defaults(fn=cmd_kernel)

    sp = sub.add_parser("image", help="build the guest initramfs")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.set_defaults(fn=cmd_image)

    sp = sub.add_parser("boot", help="boot a built kernel and run a command")
    common(sp)
    sp.add_argument("--run", help="shell command(s) to run in the guest")
    sp.add_argument("--append", default="", help="extra kernel command line")
    sp.add_argument("--mem", type=int, default=2048, help="MiB (default 2048)")
    sp.add_argument("--cpus", type=int, default=2)
    sp.add_argument("--icount", action="store_true",
                    help="-icount shift=0,sleep=off (instruction-time)")
    sp.add_argument("--timeout", type=int, default=600)
    sp.set_defaults(fn=cmd_boot)

    sp = sub.add_parser("test", help="run the host and guest test suites")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-v", "--variant", default="default", choices=list(config.VARIANTS))
    sp.add_argument("--only", help="comma-separated program names to run")
    sp.add_argument("--no-pytest", action="store_true")
    sp.add_argument("--no-own", action="store_true", help="skip the project's tests")
    sp.add_argument("--no-upstream", action="store_true", help="skip upstream selftests")
    sp.add_argument("--no-harden", action="store_true",
                    help="skip the short form of 'lab harden' (debug kernels)")
    sp.add_argument("--kcidb", metavar="FILE",
                    help="also write the builds and tests in KCIDB I/O format "
                    "(validated with kcidb-io)")
    sp.add_argument("-j", "--jobs", type=int, default=2,
                    help="arches tested at the same time (default 2; 1: one "
                    "after the other)")
    sp.add_argument("--no-check", action="store_true",
                    help="skip the leaves of 'lab check' that lab test runs "
                    "(riscv64 mm/, x86_64 without PT_RECLAIM, directories only)")
    sp.add_argument("--no-cache", action="store_true",
                    help="boot the stock kernels even when a stored boot of the same "
                    "kernel, image, plan and QEMU arguments exists")
    sp.set_defaults(fn=cmd_test)

    sp = sub.add_parser("bench", help="benchmark comparison: switch off vs on, stock")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-w", "--workload", action="append", help="workload (repeatable)")
    sp.add_argument("--quick", action="store_true", help="small scale, fewer repeats")
    sp.add_argument("--repeats", type=int, help="maximum repeats per measurement")
    sp.add_argument("--min-repeats", type=int,
                    help="repeats every measurement gets, however small its spread")
    sp.add_argument("--bundle", metavar="DIR",
                    help="write the workload programs, their plan (--repeats of "
                    "each mode, default 3) and run-here.sh into DIR, to run on a "
                    "machine booted with a foliobatch kernel; no boot here")
    sp.add_argument("--no-cache", action="store_true",
                    help="boot the stock kernel afresh even where an earlier bench "
                    "stored its runs for the same kernel, image, plan and QEMU")
    sp.set_defaults(fn=cmd_bench)

    sp = sub.add_parser("report", help="make the report of a bench directory "
                        "(runs.json) again, or of run-here.sh's output")
    sp.add_argument("dir", help="work/results/bench-<time> or a copy of one, or "
                    "the directory run-here.sh wrote (bench.log, host.txt)")
    sp.set_defaults(fn=cmd_report)

    sp = sub.add_parser("profile", help="instructions per kernel function of one "
                        "bench workload, stock vs patched (QEMU plugin)")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-w", "--workload", required=True)
    sp.add_argument("-m", "--mode", action="append",
                    help="a mode of the workload to boot the patched kernel in "
                    "(repeatable; default: off); the first is compared with stock "
                    "function by function")
    sp.add_argument("--quick", action="store_true", help="the bench's small scale")
    sp.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    sp.set_defaults(fn=cmd_profile)

    sp = sub.add_parser("harden", help="debug kernels under stress-ng, trinity and "
                        "switch flips")
    sp.add_argument("-a", "--arch", action="append", choices=list(config.ARCHES))
    sp.add_argument("-v", "--variant", choices=list(config.VARIANTS),
                    help="default: debug; with --short, the kernel 'lab test' "
                    "loads (suites.SHORT_VARIANT)")
    sp.add_argument("--minutes", type=float, default=30.0,
                    help="minutes of load per arch (default 30)")
    sp.add_argument("--round", type=int, default=300,
                    help="seconds per round; rounds alternate LRU and MGLRU (default 300)")
    sp.add_argument("--no-suite", action="store_true",
                    help="skip the boot that runs the whole guest suite first")
    sp.add_argument("--short", action="store_true",
                    help="the CI form: no suite, a few minutes of load")
    sp.set_defaults(fn=cmd_harden)

    sp = sub.add_parser("fresh", help="run .ci/run in a clean Debian 12 root made "
                        "with mmdebstrap (what a new machine does)")
    sp.add_argument("--run", default="bash .ci/run",
                    help="command run in the clone inside the root (default: "
                    "bash .ci/run)")
    sp.set_defaults(fn=cmd_fresh)

    sp = sub.add_parser("export", help="the series as a quilt queue for Debian's "
                        "linux source package")
    sp.add_argument("--debian", required=True, metavar="DIR",
                    help="write DIR/debian/patches/features/all/foliobatch/*.patch, "
                    "DIR/series-lines and DIR/config-lines")
    sp.set_defaults(fn=cmd_export)

    sp = sub.add_parser("lava", help="LAVA job definitions that run the test plan "
                        "on LAVA's qemu device type (and arm64 on a Raspberry Pi 4)")
    common(sp)
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

    sp = sub.add_parser("check", help="build the series in more configs and arches "
                        "(Debian, defconfig, lab config variants); new warnings")
    sp.add_argument("--all", action="store_true",
                    help="every variant (default: the cheap ones, marked * by --list)")
    sp.add_argument("-k", dest="names", action="append", metavar="NAME",
                    help="variant NAME or ARCH/NAME, shell wildcards allowed (repeatable)")
    sp.add_argument("--full", action="store_true",
                    help="build all of vmlinux for the variants that otherwise build "
                    "some directories only")
    sp.add_argument("--quick", action="store_true",
                    help="lab variants build mm/, arch/ARCH/mm/ and the directories "
                    "of the changed files, not the whole kernel (what lab test runs)")
    sp.add_argument("--no-cache", action="store_true",
                    help="build even when a leaf's stored verdict has the same inputs")
    sp.add_argument("--list", action="store_true", help="list the variants")
    sp.set_defaults(fn=cmd_check)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except LabError as e:
        print(f"lab: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lab: interrupted", file=sys.stderr)
        return 130
