# SPDX-License-Identifier: GPL-2.0-only
"""Lavarun: run the lab's LAVA qemu job here, with Debian's lava-dispatcher.

'lab lava --run -a ARCH [-f FLAVOUR] [--only PROGRAMS]' checks a LAVA job
of lab/outputs/lava.py end to end on this machine, as a LAVA worker would
run it:

  1. a Debian 12 root in WORK/lava/root, made once from the minbase
     tarball of 'lab fresh', with Debian's lava-dispatcher (LAVA_VERSION)
     and QEMU
     installed by apt inside it, without Recommends and with a
     policy-rc.d that keeps their daemons from starting (lava-dispatcher
     wants systemd, a kernel image and more, which stay out of the host);
  2. lava-server's device-type templates, from the lava-server package of
     the same Debian release (apt-get download, unpacked, not installed):
     LAVA renders a device's dictionary from them;
  3. the job's files (lava.write()) in the root's /srv/lava/files, with
     file:// URLs, and the x86_64 guest under TCG (no_kvm);
  4. the device dictionary of a qemu device rendered with the job's
     context, as lava-server would, by a small script run with the root's
     python3-jinja2;
  5. lava-run with that device and job; its log (one JSON record per line)
     goes to WORK/logs/lava-run-<arch>-<flavour>.log, the job's result and
     the test cases of the monitor are read from it.
"""

import json
import os
import shutil
import subprocess

from ..core import config
from ..core.util import LabError, Timer, run, say
from ..outputs import lava
from . import fresh

# LAVA as Debian 12 ships it, pinned: a root that cannot get this version
# fails at its set-up with apt's message, not later in a changed dispatcher.
LAVA_VERSION = "2023.01-2"
PACKAGES = (f"lava-dispatcher={LAVA_VERSION}", "qemu-system-x86", "qemu-system-arm",
            "ca-certificates")
SERVER_PACKAGE = f"lava-server={LAVA_VERSION}"
SERVER_DEB = "lava-server_*.deb"
TEMPLATES = "usr/share/lava-server/device-types"
DEVICE_DICT = ("{% extends 'qemu.jinja2' %}\n{% set netdevice = 'user' %}\n"
               "{% set mac_addr = '52:54:00:12:34:59' %}\n")
RENDER = """import sys, jinja2, yaml
job = yaml.safe_load(open(sys.argv[1]))
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[2]),
                         autoescape=False, trim_blocks=True)
print(env.from_string(open(sys.argv[3]).read()).render(**job.get("context", {})))
"""
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "HOME": "/root", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}


def chroot(root, command, log):
    with open(log, "a") as f:
        f.write(f"# chroot {root} {command}\n")
        f.flush()
        return subprocess.run(["chroot", str(root), "bash", "-c", command], env=ENV,
                              stdout=f, stderr=subprocess.STDOUT).returncode


def make_root(root, log):
    """The Debian root with lava-dispatcher (step 1) and the templates (2);
    made again when PACKAGES or the server package changed."""
    stamp = root / "srv/lava/packages"
    want = " ".join(PACKAGES + (SERVER_PACKAGE,)) + "\n"
    if (root / "usr/bin/lava-run").exists() and (root / "srv/lava" / TEMPLATES).is_dir() \
            and stamp.exists() and stamp.read_text() == want:
        return
    if root.exists():
        left = fresh._mounted_under(root)
        if left:
            raise LabError(f"still mounted, not removing {root}: {', '.join(left)}")
        shutil.rmtree(root)
    root.mkdir(parents=True)
    run(["tar", "-xf", str(fresh.tarball()), "-C", str(root)])
    shutil.copy("/etc/resolv.conf", root / "etc/resolv.conf")
    fresh.machine_cas(root)
    # no daemon of the root's packages (nfs, tftp, ser2net come with a
    # LAVA worker) may start on this machine while they are installed
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    say(f"installing {', '.join(PACKAGES)} in {root} (log: {log})")
    cmd = (f"apt-get update && apt-get install -y --no-install-recommends "
           f"{' '.join(PACKAGES)} && "
           f"mkdir -p /srv/lava && cd /srv/lava && apt-get download {SERVER_PACKAGE} && "
           f"dpkg-deb -x {SERVER_DEB} server && "
           f"mkdir -p {os.path.dirname(TEMPLATES)} && mv server/{TEMPLATES} {TEMPLATES} && "
           f"rm -rf server {SERVER_DEB}")
    with_mounts(root, lambda: _check(chroot(root, cmd, log), cmd, log))
    stamp.write_text(want)


def _check(rc, what, log):
    if rc != 0:
        raise LabError(f"'{what}' failed in the LAVA root (exit {rc}); log: {log}")


def with_mounts(root, fn):
    mounted = []
    try:
        for cmd, path in fresh._mounts(root):
            run(cmd, quiet=True)
            mounted.append(path)
        return fn()
    finally:
        for path in reversed(mounted):
            fresh._umount(path)


def parse(log_text, flavour):
    """(job result, {test case id: result}) from lava-run's log."""
    job, cases = None, {}
    for line in log_text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("lvl") != "results":
            continue
        msg = rec.get("msg")
        if not isinstance(msg, dict):
            continue
        if msg.get("definition") == "lava" and msg.get("case") == "job":
            job = msg.get("result")
        elif msg.get("definition") == f"foliobatch-{flavour}":
            case = msg.get("extra", {}).get("test_case_id", msg.get("case"))
            cases[case] = msg.get("result")
    return job, cases


def main(arch_name, flavour, only=None):
    if os.geteuid() != 0:
        raise LabError("'lab lava --run' needs root (mount, chroot)")
    t = Timer()
    root = config.WORK / "lava" / "root"
    setup_log = config.log_dir() / "lava-root.log"
    make_root(root, setup_log)
    srv = root / "srv/lava"
    files = srv / "files"
    shutil.rmtree(files, ignore_errors=True)
    jobs = lava.write(arch_name, flavour, "file:///srv/lava/files", files, only=only,
                      kvm=False)
    job = next(j for j in jobs if j.name.endswith("-qemu.yaml"))
    (srv / "render.py").write_text(RENDER)
    (srv / "qemu01.jinja2").write_text(DEVICE_DICT)
    log = config.log_dir() / f"lava-run-{arch_name}-{flavour}.log"
    log.write_text("")
    device = srv / "qemu01.yaml"
    render = (f"python3 /srv/lava/render.py /srv/lava/files/{job.name} "
              f"/srv/lava/{TEMPLATES} /srv/lava/qemu01.jinja2 > /srv/lava/qemu01.yaml")
    lava_run = ("rm -rf /srv/lava/out && mkdir -p /srv/lava/out && lava-run --device "
                f"/srv/lava/qemu01.yaml --job-id 1 --output-dir /srv/lava/out "
                f"/srv/lava/files/{job.name}")

    def go():
        _check(chroot(root, render, setup_log), "render the device dictionary", setup_log)
        say(f"lava-run of {job.name} (log: {log})")
        return chroot(root, lava_run, log)

    rc = with_mounts(root, go)
    result, cases = parse(log.read_text(errors="replace"), flavour)
    failed = sorted(c for c, r in cases.items() if r != "pass")
    say(f"lava-run exit {rc}, job {result}; {len(cases)} test cases of the monitor, "
        f"{len(cases) - len(failed)} pass" + (f", not pass: {', '.join(failed)}"
                                              if failed else "")
        + f"; device {device}; done in {t}")
    return 0 if rc == 0 and result == "pass" and cases and not failed else 1
