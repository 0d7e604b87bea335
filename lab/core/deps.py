# SPDX-License-Identifier: GPL-2.0-only
"""Deps: check (and with --install, install) what the lab needs on the host.

The rule: every program the lab runs on the host, and every program the
kernel and guest builds run, comes from a Debian package named here.
Packages marked 'Essential: yes' are on every Debian system and cannot be
removed without force, so their programs need not be installed; they are
listed in ESSENTIAL instead, which tests/test_deps.py treats as the only
exception.  Everything else must be in COMMANDS (a program) or PACKAGES
(headers, libraries and Python modules, which have no program).
"""

import hashlib
import os
import shutil
import subprocess
import sys

from . import config
from .util import LabError, run, say

# command -> Debian package providing it (none of them Essential)
COMMANDS = {
    # kernel builds: make, the compilers, and what Kbuild runs besides
    "make": "make", "gcc": "gcc", "bc": "bc", "bison": "bison", "flex": "flex",
    "perl": "perl",
    # Kbuild's $(AWK); mawk is priority 'required' but not Essential
    "awk": "mawk",
    # the x86_64 bzImage is xz-compressed (tinyconfig sets KERNEL_XZ)
    "xz": "xz-utils",
    "cpio": "cpio",
    # make headers_install copies the UAPI headers with rsync
    "rsync": "rsync",
    "ccache": "ccache",
    "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu",
    # lab check: the riscv64 defconfig build, and sparse (C=2) on the
    # files the series changes
    "riscv64-linux-gnu-gcc": "gcc-riscv64-linux-gnu",
    "sparse": "sparse",
    # the source tree, the series, checkpatch -g
    "git": "git",
    # the source package, Debian's kernel configs (lab check downloads
    # linux-config-6.12 for amd64 and arm64, unpacks it into work/dl and
    # installs nothing) and the guest's Debian packages
    "apt-get": "apt", "apt-cache": "apt",
    # the guest image: shared libraries of stress-ng and trinity; lab
    # profile: the symbols of vmlinux; lab codegen: the objects' code
    "readelf": "binutils", "nm": "binutils", "objdump": "binutils",
    "aarch64-linux-gnu-nm": "binutils-aarch64-linux-gnu",
    "aarch64-linux-gnu-objdump": "binutils-aarch64-linux-gnu",
    # boots: QEMU and the fresh XFS disk
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-system-aarch64": "qemu-system-arm",
    "mkfs.xfs": "xfsprogs",
    # lab export --debian: the queue is checked with 'quilt push -a'
    "quilt": "quilt",
    # lab fresh: a clean Debian 12 root, and the mounts /proc, /sys, /dev
    "mmdebstrap": "mmdebstrap", "mount": "mount", "umount": "mount",
    # tests/test_report_browser.py: the bench report opened in a real
    # browser (headless), its screenshot checked
    "chromium": "chromium",
    # the lab itself runs on it (.ci/run installs it before anything else)
    "python3": "python3",
}
# headers/libraries/python modules that have no command
PACKAGES = [
    "libelf-dev", "libssl-dev",
    # libc headers and libc.a: gen_init_cpio, the static x86_64 guest
    # programs and selftests (gcc only recommends it)
    "libc6-dev",
    "libc6-dev-arm64-cross",
    "python3-matplotlib", "python3-pytest", "python3-ply", "python3-git", "ca-certificates",
    # pip, for the PyPI packages of PYPI_REQUIREMENTS
    "python3-pip",
    # lab lava: LAVA's job schema (and python3-yaml with it)
    "lava-common",
]
# PyPI packages that Debian 12 does not have, pinned with everything they
# need, installed with pip --no-deps into PYLIB (not into the system's
# Python, which Debian manages); lab/outputs/kcidb.py runs them in a python3
# of their own with PYTHONPATH=PYLIB.  A stamp of the requirements' hash says what is installed.
PYPI_REQUIREMENTS = config.REPO / "lab" / "requirements-kcidb.txt"
PYLIB = config.WORK / "pylib"
# Programs from Essential packages (program -> package): always present,
# never installed.  Only these may be run without an entry in COMMANDS.
ESSENTIAL = {
    "tar": "tar",                 # unpacking the source tarball
    "dpkg": "dpkg", "dpkg-query": "dpkg", "dpkg-deb": "dpkg",
    "sh": "dash", "bash": "bash",  # merge_config.sh, Kbuild, .ci/run
    "sed": "sed", "grep": "grep", "find": "findutils", "xargs": "findutils",
    "gzip": "gzip", "cmp": "diffutils", "diff": "diffutils",
    "cat": "coreutils", "mkdir": "coreutils", "rm": "coreutils",
    "uname": "coreutils", "chroot": "coreutils",
    "nice": "coreutils",          # builds made ahead (build.build_ahead)
}
# for apt-get download of arm64 guest packages and of linux-config-6.12:arm64
FOREIGN_ARCH = "arm64"


def missing():
    miss = sorted({pkg for cmd, pkg in COMMANDS.items() if not shutil.which(cmd)})
    for pkg in PACKAGES:
        p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                           capture_output=True, text=True)
        if "install ok installed" not in p.stdout:
            miss.append(pkg)
    return miss


def pypi_hash():
    return hashlib.sha256(PYPI_REQUIREMENTS.read_bytes()).hexdigest()


def pypi_ok():
    """Whether PYLIB holds exactly PYPI_REQUIREMENTS."""
    stamp = PYLIB / ".lab-requirements"
    return stamp.exists() and stamp.read_text().strip() == pypi_hash()


def install_pypi():
    if PYLIB.exists():
        shutil.rmtree(PYLIB)
    run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--root-user-action=ignore",
         "--disable-pip-version-check", "--no-cache-dir", "--target", str(PYLIB),
         "-r", str(PYPI_REQUIREMENTS)])
    (PYLIB / ".lab-requirements").write_text(pypi_hash() + "\n")



def foreign_arch_ok():
    p = subprocess.run(["dpkg", "--print-foreign-architectures"],
                       capture_output=True, text=True)
    return FOREIGN_ARCH in p.stdout.split()


def check():
    miss = missing()
    problems = []
    if miss:
        problems.append("missing packages: " + " ".join(miss) +
                        "\n  install: apt-get install -y --no-install-recommends " +
                        " ".join(miss))
    if not pypi_ok():
        problems.append(f"the PyPI packages of {PYPI_REQUIREMENTS.name} are not "
                        f"installed in {PYLIB}")
    if not foreign_arch_ok():
        problems.append(f"dpkg does not know the {FOREIGN_ARCH} architecture (the "
                        f"arm64 guest image uses Debian arm64 packages)\n  fix: "
                        f"dpkg --add-architecture {FOREIGN_ARCH} && apt-get update")
    if problems:
        raise LabError("host dependencies are missing; 'lab deps --install' "
                       "fixes this as root:\n" + "\n".join(problems))
    say("host dependencies: all present")


def install():
    if os.geteuid() != 0:
        raise LabError("'lab deps --install' needs root (it runs apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not foreign_arch_ok():
        run(["dpkg", "--add-architecture", FOREIGN_ARCH])
    # Third-party sources on a machine may be unreachable; apt then exits
    # non-zero, but the Debian lists are still updated.  What matters is
    # whether the packages install, which is checked below.
    run(["apt-get", "update"], env=env, check=False)
    miss = missing()
    if miss:
        run(["apt-get", "install", "-y", "--no-install-recommends"] + miss, env=env)
    if not pypi_ok():
        install_pypi()
    check()
