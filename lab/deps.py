"""Deps: check (and with --install, install) what the lab needs on the host."""

import os
import shutil
import subprocess

from .util import LabError, run, say

# command -> Debian package providing it
COMMANDS = {
    "make": "make", "gcc": "gcc", "git": "git", "bc": "bc", "bison": "bison",
    "flex": "flex", "cpio": "cpio", "xz": "xz-utils", "ccache": "ccache",
    "readelf": "binutils", "dpkg-deb": "dpkg", "apt-get": "apt",
    "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu",
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-system-aarch64": "qemu-system-arm",
    "mkfs.xfs": "xfsprogs", "perl": "perl",
}
# headers/libraries/python modules that have no command
PACKAGES = ["libelf-dev", "libssl-dev", "libc6-dev-arm64-cross", "python3-matplotlib",
            "python3-pytest", "python3-ply", "ca-certificates"]
FOREIGN_ARCH = "arm64"   # for apt-get download of arm64 guest packages


def missing():
    miss = sorted({pkg for cmd, pkg in COMMANDS.items() if not shutil.which(cmd)})
    for pkg in PACKAGES:
        p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                           capture_output=True, text=True)
        if "install ok installed" not in p.stdout:
            miss.append(pkg)
    return miss


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
    check()
