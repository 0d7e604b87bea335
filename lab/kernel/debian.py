# SPDX-License-Identifier: GPL-2.0-only
"""Debian: the pinned Debian kernel configs, and the lab's bootable form
of them.

  config_path()  Debian's own config for an arch, unpacked once from
                 linux-config-6.12 of the source's version into WORK/dl
                 (download_config(): apt-get, or the archive's pool with a
                 pinned sha256 once apt's index lists a newer version);
  fragments()    what the 'debian' build variant merges on top of that
                 config: configs/debian-boot.config (and
                 configs/debian-boot-<arch>.config), the drivers the guest
                 needs built in and the one option a test needs that
                 Debian does not set;
  changes()      every option whose value the variant's .config has
                 otherwise than Debian's: what its build writes beside
                 the .config and 'lab check' reports.

The variant builds the kernel image only (make bzImage or Image): every
built-in option is Debian's, and the modules, which a guest of the lab
never loads, are configured as Debian's but not built.
"""

import lzma
import shutil

from ..core import config
from ..core.util import LabError, run, say
from . import source

FRAGMENT = config.CONFIGS / "debian-boot.config"


def config_path(deb_arch):
    """Debian's config for a Debian architecture (amd64, arm64, riscv64),
    unpacked once from linux-config-6.12 of the source's version into
    WORK/dl; returns its path."""
    version = source.base_version()
    if version == "unknown":
        version = config.SOURCE_VERSION
    dl = config.WORK / "dl"
    name = f"config.{deb_arch}_none_{deb_arch}"
    dest = dl / f"{config.CONFIG_PACKAGE}_{version}" / name
    if dest.exists():
        return dest
    dl.mkdir(parents=True, exist_ok=True)
    deb = dl / f"{config.CONFIG_PACKAGE}_{version.replace(':', '%3a')}_{deb_arch}.deb"
    if not deb.exists():
        download_config(deb_arch, version, deb)
    pkg = dl / "config-pkg"
    if pkg.exists():
        shutil.rmtree(pkg)
    run(["dpkg-deb", "-x", str(deb), str(pkg)])
    xz = pkg / "usr/src" / config.CONFIG_PACKAGE / f"{name}.xz"
    if not xz.exists():
        raise LabError(f"{deb.name} has no {xz.relative_to(pkg)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(lzma.decompress(xz.read_bytes()))
    shutil.rmtree(pkg)
    return dest


def download_config(deb_arch, version, deb):
    """Download linux-config-6.12 of version for deb_arch to the path deb:
    with apt-get while apt's index lists that version
    (source.available_versions()), otherwise, for a version the lab pins a
    sha256 of (config.CONFIG_DEB_SHA256), from the archive's pool
    (source.pool_download()), kept only with that sha256."""
    spec = f"{config.CONFIG_PACKAGE}:{deb_arch}={version}"
    if version in source.available_versions(f"{config.CONFIG_PACKAGE}:{deb_arch}"):
        run(["apt-get", "download", spec], cwd=deb.parent)
        return
    want = config.CONFIG_DEB_SHA256.get(version, {}).get(deb_arch)
    if not want:
        raise LabError(f"apt's index lists no {spec} and the lab pins no sha256 "
                       f"for it (config.CONFIG_DEB_SHA256): run 'apt-get update', "
                       f"or pin the .deb")
    say(f"apt's index no longer lists {spec}; taking it from the archive's pool")
    if not source.pool_download(source.deb_filename(config.CONFIG_PACKAGE, version,
                                                    deb_arch), want, deb):
        raise LabError(f"{spec}: neither apt's index nor the archive's pool has it")


def fragments(arch_name):
    """The fragments the 'debian' variant merges on top of Debian's config
    without its modules, in merge order."""
    frags = [FRAGMENT]
    arch_frag = config.CONFIGS / f"debian-boot-{arch_name}.config"
    if arch_frag.exists():
        frags.append(arch_frag)
    return frags


def changes(deb, final):
    """[(option, Debian's value, the final value)] of every option the
    final .config sets otherwise than Debian's config, sorted.  @deb:
    every option Debian's config names, 'n' for one it leaves unset
    (build.parse_fragment()); @final: the options the final .config sets
    (build.parse_dotconfig()).  'n' stands for an option not set,
    'absent' for one Debian's config does not name (an option the series
    adds), which is listed when it is set."""
    rows = []
    for opt in sorted(set(deb) | set(final)):
        d = deb.get(opt, "absent")
        f = final.get(opt, "n")
        if d == f or (d == "absent" and f == "n"):
            continue
        rows.append((opt, d, f))
    return rows
