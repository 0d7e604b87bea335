# SPDX-License-Identifier: GPL-2.0-only
"""Pins, paths and per-architecture facts.  Everything else reads from here."""

import os
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent     # lab/core/config.py
WORK = Path(os.environ.get("FOLIOBATCH_WORK", REPO / "work"))

# The pinned source: Debian's linux-source-6.12 package.
SOURCE_PACKAGE = "linux-source-6.12"
SOURCE_VERSION = "6.12.117-1~deb12u1"
# Its .deb's sha256, as bookworm-security's signed index gives it, and the
# archive's pool directory of the source package, which keeps the .debs of
# a version after the index stops listing it (kernel/source.py; apt's own
# mirror of it while apt lists any version of the package).
SOURCE_DEB_SHA256 = "e849faf31ca3555757f3a8877cb01af92122f744f75d1f3102734651c4e14703"
SOURCE_POOL = "http://deb.debian.org/debian-security/pool/updates/main/l/linux-6.12"
# Debian's own kernel configs of the same source package ('lab check'); one
# .deb per Debian architecture, installed nowhere, unpacked into WORK/dl.
CONFIG_PACKAGE = "linux-config-6.12"
# The sha256 of CONFIG_PACKAGE's .deb, by version and Debian architecture.
# bookworm-security's index lists only the newest linux-config-6.12 (it
# lists older linux-source-6.12 too), so once a newer one is out, apt-get
# cannot download the pinned one by version; the .deb stays in the
# archive's pool, and the lab takes it from there only when it has the
# sha256 pinned here (lab/kernel/debian.py).  Taken from the pool
# 2026-12-02, after 6.12.118-1~deb12u1 replaced it in the index.  The
# configs they hold are the ones apt had verified before: each hashes as
# in the kept verdicts of check/*/debian-* (judged on apt's download), and
# they give docs/configs.md's table (tests/test_distro.py).
CONFIG_DEB_SHA256 = {
    "6.12.117-1~deb12u1": {
        "amd64": "9837dbdf866d58ff9cc64f106dbf0cbf16d1ea6e369b83c338d05e8860224b27",
        "arm64": "5642ad362614657f7393b3999a02d3f33325c13a15227333fe2ef0cdc29d74c8",
    },
}

PATCHES = REPO / "patches"
SERIES = PATCHES / "series"
CONFIGS = REPO / "configs"
GUEST = REPO / "guest"
# 'lab check --record' keeps each leaf's verdict here, with the inputs it
# was judged on, for a later 'lab check' on any machine (kernel/check.py).
CHECK_RECORDS = REPO / "docs" / "results" / "check"

FLAVOURS = ("stock", "patched")
# Worktrees the lab builds beside the flavours, each the patched tree with
# something of its own on top: lab check's mutation leaf (a planted bug).
# A build of one takes the patched flavour's config.
SCRATCH_TREES = ("mutant",)
VARIANTS = ("default", "debug", "nosplit", "debian")
# The variant built from Debian's own config (lab/kernel/debian.py), not
# from tinyconfig and configs/common.config.
DEBIAN_VARIANT = "debian"
# The variants built with configs/debug.config (and <arch>-debug.config).
DEBUG_VARIANTS = ("debug", "nosplit")

# The runtime switches of the series (mm/foliobatch.c), in its order.
SWITCH_DIR = "/sys/kernel/mm/foliobatch"
SWITCHES = ("pt_reclaim", "mremap_batch", "referenced_batch", "unmap_batch",
            "mglru_young_batch", "reclaim_tlb_batch", "mprotect_batch",
            "contpte_early_exit", "mincore_batch", "mbind_batch",
            "anon_unmap_batch")
# Switches a kernel does not show, per arch: their features are not built
# there (contpte_early_exit needs arm64's contiguous PTEs, mincore_batch an
# arch's pte_batch_hint()).
HIDDEN_SWITCHES = {"x86_64": ("contpte_early_exit", "mincore_batch"),
                   "arm64": ()}
# What each switch reads after a boot without foliobatch=, per arch: the
# kernel's defaults (mm/foliobatch.c).  reclaim_tlb_batch starts off unless
# the kernel is built with CONFIG_RECLAIM_TLB_BATCH_DEFAULT_ON, which the
# lab's configs leave off, as Debian's have no such option (patch 0027
# gives the measurements behind that default).  anon_unmap_batch starts off
# too: its series is not merged upstream and writes swap entries (patch
# 0048), so it waits for a review of its own.
DEFAULT_OFF = ("reclaim_tlb_batch", "anon_unmap_batch")
SWITCH_DEFAULTS = {
    arch_name: {s: int(s not in DEFAULT_OFF) for s in SWITCHES
                if s not in HIDDEN_SWITCHES[arch_name]}
    for arch_name in ("x86_64", "arm64")
}
# uname -m in the guest -> lab arch name
UNAME_ARCH = {"x86_64": "x86_64", "aarch64": "arm64"}


@dataclass(frozen=True, kw_only=True)
class Arch:
    """What the lab needs to know of an arch: how to build its kernel and
    how to boot it (declared by name in ARCHES)."""
    name: str            # lab name, also the kernel's ARCH for x86_64
    karch: str           # ARCH= for make
    cross: str           # CROSS_COMPILE= prefix ('' for native)
    image: str           # path of the bootable image inside the build dir
    qemu: str
    machine: list        # -M/-cpu arguments
    debug_machine: list  # the same, for the debug and nosplit variants
    console: str
    deb_arch: str        # Debian architecture name
    blk_device: str      # qemu device model for a virtio disk


ARCHES = {
    "x86_64": Arch(
        name="x86_64", karch="x86_64", cross="",
        image="arch/x86/boot/bzImage",
        qemu="qemu-system-x86_64",
        machine=["-M", "q35", "-cpu", "max"],
        debug_machine=["-M", "q35", "-cpu", "max"],
        console="ttyS0", deb_arch="amd64", blk_device="virtio-blk-pci"),
    "arm64": Arch(
        name="arm64", karch="arm64", cross="aarch64-linux-gnu-",
        image="arch/arm64/boot/Image",
        qemu="qemu-system-aarch64",
        machine=["-M", "virt", "-cpu", "max"],
        # tag memory for the MTE of configs/arm64-debug.config
        debug_machine=["-M", "virt,mte=on", "-cpu", "max"],
        console="ttyAMA0", deb_arch="arm64", blk_device="virtio-blk-device"),
}


def arch(name):
    try:
        return ARCHES[name]
    except KeyError:
        raise SystemExit(f"lab: unknown arch '{name}' (known: {', '.join(ARCHES)})")


def source_tree(flavour):
    """Each flavour is a git worktree of one repository."""
    return WORK / "src" / flavour


def build_dir(arch_name, variant, flavour):
    # A direct child of the source tree: kbuild then uses a relative srctree
    # ("..") so stock and patched builds share ccache entries.
    return source_tree(flavour) / f"out-{arch_name}-{variant}"


def log_dir():
    d = WORK / "logs"
    d.mkdir(parents=True, exist_ok=True)
    return d
