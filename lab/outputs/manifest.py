# SPDX-License-Identifier: GPL-2.0-only
"""Manifest: what a bench directory records of how its runs were made, and
the checks that refuse a directory whose runs cannot be trusted.

'lab bench' writes manifest.json into its directory when it starts (no
exit status yet) and again when it ends: the lab's commit (git rev-parse
HEAD, "+changes" when the work tree differed from it), patches_tree (git
rev-parse HEAD:patches), the sha256 of each kernel's .config (the built
trees), the compiler, binutils and QEMU versions of each arch, the bench's
exit status, and the sha256 of its runs.json and boots.json as they were
when it ended.

'lab report DIR' and 'lab report --history' refuse (refusals()) a
directory whose manifest says the bench failed or did not end, whose
runs.json or boots.json does not match the sha256 it records, or whose
runs.json and boots.json disagree on run counts (boots.json's 'runs' of
each boot against the records of runs.json from that boot's console).
A directory stored before benches wrote manifests has none: the count
check applies to it, and it is marked as one that cannot be checked
against a recorded sha256 (describe()), never passed as checked.
"""

import hashlib
import json
import time
from collections import Counter
from pathlib import Path

from ..core.util import LabError

NAME = "manifest.json"
# the files of a bench directory whose sha256 the manifest records
CHECKED = ("runs.json", "boots.json")
VERSION = 1


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write(outdir, info, exit_status=None):
    """manifest.json of a bench directory: info (lab_commit, patches_tree,
    kernels, tools, ...), the exit status (None while the bench runs), the
    time, and the sha256 of each of CHECKED that the directory holds."""
    data = dict(info, manifest=VERSION, exit_status=exit_status,
                written=time.strftime("%Y-%m-%d %H:%M:%S"),
                sha256={name: sha256(outdir / name) for name in CHECKED
                        if (outdir / name).is_file()})
    (outdir / NAME).write_text(json.dumps(data, indent=1) + "\n")
    return data


def read(d):
    """The manifest of a directory, None when it has none; a LabError when
    it is not a JSON object."""
    f = Path(d) / NAME
    if not f.exists():
        return None
    try:
        data = json.loads(f.read_text(errors="replace"))
    except json.JSONDecodeError as e:
        raise LabError(f"{f} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise LabError(f"{f} is not a bench's manifest (a JSON object)")
    return data


def booted_stock(d):
    """Did the bench of a directory boot the stock kernels: its manifest's
    "stock" (lab bench --stock); True for a manifest without it, and for a
    directory without one, stored when every bench booted stock."""
    m = read(d)
    return True if m is None else bool(m.get("stock", True))


def count_disagreements(runs, boots):
    """Where runs.json and boots.json disagree on run counts: boots.json
    gives each boot's runs kept ('runs'), runs.json holds those runs, each
    with its boot's console; one text per console whose counts differ
    (runs of a console no boot lists too).  [] when they agree."""
    if not all("console" in b and "runs" in b for b in boots) or \
            not all("console" in r for r in runs):
        # records without the console: count per arch and kernel instead
        key_b = key_r = lambda x: f"{x['arch']}/{x.get('flavour', 'patched')}"
    else:
        key_b = key_r = lambda x: x["console"]
    want, names = Counter(), {}
    for b in boots:
        want[key_b(b)] += b.get("runs", 0)
        names.setdefault(key_b(b), []).append(b.get("name", key_b(b)))
    have = Counter(key_r(r) for r in runs)
    out = []
    for k in sorted(set(want) | set(have), key=str):
        if want[k] != have[k]:
            who = ", ".join(names.get(k, [])) or f"no boot of boots.json ({k})"
            out.append(f"boots.json says {want[k]} runs kept of {who}, runs.json "
                       f"holds {have[k]}")
    return out


def refusals(d, runs, boots):
    """Why a bench directory's runs are refused: [] when they are not.
    runs and boots are its runs.json and boots.json (None: none stored)."""
    d = Path(d)
    why = []
    m = read(d)
    if m is not None:
        status = m.get("exit_status")
        if status is None:
            why.append(f"its bench did not end ({NAME} records no exit status)")
        elif status != 0:
            why.append(f"its bench failed (exit status {status})")
        for name, want in sorted((m.get("sha256") or {}).items()):
            f = d / name
            if not f.is_file():
                why.append(f"{name} is missing; {NAME} records its sha256")
            elif sha256(f) != want:
                why.append(f"{name} does not match the sha256 {NAME} records "
                           f"({want[:12]}...): it was changed after the bench")
        if "runs.json" not in (m.get("sha256") or {}):
            why.append(f"{NAME} records no sha256 of runs.json")
    if boots is not None:
        counts = count_disagreements(runs, boots)
        if counts:
            why.append("runs.json and boots.json disagree on run counts: "
                       + "; ".join(counts))
    return why


def check(d, runs, boots):
    """A LabError naming the directory and why, when refusals() has any."""
    why = refusals(d, runs, boots)
    if why:
        raise LabError(f"{d}: refused: {'; '.join(why)}")


def describe(d):
    """One line on what a directory's runs can be checked against: its
    manifest (commit, patches tree, exit status, sha256 checked), or that
    it has none (stored before manifests: not sha-checked)."""
    m = read(d)
    if m is None:
        return (f"No {NAME}: stored before benches recorded one, so its runs.json "
                "cannot be checked against a recorded sha256 (its run counts "
                "agree with boots.json where it has one).")
    return (f"{NAME}: lab {m.get('lab_commit', '?')}, patches tree "
            f"{str(m.get('patches_tree', '?'))[:12]}, exit status "
            f"{m.get('exit_status')}; " + ", ".join(sorted(m.get("sha256") or {}))
            + " match the sha256 it records.")
