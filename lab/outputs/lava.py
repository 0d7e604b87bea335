# SPDX-License-Identifier: GPL-2.0-only
"""LAVA: job definitions that run the lab's test plan on a LAVA lab.

'lab lava -a ARCH -f FLAVOUR --url URL --out DIR' writes, for a kernel the
lab has built:

  DIR/<arch>-<flavour>-<image name>   the kernel image;
  DIR/<arch>-<flavour>-initrd.cpio    the guest initramfs with the test
                                      plan of 'lab test' in it, so the
                                      guest runs the suites as it boots;
  DIR/<arch>-xfs.img, <arch>-swap.img the plan's scratch disks (sparse
                                      files: a fresh XFS, and a swap disk);
  DIR/<arch>-<flavour>-qemu.yaml      a job for LAVA's qemu device type
                                      (what KernelCI and LKFT run guests
                                      on): deploy to tmpfs, boot with
                                      method qemu, and a 'monitors' test
                                      action that reads the plan's KTAP
                                      lines between LAB-READY and LAB-EXIT;
  DIR/arm64-<flavour>-bcm2711-rpi-4-b.yaml   (arm64) the same plan on a
                                      Raspberry Pi 4 in a LAVA lab: deploy
                                      to tftp, boot with u-boot.

URL is where the lab will fetch the files from (an http directory, or
file:// for a dispatcher on this machine).  Every job is checked with
the job schema of Debian's lava-common before it is written.

The lab's kernels are configured for QEMU's machines (virtio, no board
drivers): the board job is the shape a LAVA lab needs, and takes a kernel
built with the board's config (the 'lab check' Debian arm64 config has
it) in place of the lab's.
"""

import shutil

from ..core import config
from ..core.util import LabError, say
from ..guest import image, run, suites
from ..kernel import build

# the plan's markers (guest/init, guest/lib.sh) and its KTAP result lines
START, END = "LAB-READY", "LAB-EXIT"
PATTERN = r"(?P<result>(not ok|ok)) \d+ (?P<test_case_id>\S+)"
FIXUP = {"ok": "pass", "not ok": "fail"}
# The boot action ends at this line, so that the monitor, not the boot,
# sees the plan's start marker.  LAVA's auto-login first waits for its
# kernel-start-message ("Linux version [0-9]") and only then for the job's
# prompts, so the prompt must be a later line: the kernel's own as it
# starts the initramfs' /init.
BANNER = "Run /init as init process"

# LAVA's qemu device type (lava-server's qemu.jinja2) takes -machine and
# -cpu from the context for arm64, but for amd64 always runs '-cpu host
# -enable-kvm' unless the context says no_kvm: the machine goes into
# extra_options there, and -cpu max with no_kvm (qemu_job(kvm=False)).
QEMU_CONTEXT = {
    "x86_64": {"arch": "amd64", "memory": 2048, "extra_options": ["-machine q35", "-smp 2"]},
    "arm64": {"arch": "arm64", "machine": "virt", "cpu": "max", "memory": 2048,
              "extra_options": ["-smp 2"]},
}
BOARD = "bcm2711-rpi-4-b"


def kernel_args(arch_name):
    a = config.arch(arch_name)
    return f"console={a.console} panic=-1"


def monitors(name, minutes):
    return {"test": {"timeout": {"minutes": minutes},
                     "monitors": [{"name": name, "start": START, "end": END,
                                   "pattern": PATTERN, "fixupdict": dict(FIXUP)}]}}


# the plan's scratch disks (run.boot() gives a boot the same): a fresh XFS
# on /mnt/xfs and a swap disk, found by their serial numbers
DISKS = (("xfs", "labxfs", run.XFS_MB, True), ("swap", "labswap", run.SWAP_MB, False))


def disk_arg(arch_name, name, serial, index):
    dev = config.arch(arch_name).blk_device
    return (f"-drive file={{{name}}},if=none,id=d{index},format=raw "
            f"-device {dev},drive=d{index},serial={serial}")


def qemu_job(arch_name, flavour, kernel_url, initrd_url, disk_urls=None, minutes=90,
             kvm=True):
    """The job for LAVA's qemu device type; disk_urls maps the DISKS'
    names to their images; kvm=False makes an x86_64 guest run under TCG
    (a worker without a usable /dev/kvm)."""
    context = {k: list(v) if isinstance(v, list) else v
               for k, v in QEMU_CONTEXT[arch_name].items()}
    if arch_name == "x86_64" and not kvm:
        context["no_kvm"] = True
        context["extra_options"].append("-cpu max")
    append = kernel_args(arch_name)
    disks = {name: {"image_arg": disk_arg(arch_name, name, serial, i),
                    "url": disk_urls[name]}
             for i, (name, serial, _, _) in enumerate(DISKS) if disk_urls}
    return {
        "device_type": "qemu",
        "job_name": f"foliobatch {arch_name} {flavour} lab test plan",
        "visibility": "public",
        "priority": "medium",
        "timeouts": {"job": {"minutes": minutes + 15}, "action": {"minutes": minutes},
                     "connection": {"minutes": 2}},
        "context": context,
        "actions": [
            {"deploy": {"to": "tmpfs", "timeout": {"minutes": 10}, "images": {
                "kernel": {"image_arg": f"-kernel {{kernel}} -append '{append}'",
                           "url": kernel_url},
                "ramdisk": {"image_arg": "-initrd {ramdisk}", "url": initrd_url},
                **disks}}},
            {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"minutes": 5},
                      "prompts": [BANNER]}},
            monitors(f"foliobatch-{flavour}", minutes),
        ],
    }


def board_job(flavour, kernel_url, initrd_url, dtb_url, minutes=90):
    """The same plan on a Raspberry Pi 4 of a LAVA lab (u-boot, tftp)."""
    return {
        "device_type": BOARD,
        "job_name": f"foliobatch arm64 {flavour} lab test plan on {BOARD}",
        "visibility": "public",
        "priority": "medium",
        "timeouts": {"job": {"minutes": minutes + 15}, "action": {"minutes": minutes},
                     "connection": {"minutes": 2}},
        "context": {"extra_kernel_args": "panic=-1"},
        "actions": [
            {"deploy": {"to": "tftp", "timeout": {"minutes": 10},
                        "kernel": {"url": kernel_url, "type": "image"},
                        "ramdisk": {"url": initrd_url, "header": "u-boot"},
                        "dtb": {"url": dtb_url}}},
            {"boot": {"method": "u-boot", "commands": "ramdisk",
                      "timeout": {"minutes": 5}, "prompts": [BANNER]}},
            monitors(f"foliobatch-{flavour}", minutes),
        ],
    }


def validate(job):
    """Raise LabError unless lava-common's job schema accepts job."""
    try:
        from lava_common.schemas import validate as lava_validate  # noqa: PLC0415
    except ImportError as e:
        raise LabError("lava-common is not installed; run 'lab deps --install'") from e
    try:
        lava_validate(job, strict=True)
    except Exception as e:  # noqa: BLE001 - voluptuous' errors
        raise LabError(f"LAVA job '{job.get('job_name')}' is not valid: {e}") from e


def write(arch_name, flavour, url, out, dtb_url=None, only=None, kvm=True):
    """Write the files of a LAVA run of the test plan (only: the programs of
    it to run, all by default); return the job files."""
    import yaml  # noqa: PLC0415 - python3-yaml comes with lava-common

    kernel = build.image_path(arch_name, "default", flavour)
    if not kernel.exists():
        raise LabError(f"{kernel} is not built; run 'lab build -a {arch_name} "
                       f"-f {flavour}'")
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{arch_name}-{flavour}"
    kname = f"{stem}-{kernel.name}"
    shutil.copyfile(kernel, out / kname)
    plan = suites.test_plan(arch_name, only=only)
    runs = suites.plan_programs(plan)
    if only and len(runs) != len(only):
        raise LabError(f"--only {','.join(sorted(only))}: the plan of {arch_name} has "
                       f"{len(runs)} of them")
    image.plan_cpio(arch_name, plan, {"LAB_ARCH": arch_name, "LAB_FLAVOUR": flavour,
                                      "LAB_VARIANT": "default"},
                    out / f"{stem}-initrd.cpio")
    shutil.rmtree(out / f"{stem}-initrd.d", ignore_errors=True)
    for name, _, size_mb, xfs in DISKS:
        run.make_disk(out / f"{arch_name}-{name}.img", size_mb, xfs=xfs)
    base = url.rstrip("/")
    jobs = {f"{stem}-qemu.yaml": qemu_job(
        arch_name, flavour, f"{base}/{kname}", f"{base}/{stem}-initrd.cpio",
        {name: f"{base}/{arch_name}-{name}.img" for name, *_ in DISKS}, kvm=kvm)}
    if arch_name == "arm64":
        jobs[f"{stem}-{BOARD}.yaml"] = board_job(
            flavour, f"{base}/{kname}", f"{base}/{stem}-initrd.cpio",
            dtb_url or f"{base}/{BOARD}.dtb")
    written = []
    for name, job in jobs.items():
        validate(job)
        (out / name).write_text(yaml.safe_dump(job, sort_keys=False))
        written.append(out / name)
    say(f"LAVA jobs: {', '.join(str(w) for w in written)}")
    return written
