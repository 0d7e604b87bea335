# SPDX-License-Identifier: GPL-2.0-only
"""Image: the guest initramfs of one arch.

Contents: busybox (Debian's busybox-static for the arch), /init,
/lab/lib.sh and /lab/run-here.sh from guest/, the project's test and
benchmark programs (guest/Makefile, static), /lab/harden.sh, the upstream
tools/testing/selftests/mm programs the suites run (built from the pinned
source for the arch, static), and stress-ng and trinity with their shared
libraries (Debian packages for the arch).

The archive is written with the kernel's own usr/gen_init_cpio, so device
nodes need no root.  A boot appends a small second archive holding
/lab/plan.sh and /lab/env (see plan_cpio).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..core import config
from ..core.util import LabError, out, run, say

# Upstream mm selftests the suites run.
SELFTESTS = ["mremap_test", "mremap_dontunmap", "cow", "khugepaged",
             "split_huge_page_test", "transhuge-stress", "uffd-unit-tests",
             "madv_populate", "mkdirty", "soft-dirty"]
SELFTESTS_ARCH_ONLY = {"soft-dirty": {"x86_64"}}

# Debian packages unpacked into the image, with their library closure.
DEB_TOOLS = {"stress-ng": ["usr/bin/stress-ng"], "trinity": ["usr/bin/trinity"]}

# The mtime of every archive entry (gen_init_cpio -t), 2026-01-01 00:00 UTC
# like the kernels' KBUILD_BUILD_TIMESTAMP: without it directories get the
# current time, so the same contents made a different base.cpio each time
# and the stock cache (cache.py), which hashes it, never hit.
CPIO_MTIME = 1767225600


def image_dir(arch_name):
    d = config.WORK / "image" / arch_name
    d.mkdir(parents=True, exist_ok=True)
    return d


def base_path(arch_name):
    """The base initramfs of an arch (built by build())."""
    return image_dir(arch_name) / "base.cpio"


def selftests_for(arch_name):
    return [t for t in SELFTESTS
            if arch_name in SELFTESTS_ARCH_ONLY.get(t, {arch_name})]


def gen_init_cpio():
    """Build the kernel's usr/gen_init_cpio host tool once."""
    tool = config.WORK / "tools" / "gen_init_cpio"
    src = config.source_tree("stock") / "usr" / "gen_init_cpio.c"
    if not tool.exists() or tool.stat().st_mtime < src.stat().st_mtime:
        tool.parent.mkdir(parents=True, exist_ok=True)
        run(["gcc", "-O2", "-o", str(tool), str(src)])
    return tool


def headers(arch_name, log):
    """Install the pinned tree's UAPI headers for the arch."""
    a = config.arch(arch_name)
    hdr = config.WORK / "hdr" / arch_name
    if (hdr / "include" / "linux" / "userfaultfd.h").exists():
        return hdr / "include"
    src = config.source_tree("stock")
    run(["make", "-C", str(src), f"O={config.WORK / 'hdr' / ('build-' + arch_name)}",
         f"ARCH={a.karch}", f"INSTALL_HDR_PATH={hdr}", "headers_install"], log=log)
    return hdr / "include"


def build_guest_programs(arch_name, log):
    a = config.arch(arch_name)
    outdir = config.WORK / "guest" / arch_name
    inc = headers(arch_name, log)
    run(["make", "-C", str(config.GUEST), f"-j{os.cpu_count()}", f"CC={a.cross}gcc",
         f"KSRC={config.source_tree('stock')}", f"KHDR_INCLUDES=-isystem {inc}",
         f"OUT={outdir}"], log=log)
    return outdir


def build_selftests(arch_name, log):
    a = config.arch(arch_name)
    src = config.source_tree("stock")
    outdir = config.WORK / "selftests" / arch_name
    outdir.mkdir(parents=True, exist_ok=True)
    inc = headers(arch_name, log)
    targets = [str(outdir / t) for t in selftests_for(arch_name)]
    cmd = ["make", "-C", str(src / "tools/testing/selftests/mm"),
           f"-j{os.cpu_count()}", f"ARCH={a.karch}", f"OUTPUT={outdir}",
           f"KHDR_INCLUDES=-isystem {inc}",
           # 6.12.117's khugepaged.c returns KSFT_SKIP without including
           # kselftest.h; force-include it (it has include guards).
           f"EXTRA_CFLAGS=-static -include {src}/tools/testing/selftests/kselftest.h"]
    if a.cross:
        cmd += [f"CROSS_COMPILE={a.cross}", f"CC={a.cross}gcc"]
    run(cmd + targets, log=log)
    return outdir


def _deb_closure(pkg, deb_arch):
    text = out(["apt-cache", "depends", "--recurse", "--no-recommends",
                "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                "--no-enhances", f"{pkg}:{deb_arch}"])
    names = []
    for line in text.splitlines():
        if line.startswith(" ") or line.startswith("<"):
            continue
        name = line.strip()  # keeps ':arch' where apt printed one
        if name not in names:
            names.append(name)
    return names


def fetch_debs(arch_name, log):
    """Download and unpack the Debian packages the image takes files from."""
    a = config.arch(arch_name)
    root = config.WORK / "debs" / arch_name
    stamp = root / ".done"
    # the stamp names the tools, so adding one to DEB_TOOLS fetches again
    want = " ".join(["busybox-static"] + sorted(DEB_TOOLS)) + "\n"
    if stamp.exists() and stamp.read_text() == want:
        return root / "root"
    debdir = root / "debs"
    debdir.mkdir(parents=True, exist_ok=True)
    pkgs = [f"busybox-static:{a.deb_arch}"]
    for tool in DEB_TOOLS:
        pkgs += [p for p in _deb_closure(tool, a.deb_arch) if p not in pkgs]
    p = run(["apt-get", "download"] + pkgs,
            cwd=debdir, log=log, check=False)
    if p.returncode != 0:
        raise LabError(f"apt-get download for {arch_name} failed (log: {log}); "
                       f"is the architecture added? dpkg --add-architecture "
                       f"{a.deb_arch} && apt-get update")
    rootdir = root / "root"
    if rootdir.exists():
        shutil.rmtree(rootdir)
    for deb in sorted(debdir.glob("*.deb")):
        run(["dpkg-deb", "-x", str(deb), str(rootdir)], quiet=True)
    stamp.write_text(want)
    return rootdir


def _elf_needed(path):
    text = out(["readelf", "-d", str(path)])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", text)


def _elf_interp(path):
    text = out(["readelf", "-l", str(path)])
    m = re.search(r"Requesting program interpreter: (.+?)\]", text)
    return m.group(1) if m else None


def _find_lib(rootdir, name):
    """Look for a library where Debian packages put them."""
    dirs = [rootdir / "lib", rootdir / "lib64", rootdir / "usr/lib"]
    dirs += sorted(rootdir.glob("lib/*-linux-gnu"))
    dirs += sorted(rootdir.glob("usr/lib/*-linux-gnu"))
    for d in dirs:
        if (d / name).exists():
            return d / name
    return None


def _resolve_in(rootdir, path):
    """Follow symlinks of a path inside an unpacked root, never leaving it."""
    for _ in range(40):
        if not path.is_symlink():
            return path
        target = Path(os.readlink(path))
        path = rootdir / str(target).lstrip("/") if target.is_absolute() \
            else path.parent / target
    raise LabError(f"symlink loop at {path}")


def lib_closure(rootdir, binary):
    """Map of image path -> host path for a dynamic binary's libraries."""
    files = {}
    interp = _elf_interp(binary)
    if interp:
        host = _find_lib(rootdir, Path(interp).name)
        if not host:
            raise LabError(f"dynamic linker {interp} not found in {rootdir}")
        files[interp] = _resolve_in(rootdir, host)
    todo = [binary]
    seen = set()
    while todo:
        elf = todo.pop()
        for lib in _elf_needed(elf):
            if lib in seen:
                continue
            seen.add(lib)
            host = _find_lib(rootdir, lib)
            if not host:
                raise LabError(f"{binary.name} needs {lib}, not found in the "
                               f"unpacked packages under {rootdir}")
            host = _resolve_in(rootdir, host)
            files[f"/lib/{lib}"] = host
            todo.append(host)
    return files


class CpioList:
    """Entries for gen_init_cpio."""

    def __init__(self):
        self.lines = []
        self.dirs = set()

    def dir(self, path):
        parts = Path(path).parts[1:]
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            if p not in self.dirs:
                self.dirs.add(p)
                self.lines.append(f"dir {p} 0755 0 0")

    def file(self, path, host, mode=0o755):
        self.dir(str(Path(path).parent))
        self.lines.append(f"file {path} {host} {mode:o} 0 0")

    def tree(self, prefix, hostdir):
        for f in sorted(Path(hostdir).rglob("*")):
            if f.is_file() and os.access(f, os.X_OK):
                self.file(f"{prefix}/{f.relative_to(hostdir)}", f)

    def write(self, path, cpio):
        """Write the list to path and the archive to cpio; the archive is
        renamed into place, so a boot that reads cpio while another lab
        command rebuilds it reads a whole archive, old or new."""
        Path(path).write_text("\n".join(self.lines) + "\n")
        part = Path(f"{cpio}.part")
        with open(part, "wb") as f:
            subprocess.run([str(gen_init_cpio()), "-t", str(CPIO_MTIME), str(path)],
                           stdout=f, check=True)
        os.replace(part, cpio)


def build(arch_name):
    """Build the base initramfs of an arch; return its path."""
    a = config.arch(arch_name)
    log = config.log_dir() / f"image-{arch_name}.log"
    log.write_text("")
    say(f"building the {arch_name} guest image (log: {log})")
    img = image_dir(arch_name)
    debroot = fetch_debs(arch_name, log)
    guest = build_guest_programs(arch_name, log)
    selftests = build_selftests(arch_name, log)

    cl = CpioList()
    for d in ("/dev", "/proc", "/sys", "/tmp", "/run", "/mnt/xfs", "/bin",
              "/sbin", "/usr/bin", "/usr/sbin", "/etc", "/root"):
        cl.dir(d)
    cl.lines.append("nod /dev/console 0600 0 0 c 5 1")
    cl.lines.append("nod /dev/null 0666 0 0 c 1 3")
    cl.file("/bin/busybox", debroot / "bin/busybox")
    cl.lines.append("slink /bin/sh busybox 0777 0 0")
    cl.file("/init", config.GUEST / "init")
    cl.file("/lab/lib.sh", config.GUEST / "lib.sh", 0o644)
    cl.file("/lab/harden.sh", config.GUEST / "harden.sh")
    cl.file("/lab/run-here.sh", config.GUEST / "run-here.sh")
    cl.tree("/lab", guest)
    for t in selftests_for(arch_name):
        cl.file(f"/lab/selftests/mm/{t}", selftests / t)
    for tool, paths in DEB_TOOLS.items():
        for rel in paths:
            binary = debroot / rel
            if not binary.exists():
                raise LabError(f"{rel} not found in the {tool} package for {arch_name}")
            cl.file("/" + rel, binary)
            for ipath, host in lib_closure(debroot, binary).items():
                cl.file(ipath, host, 0o755)
    (img / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (img / "group").write_text("root:x:0:\n")
    cl.file("/etc/passwd", img / "passwd", 0o644)
    cl.file("/etc/group", img / "group", 0o644)
    cpio = base_path(arch_name)
    cl.write(img / "base.list", cpio)
    say(f"guest image {cpio} ({cpio.stat().st_size >> 20} MiB)")
    return cpio


def plan_cpio(arch_name, plan_text, env, dest):
    """Write base.cpio + an archive holding /lab/plan.sh and /lab/env to dest."""
    base = base_path(arch_name)
    if not base.exists():
        raise LabError(f"no guest image for {arch_name}; run 'lab image {arch_name}'")
    tmp = Path(dest).with_suffix(".d")
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "plan.sh").write_text(plan_text)
    (tmp / "env").write_text("".join(f"{k}='{v}'\n" for k, v in env.items()))
    cl = CpioList()
    cl.dirs.add("/lab")
    cl.file("/lab/plan.sh", tmp / "plan.sh", 0o755)
    cl.file("/lab/env", tmp / "env", 0o644)
    extra = tmp / "plan.cpio"
    cl.write(tmp / "plan.list", extra)
    with open(dest, "wb") as f:
        f.write(base.read_bytes())
        f.write(extra.read_bytes())
    return Path(dest)
