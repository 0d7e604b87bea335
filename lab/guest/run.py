# SPDX-License-Identifier: GPL-2.0-only
"""Run: boot one kernel under QEMU with a plan, save the console, return it.

TCG by default (-M virt -cpu max on arm64, -M virt,mte=on for the debug
kernels, whose config has MTE); KVM only when asked and a probe
boot proved that it works.  Benchmarks pass icount=True, which adds
'-icount shift=0,sleep=off' so guest time counts instructions.
"""

import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core import config
from ..core.util import LabError, run, say, spawn
from . import image

READY = "LAB-READY:"
EXIT_RE = re.compile(r"LAB-EXIT: (\d+)")
# sizes of the scratch disks a boot gets unless told otherwise (MiB)
XFS_MB = 1024
SWAP_MB = 1024


@dataclass
class Boot:
    """What a boot produced."""
    console: Path            # saved console log
    exit_code: int | None    # the plan's exit status, None if never reported
    ready: bool              # the guest reached the plan
    timed_out: bool
    wall: float              # host seconds
    cmdline: list = field(default_factory=list)
    stamps: list = field(default_factory=list)   # (host s, line) of BENCH lines
    plan: str = ""           # the shell text the guest ran

    def text(self):
        return self.console.read_text(errors="replace")


def make_disk(path, size_mb, xfs=False):
    """A sparse raw disk; with xfs=True, a fresh XFS made by the host."""
    with open(path, "wb") as f:
        f.truncate(size_mb << 20)
    if xfs:
        if not shutil.which("mkfs.xfs"):
            raise LabError("mkfs.xfs not found: apt-get install xfsprogs")
        run(["mkfs.xfs", "-q", "-f", str(path)], quiet=True)


# kernel command line of an -icount boot (see qemu_cmd())
ICOUNT_APPEND = "sysctl.kernel.hung_task_timeout_secs=0"


def qemu_cmd(arch_name, kernel, initrd, *, mem_mb, cpus, append, disks=(),
             icount=False, accel="tcg", cpu=None, extra=(), variant="default"):
    """The QEMU command line of a kernel of variant; cpu replaces the arch's
    default -cpu model, on the variant's plain machine (arm64's mte=on
    needs a CPU with MTE, which -cpu max has and cortex-a72 has not);
    extra is appended as it is (e.g. a -plugin for 'lab profile')."""
    a = config.arch(arch_name)
    if not shutil.which(a.qemu):
        pkg = "qemu-system-x86" if arch_name == "x86_64" else "qemu-system-arm"
        raise LabError(f"{a.qemu} not found: apt-get install {pkg}")
    debug = variant in config.DEBUG_VARIANTS and not cpu
    machine = list(a.debug_machine if debug else a.machine)
    if cpu:
        machine[machine.index("-cpu") + 1] = cpu
    elif arch_name == "arm64":
        # Pointer authentication with the architected QARMA algorithm is slow
        # under TCG; the implementation-defined one keeps the kernel's PAC
        # instructions (configs/arm64.config) cheap.  Instruction counts
        # (-icount) do not depend on the algorithm.
        machine[machine.index("max")] = "max,pauth-impdef=on"
    if icount:
        # Under -icount sleep=off guest time jumps ahead while every vCPU
        # waits for the host's I/O, so a task blocked on writeback for a
        # few host seconds can look blocked for minutes: the hung-task
        # detector's 120 s means nothing there (Debian's config tripped it
        # in file-reclaim's fsync, stock as patched, and the bench failed).
        append = f"{append} {ICOUNT_APPEND}".strip()
    cmd = [a.qemu, *machine, "-accel", accel, "-smp", str(cpus), "-m", str(mem_mb),
           "-nodefaults", "-no-reboot", "-display", "none", "-serial", "stdio",
           "-monitor", "none", "-kernel", str(kernel), "-initrd", str(initrd),
           "-append", f"console={a.console} panic=-1 {append}".strip()]
    for i, (path, serial) in enumerate(disks):
        cmd += ["-drive", f"file={path},if=none,id=d{i},format=raw,cache=unsafe",
                "-device", f"{a.blk_device},drive=d{i},serial={serial}"]
    if icount:
        cmd += ["-icount", "shift=0,sleep=off"]
    return cmd + list(extra)


def qemu_version(arch_name):
    """The first line of 'qemu-system-* --version' for an arch."""
    a = config.arch(arch_name)
    p = subprocess.run([a.qemu, "--version"], capture_output=True, text=True)
    return p.stdout.splitlines()[0] if p.returncode == 0 else "unknown"


@dataclass(frozen=True, kw_only=True)
class BootSpec:
    """One boot: which kernel, with which plan and guest environment, on
    which machine (QEMU's memory, vCPUs, CPU model, accelerator, -icount
    and extra arguments), with which scratch disks, for how long."""
    arch: str                # lab arch name
    kernel: Path             # the kernel image
    plan: str                # the shell text the guest runs
    env: dict                # the guest's LAB_* variables
    name: str                # names the console log
    mem_mb: int = 2048
    cpus: int = 2
    append: str = ""         # kernel command line, after the console's
    timeout: int = 1200      # host seconds
    icount: bool = False     # -icount shift=0,sleep=off
    xfs_mb: int = XFS_MB     # 0: no XFS disk
    swap_mb: int = SWAP_MB   # 0: no swap disk
    accel: str = "tcg"
    cpu: str | None = None   # replaces the arch's -cpu model
    extra: tuple = ()        # more QEMU arguments


def boot(spec, echo=None):
    """Boot spec (a BootSpec); stream the console to a log; return a Boot.

    echo(line) is called for each console line (progress); the whole
    console is saved in WORK/logs/console-<name>.log.  The machine is the
    one of the kernel's variant, env's LAB_VARIANT (the guest reads the
    same), default if unset.
    """
    arch_name, kernel, plan, env, name = (spec.arch, spec.kernel, spec.plan, spec.env,
                                          spec.name)
    xfs_mb, swap_mb, timeout = spec.xfs_mb, spec.swap_mb, spec.timeout
    logs = config.log_dir()
    console = logs / f"console-{name}.log"
    tmp = Path(tempfile.mkdtemp(prefix=f"boot-{name}-", dir=config.WORK))
    try:
        disks = []
        if xfs_mb:
            make_disk(tmp / "xfs.img", xfs_mb, xfs=True)
            disks.append((tmp / "xfs.img", "labxfs"))
        if swap_mb:
            make_disk(tmp / "swap.img", swap_mb)
            disks.append((tmp / "swap.img", "labswap"))
        # the guest's /init checks that each disk came up (LAB-ERROR if not)
        env = dict(env, LAB_DISKS=" ".join(serial for _, serial in disks))
        initrd = image.plan_cpio(arch_name, plan, env, tmp / "initrd.cpio")
        cmd = qemu_cmd(arch_name, kernel, initrd, mem_mb=spec.mem_mb, cpus=spec.cpus,
                       append=spec.append, disks=disks, icount=spec.icount,
                       accel=spec.accel, cpu=spec.cpu, extra=spec.extra,
                       variant=env.get("LAB_VARIANT", "default"))
        return _run_qemu(cmd, console, timeout, echo, plan)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_qemu(cmd, console, timeout, echo, plan=""):
    t0 = time.monotonic()
    ready = timed_out = False
    code = None
    stamps = []
    with open(console, "w") as log:
        log.write("# " + " ".join(cmd) + "\n")
        p = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT)
        buf = b""
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                timed_out = True
                p.kill()
                break
            r, _, _ = select.select([p.stdout], [], [], min(left, 5))
            if not r:
                if p.poll() is not None:
                    break
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace").rstrip("\r")
                log.write(line + "\n")
                if line.startswith("BENCH"):
                    stamps.append((time.monotonic() - t0, line))
                if line.startswith(READY):
                    ready = True
                m = EXIT_RE.search(line)
                if m:
                    code = int(m.group(1))
                if echo:
                    echo(line)
            log.flush()
        if buf:
            log.write(buf.decode(errors="replace") + "\n")
        p.wait()
        if timed_out:
            log.write(f"\n# lab: killed after {timeout}s\n")
    return Boot(console, code, ready, timed_out, time.monotonic() - t0, cmd,
                stamps, plan)


def kvm_works(arch_name, kernel):
    """Probe once per machine whether KVM boots this arch; cache the answer."""
    host = {"x86_64": "x86_64", "aarch64": "arm64"}.get(os.uname().machine)
    if host != arch_name or not os.path.exists("/dev/kvm"):
        return False
    stamp = config.WORK / f"kvm-probe-{arch_name}"
    if stamp.exists():
        return stamp.read_text().strip() == "yes"
    b = boot(arch_name, kernel, "exit 0\n", {}, f"kvm-probe-{arch_name}",
             mem_mb=512, cpus=1, timeout=60, xfs_mb=0, swap_mb=0, accel="kvm")
    ok = b.exit_code == 0
    stamp.write_text("yes\n" if ok else "no\n")
    say(f"KVM probe boot for {arch_name}: {'works' if ok else 'fails, using TCG'} "
        f"(console: {b.console})")
    return ok
