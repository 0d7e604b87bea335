# SPDX-License-Identifier: GPL-2.0-only
"""Fresh: run .ci/run in a clean Debian 12 root, as on a new machine.

A CI run on a developer's machine sees every package that was ever
installed by hand; a missing entry in lab/core/deps.py then shows only on
the next new machine.  This makes a minimal Debian 12 root with mmdebstrap
(variant minbase: the Essential packages and apt, nothing else; the
tarball is cached in WORK/dl), copies this machine's own CA certificates
into it (machine_cas()), binds /proc, /sys and /dev into it, clones
the repository's committed HEAD into it and runs '.ci/run' there with
CI=true, as root, with a HOME of its own, so ccache starts empty.

The whole output goes to WORK/logs/fresh.log; the last line of it is
.ci/run's "N passed, N failed".  The root stays in WORK/fresh/root for
reading until the next run.  Not part of CI: it takes as long as a cold CI.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

from ..core import config
from ..core.util import LabError, Timer, reap, run, say, spawn

SUITE = "bookworm"
# the sources of a Debian 12 installation: the pinned linux-source-6.12 is
# in bookworm-security
SOURCES = [
    f"deb http://deb.debian.org/debian {SUITE} main",
    f"deb http://deb.debian.org/debian {SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main",
]
CHECKOUT = "/root/foliobatch"


def tarball():
    """The cached minbase root tarball, made once with mmdebstrap."""
    tar = config.WORK / "dl" / f"{SUITE}-minbase.tar"
    if tar.exists():
        return tar
    if not shutil.which("mmdebstrap"):
        raise LabError("mmdebstrap not found: 'lab deps --install' (or apt-get "
                       "install mmdebstrap)")
    tar.parent.mkdir(parents=True, exist_ok=True)
    # mmdebstrap picks the output format from the name: keep ".tar" last
    part = tar.with_name(f"{SUITE}-minbase.part.tar")
    run(["mmdebstrap", "--variant=minbase", "--mode=root", SUITE, str(part)]
        + SOURCES)
    part.rename(tar)
    return tar


# Certificate authorities that this machine adds to Debian's (a proxy's CA,
# say): a new machine of the same kind has them too, and without them its
# TLS clients (pip) cannot reach the package registries.  They are the
# machine's set-up, not the project's: copied as they are, and Debian's
# ca-certificates, which lab deps installs, adds them to the bundle.
LOCAL_CAS = Path("/usr/local/share/ca-certificates")


def machine_cas(root):
    """Copy the machine's own CA certificates into a fresh root."""
    dest = root / LOCAL_CAS.relative_to("/")
    dest.mkdir(parents=True, exist_ok=True)
    for crt in sorted(LOCAL_CAS.glob("*.crt")) if LOCAL_CAS.is_dir() else []:
        shutil.copy(crt, dest / crt.name)
        say(f"machine CA certificate {crt.name} copied into {root}")


def _mounts(root):
    """(command, mount point): /proc, and /sys and /dev bound recursively as
    slaves, so that no mount or unmount under the root reaches the host's
    (on a host with shared mount propagation, a plain bind would pass them
    on)."""
    return [(["mount", "-t", "proc", "proc", str(root / "proc")], root / "proc"),
            (["mount", "--rbind", "--make-rslave", "/sys", str(root / "sys")], root / "sys"),
            (["mount", "--rbind", "--make-rslave", "/dev", str(root / "dev")], root / "dev")]


def _umount(path):
    subprocess.run(["umount", "-R", "-l", str(path)], capture_output=True)


def _mounted_under(root):
    """Mount points at or below root (from /proc/self/mounts)."""
    prefix = str(root.resolve())
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    return [m for m in points if m == prefix or m.startswith(prefix + "/")]


def main(command="bash .ci/run"):
    if os.geteuid() != 0:
        raise LabError("'lab fresh' needs root (mmdebstrap, mount, chroot)")
    t = Timer()
    head = subprocess.run(["git", "-C", str(config.REPO), "status", "--porcelain"],
                          capture_output=True, text=True).stdout
    if head.strip():
        say("WARNING: uncommitted changes are not in the fresh root (it clones HEAD)")
    tar = tarball()
    base = config.WORK / "fresh"
    root = base / "root"
    if root.exists():
        for _, path in _mounts(root):
            _umount(path)
        # never delete through a bind mount of the host's /dev or /sys
        left = _mounted_under(root)
        if left:
            raise LabError(f"still mounted, not removing {root}: {', '.join(left)}")
        shutil.rmtree(root)
    root.mkdir(parents=True)
    run(["tar", "-xf", str(tar), "-C", str(root)])
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    machine_cas(root)
    run(["git", "clone", "-q", str(config.REPO), str(root / CHECKOUT.lstrip("/"))])
    log = config.log_dir() / "fresh.log"
    mounted = []
    try:
        for cmd, path in _mounts(root):
            run(cmd, quiet=True)
            mounted.append(path)
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": "/root", "CI": "true", "LANG": "C.UTF-8", "TERM": "dumb"}
        say(f"running '{command}' in {root} (log: {log})")
        t0 = time.monotonic()
        # a session of its own, so that a stopped lab ends the whole
        # command in the root (reap() signals the group), not only its
        # shell, before the finally below unmounts what it uses
        with open(log, "w") as f:
            p = spawn(["chroot", str(root), "bash", "-c", f"cd {CHECKOUT} && {command}"],
                      env=env, stdin=subprocess.DEVNULL, stdout=f,
                      stderr=subprocess.STDOUT, start_new_session=True)
            reap(p)
        minutes = (time.monotonic() - t0) / 60
    finally:
        for path in reversed(mounted):
            _umount(path)
    lines = log.read_text(errors="replace").rstrip().splitlines()
    last = lines[-1] if lines else "(no output)"
    say(f"'{command}' in a fresh {SUITE} root: exit {p.returncode} after {minutes:.1f} "
        f"minutes; last line: {last}")
    say(f"fresh done in {t}; the root stays in {root}")
    return 0 if p.returncode == 0 else 1
