# SPDX-License-Identifier: GPL-2.0-only
"""Skips: which SKIPs of a test boot are accounted for.

A SKIP is accounted for when it is a fixture variant for the other kernel
(LAB_REQUIRE_FLAVOUR's "variant for the stock kernel"), which the caller
checks against that kernel's boot, or when skips.tsv, the one reviewed list,
declares it: a glob over the row name, a glob over the message, and why.
Anything else is an undeclared skip, and fails.
"""

import fnmatch
import functools
import re
from dataclasses import dataclass
from pathlib import Path

DECLARED = Path(__file__).with_name("skips.tsv")
# guest/include/lab_test.h LAB_REQUIRE_FLAVOUR(), as the own tests call it
VARIANT_RE = re.compile(r"^variant for the (stock|patched) kernel$")


@dataclass(frozen=True)
class Declared:
    row: str        # glob over "<arch>/<variant>/<boot>/<program>/<leaf>"
    message: str    # glob over the SKIP message
    why: str


def load(path=DECLARED):
    """The declarations of a skips file, in order."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise ValueError(f"{path}:{n}: want row glob, message glob and why, "
                             f"tab-separated: {line!r}")
        out.append(Declared(*(p.strip() for p in parts)))
    return out


@functools.lru_cache(maxsize=None)
def _default():
    """skips.tsv, read once per run."""
    return tuple(load())


def declared(row, message, table=None):
    """The declaration that accounts for a SKIP of row @row with @message,
    or None."""
    for d in _default() if table is None else table:
        if fnmatch.fnmatchcase(row, d.row) and fnmatch.fnmatchcase(message, d.message):
            return d
    return None


def other_kernel(message):
    """The kernel a fixture variant that skipped with @message is for
    ("stock" or "patched"), or None if the message is no such variant's."""
    m = VARIANT_RE.match(message.strip())
    return m.group(1) if m else None


def account(row, message, table=None):
    """(status, detail) of a SKIP row that is not a variant for the other
    kernel: ('skip', message) when declared, else ('fail', why not)."""
    if declared(row, message, table):
        return "skip", message
    return "fail", f"undeclared skip: {message} (lab/guest/skips.tsv declares none)"
