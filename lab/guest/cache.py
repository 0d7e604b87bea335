# SPDX-License-Identifier: GPL-2.0-only
"""Cache: a stored test boot, reused while nothing it depends on changed.

'lab test' and 'lab bench' use it for the stock kernels, which stay the
same from run to run while their boots cost minutes per arch
(commands/test.py's stock_boot, commands/bench.py's boot_bench).  The key
is a sha256 over what decides the boot's results:
  - the bytes of named files (the kernel image, the guest initramfs);
  - the plan text;
  - the boot's arguments (arch, variant, memory, CPUs, kernel command line,
    timeout, the QEMU command line and version), as a JSON dict.
An entry is WORK/results/stock-cache/<name>-<key>.json: the key's inputs
and what the boot produced (exit code, whether the plan started, timeout,
wall time, QEMU command line, the host times of BENCH lines), with a copy of its console beside it,
<name>-<key>.console.log.  A hit returns a run.Boot on that copy, which
the caller judges and parses like a fresh boot's.  Of each name the KEEP
newest entries are kept (a run with --only has a plan, and so a key, of
its own).
"""

import hashlib
import json
import shutil
import time
from pathlib import Path

from ..core import config
from . import image, run
from .run import Boot


KEEP = 4


def cache_dir():
    return config.WORK / "results" / "stock-cache"


def file_hash(path):
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def key(files, plan, args):
    """(key, inputs) for files ({name: path}), a plan text and boot args.

    inputs records what went into the key, with the files' paths (which do
    not go into it: only their bytes do).
    """
    digests = {name: file_hash(path) for name, path in sorted(files.items())}
    hashed = {"files": digests,
              "plan": hashlib.sha256(plan.encode()).hexdigest(),
              "args": args}
    k = hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()
    inputs = dict(hashed, paths={name: str(path) for name, path in files.items()})
    return k, inputs


def boot_key(arch_name, kernel, plan, qemu_args, **args):
    """(key, inputs) of a boot of kernel with arch_name's guest image and
    plan: args as given, with the QEMU version and the command line that
    run.qemu_cmd() makes of qemu_args (its keyword arguments); None when
    the kernel or the image is not there to hash."""
    files = {"kernel": kernel, "image": image.base_path(arch_name)}
    if not all(Path(f).is_file() for f in files.values()):
        return None
    args = dict(args, qemu=run.qemu_version(arch_name),
                qemu_cmd=run.qemu_cmd(arch_name, "KERNEL", "INITRD", **qemu_args))
    return key(files, plan, args)


def _entry(name, k):
    return cache_dir() / f"{name}-{k[:16]}.json"


def load(name, k):
    """(entry path, Boot) stored under a key, or None."""
    f = _entry(name, k)
    if not f.exists():
        return None
    e = json.loads(f.read_text())
    console = Path(e["console"])
    if e["key"] != k or not console.exists():
        return None
    return f, Boot(console, e["exit_code"], e["ready"], e["timed_out"], e["wall"],
                   e["cmdline"], [tuple(s) for s in e.get("stamps", [])])


def store(name, k, inputs, boot):
    """Keep a boot under a key; drop all but the KEEP newest entries of
    name; return the entry's path."""
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    console = d / f"{name}-{k[:16]}.console.log"
    shutil.copyfile(boot.console, console)
    f = _entry(name, k)
    f.write_text(json.dumps({
        "key": k, "stored": time.strftime("%Y-%m-%d %H:%M:%S"), "inputs": inputs,
        "console": str(console), "boot_console": str(boot.console),
        "exit_code": boot.exit_code, "ready": boot.ready,
        "timed_out": boot.timed_out, "wall": boot.wall,
        "cmdline": [str(c) for c in boot.cmdline],
        "stamps": [list(s) for s in boot.stamps]}, indent=1))
    entries = sorted(d.glob(f"{name}-*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-KEEP]:
        old.unlink()
        old.with_suffix(".console.log").unlink(missing_ok=True)
    return f
