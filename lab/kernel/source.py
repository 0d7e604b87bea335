# SPDX-License-Identifier: GPL-2.0-only
"""Source: fetch the pinned linux-source-6.12, make it a git tree, apply the series.

Layout under WORK/src:
  stock/    git repository, the unpacked Debian source committed as tag 'base'
  patched/  git worktree of the same repository, branch 'patched' = base + series
"""

import hashlib
import http.client
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from ..core import config
from ..core.util import LabError, out, run, say, warn
from . import commitrefs, cpknown, provenance

BASE_TAG = "base"
EXCLUDES = ["/out-*/", "/.lab-*"]


def _dl_dir():
    d = config.WORK / "dl"
    d.mkdir(parents=True, exist_ok=True)
    return d


def available_versions(package=config.SOURCE_PACKAGE):
    """Versions of package (a name, or name:arch) that apt can download,
    newest first: those of apt-cache madison's binary package lines."""
    text = run(["apt-cache", "madison", package], capture=True, quiet=True).stdout or ""
    fields = [[f.strip() for f in line.split("|")] for line in text.splitlines()]
    vers = [f[1] for f in fields if len(f) >= 3 and f[2].endswith("Packages")]
    seen = []
    for v in vers:
        if v not in seen:
            seen.append(v)
    return seen


def download():
    """Download the pinned .deb and return (its path, its version): with
    apt-get while apt's index lists the version, otherwise from the
    archive's pool with the pinned sha256 (pool_download()); only when the
    pool has it no more, the newest 6.12 apt lists, with a warning."""
    dl = _dl_dir()
    debs = sorted(dl.glob(f"{config.SOURCE_PACKAGE}_*.deb"))
    pinned = config.SOURCE_VERSION.replace(":", "%3a")
    for deb in debs:
        if pinned in deb.name:
            return deb, config.SOURCE_VERSION
    version = config.SOURCE_VERSION
    avail = available_versions()
    if not avail:
        raise LabError(f"apt knows no {config.SOURCE_PACKAGE}; run 'apt-get update' "
                       "(the package is in bookworm-security)")
    if version not in avail:
        deb = dl / f"{config.SOURCE_PACKAGE}_{pinned}_all.deb"
        say(f"apt's index no longer lists {config.SOURCE_PACKAGE} {version}; "
            "taking it from the archive's pool")
        if pool_download(deb_filename(config.SOURCE_PACKAGE, version, "all"),
                         config.SOURCE_DEB_SHA256, deb):
            return deb, version
        newest = avail[0]
        warn("*" * 70)
        warn(f"pinned {config.SOURCE_PACKAGE} {version} is no longer served;")
        warn(f"using the newest one, {newest}. Results are NOT comparable with")
        warn("the pinned runs. Update SOURCE_VERSION in lab/core/config.py.")
        warn("*" * 70)
        version = newest
    run(["apt-get", "download", f"{config.SOURCE_PACKAGE}={version}"], cwd=dl)
    debs = [d for d in dl.glob(f"{config.SOURCE_PACKAGE}_*.deb")
            if version.replace(":", "%3a") in d.name]
    if not debs:
        raise LabError(f"apt-get download left no .deb in {dl}")
    return debs[0], version


def deb_filename(package, version, arch):
    """A .deb's file name in the archive's pool: the version without its
    epoch."""
    return f"{package}_{version.split(':', 1)[-1]}_{arch}.deb"


def pool_dir():
    """The source package's directory of the archive's pool, as apt reaches
    it (its mirror and proxy): the directory of the newest listed
    linux-source-6.12 (every version of the source package shares it), or
    config.SOURCE_POOL when apt lists none."""
    p = run(["apt-get", "download", "--print-uris", config.SOURCE_PACKAGE],
            capture=True, check=False, quiet=True)
    uris = re.findall(r"^'([^']+)'", p.stdout or "", re.M) if p.returncode == 0 else []
    return uris[0].rsplit("/", 1)[0] if uris else config.SOURCE_POOL


def pool_download(filename, sha256, dest):
    """Download filename from the source package's directory of the
    archive's pool (pool_dir()), which keeps a version's .debs after apt's
    index stops listing it, to dest; keep it only when its sha256 is
    sha256.  Returns whether the pool had it (False for HTTP 404).  A
    download that fails otherwise, or has another sha256, is a LabError;
    whatever way it ends short of the sha256 matching, nothing is left at
    dest or beside it."""
    url = f"{pool_dir()}/{urllib.parse.quote(filename, safe='')}"
    say(f"downloading {url}")
    part = dest.with_name(dest.name + ".part")
    h = hashlib.sha256()
    try:
        try:
            with urllib.request.urlopen(url, timeout=300) as r, open(part, "wb") as f:
                while chunk := r.read(1 << 20):
                    h.update(chunk)
                    f.write(chunk)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                warn(f"{url}: not in the pool (404)")
                return False
            raise LabError(f"could not download {url}: {e}") from None
        except (OSError, http.client.HTTPException) as e:
            raise LabError(f"could not download {url}: {type(e).__name__}: {e}") from None
        if h.hexdigest() != sha256:
            raise LabError(f"{url}: sha256 {h.hexdigest()}, not the pinned {sha256}; "
                           "not used")
        part.rename(dest)
        return True
    finally:
        part.unlink(missing_ok=True)


def fetch():
    """Create WORK/src/stock as a git tree with the pinned source as 'base'."""
    stock = config.source_tree("stock")
    if (stock / ".git").exists() and _has_tag(stock, BASE_TAG):
        say(f"source already unpacked in {stock} ({base_version()})")
        return stock
    deb, version = download()
    pkg = _dl_dir() / "pkg"
    if pkg.exists():
        shutil.rmtree(pkg)
    run(["dpkg-deb", "-x", str(deb), str(pkg)])
    tarballs = list((pkg / "usr/src").glob("linux-source-*.tar.xz"))
    if len(tarballs) != 1:
        raise LabError(f"expected one tarball in {pkg}/usr/src, found {tarballs}")
    if stock.exists():
        shutil.rmtree(stock)
    stock.mkdir(parents=True)
    say(f"unpacking {tarballs[0].name}")
    run(["tar", "-xf", str(tarballs[0]), "-C", str(stock), "--strip-components=1"])
    shutil.rmtree(pkg)
    git = ["git", "-C", str(stock)]
    run(git + ["init", "-q", "-b", "stock"])
    run(git + ["config", "user.name", "foliobatch lab"])
    run(git + ["config", "user.email", "lab@foliobatch.invalid"])
    run(git + ["config", "gc.auto", "0"])
    (stock / ".git/info/exclude").write_text("\n".join(EXCLUDES) + "\n")
    _drop_debian_ignore(stock / ".gitignore")
    say("committing the base tree (about a minute)")
    run(git + ["add", "-A", "-f", "."], quiet=True)
    run(git + ["commit", "-q", "-m", f"base: {config.SOURCE_PACKAGE} {version}"])
    run(git + ["tag", BASE_TAG])
    (stock / ".lab-version").write_text(version + "\n")
    return stock


def _drop_debian_ignore(gitignore):
    """Debian's linux-source ignores every top-level path ('/*'), which would
    hide new files from 'git add'.  Cut that block; it does not affect builds."""
    text = gitignore.read_text()
    cut = text.find("# Debian packaging")
    if cut >= 0:
        start = text.rfind("#\n", 0, cut)
        gitignore.write_text(text[:start if start >= 0 else cut])


def _has_tag(tree, tag):
    p = run(["git", "-C", str(tree), "rev-parse", "-q", "--verify", f"refs/tags/{tag}"],
            check=False, capture=True, quiet=True)
    return p.returncode == 0


def base_version():
    f = config.source_tree("stock") / ".lab-version"
    return f.read_text().strip() if f.exists() else "unknown"


def series_files():
    """The patch files named by patches/series, in order."""
    if not config.SERIES.exists():
        return []
    names = []
    for line in config.SERIES.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line)
    files = [config.PATCHES / n for n in names]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise LabError(f"patches/series names missing files: {', '.join(missing)}")
    return files


def series_hash():
    h = hashlib.sha256()
    for f in series_files():
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _head(tree):
    return out(["git", "-C", str(tree), "rev-parse", "HEAD"])


def apply(force=False):
    """Make WORK/src/patched = base + patches/series (git am).

    The tree is left alone when it already holds exactly this series, so
    that file mtimes, and with them incremental builds, survive.  Work in
    progress is never thrown away silently: uncommitted changes, or commits
    that were not exported to patches/, stop the command unless force=True.
    """
    stock = fetch()
    patched = config.source_tree("patched")
    stamp = patched / ".lab-series"
    want = series_hash()
    if patched.exists():
        have, head = (stamp.read_text().split() + ["", ""])[:2] if stamp.exists() \
            else ("", "")
        if not force:
            if not _clean(patched):
                raise LabError(f"{patched} has uncommitted changes; commit them and "
                               "run 'lab source export', or discard them with "
                               "'lab source apply --force'")
            if head and _head(patched) != head:
                raise LabError(f"{patched} has commits that are not in patches/; "
                               "run 'lab source export', or discard them with "
                               "'lab source apply --force'")
            if have == want:
                say(f"series {want} already applied in {patched}")
                return patched
    else:
        run(["git", "-C", str(stock), "worktree", "add", "-q", "-B", "patched",
             str(patched), BASE_TAG])
    git = ["git", "-C", str(patched)]
    run(git + ["am", "--abort"], check=False, quiet=True, capture=True)
    run(git + ["reset", "-q", "--hard", BASE_TAG])
    files = series_files()
    say(f"applying {len(files)} patches")
    for f in files:
        p = run(git + ["am", "-q", "--whitespace=nowarn", str(f)], check=False,
                capture=True, quiet=True)
        if p.returncode != 0:
            run(git + ["am", "--abort"], check=False, quiet=True, capture=True)
            raise LabError(f"patch does not apply: {f.name}\n{p.stdout}{p.stderr}")
        say(f"  applied {f.name}")
    _stamp(patched)
    return patched


def _stamp(patched):
    (patched / ".lab-series").write_text(f"{series_hash()} {_head(patched)}\n")


def _clean(tree):
    return out(["git", "-C", str(tree), "status", "--porcelain",
                "--untracked-files=no"]) == ""


def export():
    """Write the commits base..patched of the patched tree back to patches/."""
    patched = config.source_tree("patched")
    if not patched.exists():
        raise LabError("no patched tree; run 'lab source apply' first")
    if not _clean(patched):
        raise LabError(f"{patched} has uncommitted changes; commit them first")
    tmp = config.WORK / "export"
    if tmp.exists():
        shutil.rmtree(tmp)
    # --abbrev=7: the index lines' hashes do not change length with the
    # number of objects packed in the tree (git's default scales with it)
    run(["git", "-C", str(patched), "format-patch", "-q", "--no-signature",
         "--zero-commit", "--no-numbered", "--no-cover-letter", "--abbrev=7",
         "-o", str(tmp), f"{BASE_TAG}..HEAD"])
    for old in config.PATCHES.glob("*.patch"):
        old.unlink()
    names = []
    for f in sorted(tmp.glob("*.patch")):
        shutil.move(str(f), config.PATCHES / f.name)
        names.append(f.name)
    config.SERIES.write_text("".join(n + "\n" for n in names))
    _stamp(patched)
    say(f"exported {len(names)} patches to {config.PATCHES}")
    return names


def _in_history(patched, cid):
    """Whether commit cid is in the tree's own history (6.12's)."""
    return run(["git", "-C", str(patched), "cat-file", "-e", f"{cid}^{{commit}}"],
               check=False, capture=True, quiet=True).returncode == 0


def without_provenance(mail):
    """A format-patch mail less the Upstream: lines of its message, which
    checkpatch does not know as a tag (a long line, an unknown link
    reference); provenance.py and commitrefs check those lines instead."""
    head, sep, rest = mail.partition("\n---\n")
    head = "\n".join(l for l in head.split("\n") if not l.startswith("Upstream: "))
    return head + sep + rest


def checkpatch():
    """checkpatch.pl --strict on every commit of the series; 0 when all clean.

    checkpatch cannot find upstream commits in 6.12's history, so its
    UNKNOWN_COMMIT_ID lookup is made against docs/upstream/commits.txt
    instead (commitrefs); every other check runs as it is."""
    patched = apply()
    commits = out(["git", "-C", str(patched), "rev-list", "--reverse",
                   f"{BASE_TAG}..HEAD"]).split()
    table = commitrefs.known()
    bad = 0
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    for c in commits:
        subject = out(["git", "-C", str(patched), "log", "-1", "--format=%s", c])
        mail = out(["git", "-C", str(patched), "format-patch", "-1", "--stdout", c])
        p = subprocess.run([str(patched / "scripts/checkpatch.pl"), "--strict",
                            "--show-types", "--ignore", "UNKNOWN_COMMIT_ID", "-"],
                           input=without_provenance(mail), cwd=patched, env=env,
                           capture_output=True, text=True)
        message = out(["git", "-C", str(patched), "log", "-1", "--format=%B", c])
        refs = commitrefs.problems(message, table,
                                   lambda cid: _in_history(patched, cid))
        refs += provenance.problems(subject, mail)
        found = cpknown.findings(p.stdout)
        known = [f for f in found if cpknown.excused(f)]
        left = [f for f in found if f not in known]
        failed = p.returncode != 0 and not found
        clean = not left and not failed and not refs
        bad += not clean
        say(f"checkpatch {'clean' if clean else 'NOT clean'}: {subject}"
            + (f" ({len(known)} moved 6.12 line(s) as 6.12 has them, "
               "lab/kernel/cpknown.py)" if known else ""))
        for f in left:
            print(f["text"] + "\n")
        if failed:
            print(p.stdout + p.stderr)
        for line in refs:
            print(f"  {line}")
    return 1 if bad else 0
