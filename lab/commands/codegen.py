# SPDX-License-Identifier: GPL-2.0-only
"""The 'lab codegen' command: the claims of kernel/codegen.py's SAME, each
checked in the objects of the two built kernels of an arch (stock 6.12 and
the series, the lab's config), and on request every function of an object.

It builds nothing: the kernels are 'lab build's (or two build directories
named on the command line, one arch).  A claim whose object or function is
missing fails like one whose code differs.
"""

from pathlib import Path

from ..core import config
from ..core.util import LabError, say
from ..kernel import codegen

VARIANT = "default"


def build_dirs(arch_name, stock=None, patched=None):
    """(stock, patched) build directories of @arch_name: the lab's unless
    both are given."""
    if (stock is None) != (patched is None):
        raise LabError("--stock-dir and --patched-dir go together")
    if stock is not None:
        if Path(stock).resolve() == Path(patched).resolve():
            raise LabError("--stock-dir and --patched-dir name one directory: "
                           "every claim would hold")
        return Path(stock), Path(patched)
    return (config.build_dir(arch_name, VARIANT, "stock"),
            config.build_dir(arch_name, VARIANT, "patched"))


class Objects:
    """codegen.functions() of the objects of one build directory, each
    disassembled once."""

    def __init__(self, root, objdump):
        self.root, self.objdump, self.seen = root, objdump, {}

    def __getitem__(self, obj):
        if obj not in self.seen:
            self.seen[obj] = codegen.functions(self.root / obj, self.objdump)
        return self.seen[obj]


def claim_rows(arch_name, stock, patched, claims=codegen.SAME):
    """[(ok, line)] of the claims of @arch_name, from two Objects."""
    rows = []
    for c in (c for c in claims if c.arch == arch_name):
        name = (c.stock if c.stock == c.patched else f"{c.stock} = {c.patched}")
        try:
            status, detail = codegen.compare(stock[c.obj].get(c.stock),
                                             patched[c.obj].get(c.patched))
        except LabError as e:
            status, detail = "missing", str(e)
        rows.append((status == "same",
                     f"{arch_name} {c.obj} {name} ({c.patch}): {status}, {detail}"))
    return rows


def arch_objects(arch_name, stock=None, patched=None):
    """(stock, patched) Objects of @arch_name's two build directories
    (build_dirs()), disassembled with the arch's objdump."""
    s_dir, p_dir = build_dirs(arch_name, stock, patched)
    objdump = codegen.objdump_cmd(config.arch(arch_name).cross)
    return Objects(s_dir, objdump), Objects(p_dir, objdump)


def row_name(claim):
    """The name of @claim's row in 'lab test': <arch>/<variant>/codegen/<object>:<function>."""
    return f"{claim.arch}/{VARIANT}/codegen/{claim.obj}:{claim.patched}"


def tally_claims(tally, arches, claims=codegen.SAME):
    """'lab test''s rows for the claims of @arches, in the objects of the
    kernels it built: a row per claim, passed when the code is the same and
    failed when it differs or its object or function is missing (a build
    that did not happen leaves no object: a failed row, not a pass)."""
    for arch_name in arches:
        mine = [c for c in claims if c.arch == arch_name]
        if not mine:
            continue
        rows = claim_rows(arch_name, *arch_objects(arch_name), mine)
        if len(rows) != len(mine):
            tally.add("fail", f"{arch_name}/{VARIANT}/codegen/lab",
                      f"{len(rows)} results for {len(mine)} claims")
        for c, (ok, line) in zip(mine, rows):
            tally.add("pass" if ok else "fail", row_name(c), "" if ok else line)


def main(arches, stock_dir=None, patched_dir=None, objects=()):
    """Print each claim as a KTAP line and each object of @objects function
    by function; return 0 when every claim holds, 1 otherwise."""
    if stock_dir is not None and len(arches) != 1:
        raise LabError("--stock-dir and --patched-dir need one arch (-a)")
    rows = []
    for arch_name in arches:
        stock, patched = arch_objects(arch_name, stock_dir, patched_dir)
        say(f"{arch_name}: 6.12 in {stock.root}, the series in {patched.root}")
        rows += claim_rows(arch_name, stock, patched)
        for obj in objects:
            for f, status, detail in codegen.object_table(stock[obj], patched[obj]):
                print(f"# {arch_name} {obj} {f}: {status}, {detail}")
    print("KTAP version 1")
    print(f"1..{len(rows)}")
    for n, (ok, line) in enumerate(rows, 1):
        print(f"{'ok' if ok else 'not ok'} {n} {line}")
    failed = sum(1 for ok, _ in rows if not ok)
    print(f"{len(rows) - failed} passed, {failed} failed")
    return 1 if failed or not rows else 0
