# SPDX-License-Identifier: GPL-2.0-only
"""KCIDB: a run's builds and tests in KCIDB I/O format.

'lab test --kcidb FILE' (and 'lab harden --kcidb FILE') also writes the
run's results as one KCIDB I/O document, the format KernelCI's database
(KCIDB) takes, of the schema version that kcidb-io (PyPI, pinned in
lab/core/deps.py) calls the latest:

  checkouts  two: the pinned source ('stock', no patches) and the source
             with the series ('patched'), whose patchset_hash is computed
             over patches/series as the schema defines it;
  builds     one per kernel a result row ran on (<arch>, <variant>,
             <flavour>), and one per 'lab check' leaf, with its status;
  tests      one per row that ran on a kernel: guest test leaves, boot
             problems, the extra boots (-cpu cortex-a72, the boot
             parameter) and the hardening verdicts.  Its path is
             'foliobatch.<name>' with every character KCIDB does not allow
             in a path node replaced by '_'; the lab's name is kept in
             misc.lab_name and the lab's status (STOCK-FAIL, FLAKY) in
             misc.lab_status.

Rows of the host (host/ unit tests, export/debian-quilt) ran on no kernel
and are left out.  validate() checks a document with kcidb-io; tests call
it on what to_kcidb() makes.  kcidb-io and its pinned dependencies live
in deps.PYLIB and run in a python3 of their own: they need a newer attrs
than the one Debian's pytest has already imported into the lab's process.
"""

import hashlib
import json
import os
import re
import subprocess
import sys

from ..core import config, deps
from ..core.util import LabError
from ..kernel import source

ORIGIN = "foliobatch"
STATUS = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP",
          "stockfail": "FAIL", "flaky": "PASS", "variant": "SKIP",
          "xfail": "DONE"}
# extra boots of a patched kernel: the part after 'patched-' in a row name
ENVIRONMENTS = {"cortex-a72": "QEMU -cpu cortex-a72 (no FEAT_TLBIRANGE)",
                "bootparam": "foliobatch= on the kernel command line"}


VALIDATE = """
import json, sys
import kcidb_io
schema = kcidb_io.schema.LATEST
if sys.argv[1] == "version":
    print(schema.major, schema.minor)
else:
    try:
        schema.validate_exactly(json.load(sys.stdin))
    except Exception as e:
        print(f"not valid KCIDB I/O v{schema.major}.{schema.minor}: "
              f"{str(e).splitlines()[0]}")
        sys.exit(1)
"""


def kcidb_io(what, doc=None):
    """Run VALIDATE with kcidb-io from deps.PYLIB: 'version' or 'validate'."""
    if not deps.pypi_ok():
        raise LabError(f"kcidb-io is not installed in {deps.PYLIB}; run "
                       "'lab deps --install'")
    env = dict(os.environ, PYTHONPATH=str(deps.PYLIB))
    p = subprocess.run([sys.executable, "-c", VALIDATE, what], env=env, text=True,
                       input=json.dumps(doc) if doc is not None else "",
                       capture_output=True)
    if p.returncode != 0:
        raise LabError(p.stdout.strip() or p.stderr.strip().splitlines()[-1])
    return p.stdout


def schema_version():
    """(major, minor) of the latest schema kcidb-io knows."""
    major, minor = kcidb_io("version").split()
    return int(major), int(minor)


def patchset_hash(files):
    """sha256 over the newline-terminated sha256 of each patch, in order
    ('sha256sum *.patch | cut -c-64 | sha256sum'); '' for no patches."""
    if not files:
        return ""
    text = "".join(hashlib.sha256(f.read_bytes()).hexdigest() + "\n" for f in files)
    return hashlib.sha256(text.encode()).hexdigest()


def node(text):
    """A KCIDB path node: letters, digits, '_' and '-' only."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", text) or "_"


def build_of(name):
    """(build key, environment, test name) of a row, or None for a row that
    ran on no kernel.  Build keys: ('kernel', arch, variant, flavour) or
    ('check', leaf)."""
    parts = name.split("/")
    if parts[0] == "check":
        return ("check", name.split("/sparse")[0]), "", None
    if parts[0] not in config.ARCHES or len(parts) < 4:
        return None
    arch, variant, where, rest = parts[0], parts[1], parts[2], "/".join(parts[3:])
    if where in ("harden", "harden-suite"):
        return ("kernel", arch, variant, "patched"), where, rest
    if where == "harden-suite-stock":
        return ("kernel", arch, variant, "stock"), "harden-suite", rest
    flavour, _, extra = where.partition("-")
    if flavour not in config.FLAVOURS:
        return None
    return ("kernel", arch, variant, flavour), ENVIRONMENTS.get(extra, extra), rest


def build_id(key):
    """foliobatch:<arch>-<variant>-<flavour>, or foliobatch:check-<arch>-<name>."""
    return f"{ORIGIN}:" + "-".join(key[1:]).replace("/", "-")


def to_kcidb(rows, version_major, version_minor, series=None, base=None):
    """The KCIDB I/O document of result rows (status, name, detail)."""
    series = source.series_files() if series is None else series
    base = base or source.base_version()
    checkouts = {
        "stock": {"id": f"{ORIGIN}:stock-{node(base)}", "origin": ORIGIN,
                  "tree_name": f"debian-{config.SOURCE_PACKAGE}",
                  "git_commit_name": base, "patchset_hash": "", "valid": True},
        "patched": {"id": f"{ORIGIN}:patched-{node(base)}-{patchset_hash(series)[:16]}",
                    "origin": ORIGIN, "tree_name": f"debian-{config.SOURCE_PACKAGE}",
                    "git_commit_name": base, "patchset_hash": patchset_hash(series),
                    "comment": f"{len(series)} patches of foliobatch", "valid": True},
    }
    builds, tests = {}, []
    for status, name, detail in rows:
        where = build_of(name)
        if where is None:
            continue
        key, env, test = where
        if key[0] == "check":
            arch = key[1].split("/")[1]
            b = builds.setdefault(key, {
                "id": build_id(key), "origin": ORIGIN, "checkout_id":
                checkouts["patched"]["id"], "architecture": arch,
                "config_name": key[1].split("/", 2)[2], "status": "PASS"})
            if name == key[1]:
                b["status"] = STATUS[status]
                if detail:
                    b["comment"] = detail
            continue
        _, arch, variant, flavour = key
        builds.setdefault(key, {
            "id": build_id(key), "origin": ORIGIN,
            "checkout_id": checkouts[flavour]["id"], "architecture": arch,
            "config_name": f"lab-{variant}", "status": "PASS"})
        t = {"id": f"{ORIGIN}:{len(tests)}-{node(name)}"[:255],
             "build_id": build_id(key), "origin": ORIGIN,
             "path": ".".join([ORIGIN] + [node(p) for p in re.split(r"[./]", test) if p]),
             "status": STATUS[status], "misc": {"lab_name": name,
                                                "lab_status": status.upper()}}
        if env:
            t["environment"] = {"comment": env}
        if detail:
            t["comment"] = detail
        tests.append(t)
    return {"version": {"major": version_major, "minor": version_minor},
            "checkouts": list(checkouts.values()),
            "builds": list(builds.values()), "tests": tests}


def validate(doc):
    """Raise LabError unless kcidb-io's latest schema accepts doc."""
    kcidb_io("validate", doc)


def write(rows, path):
    """Write and validate the KCIDB document of rows; return (builds, tests)."""
    doc = to_kcidb(rows, *schema_version())
    validate(doc)
    path.write_text(json.dumps(doc, indent=1))
    return len(doc["builds"]), len(doc["tests"])
