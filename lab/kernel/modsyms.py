# SPDX-License-Identifier: GPL-2.0-only
"""Module symbols: does every module of a built kernel find the symbols it
needs exported, with the series as without it?

The record is what the build made.  When make builds the modules,
modpost (scripts/mod/modpost.c, run by scripts/Makefile.modpost) reads
each module's <module>.o as the build directory's modules.order lists it,
looks up every symbol the object leaves undefined among the exports of
vmlinux and the modules, stops the build at one that nothing exports
('"sym" [mod.ko] undefined!'), and writes Module.symvers, one line per
export:

    0x<crc>\t<symbol>\t<module>\t<EXPORT_SYMBOL|EXPORT_SYMBOL_GPL>\t<namespace>

Here, for the stock and the patched build of one config:

  exports  each tree's Module.symvers;
  needs    per module of each tree (its modules.order), the symbols its .o
           leaves undefined (nm -u), as modpost takes them: global ones,
           not weak ones (a weak need may stay unresolved), nor
           __this_module or _GLOBAL_OFFSET_TABLE_ (the final link of the
           .ko resolves them).

A need that stock's Module.symvers exports and patched's does not fails,
whether or not the series changes the module that needs it: in the
patched build it is a module that does not link, in the stock build an
export the series takes away from a module that used it (and from an
out-of-tree module built the same way).  A need of a patched module that
neither tree exports is modpost's "undefined!".

Only a build of the modules writes Module.symvers: a directory build runs
no modpost, and 'make vmlinux' writes vmlinux.symvers (vmlinux's exports
alone).  Check does not call this for those, and says so in the verdict.
"""

import subprocess
from pathlib import Path

from ..core.util import LabError

SYMVERS = "Module.symvers"
ORDER = "modules.order"
# undefined symbols modpost does not look up (ignore_undef_symbol(), the
# entries of every arch)
RESOLVED_AT_LINK = {"__this_module", "_GLOBAL_OFFSET_TABLE_"}
# objects per nm call
NM_BATCH = 200


def read_symvers(path):
    """{symbol: (module, export type, namespace)} of a Module.symvers; a
    LabError when the file is missing or a line is not modpost's."""
    path = Path(path)
    if not path.exists():
        raise LabError(f"no {path.name} in {path.parent}")
    exports = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 5 or not fields[0].startswith("0x") or not fields[1] \
                or fields[3] not in ("EXPORT_SYMBOL", "EXPORT_SYMBOL_GPL"):
            raise LabError(f"{path}:{n}: not a Module.symvers line: {line!r}")
        exports[fields[1]] = (fields[2], fields[3], fields[4])
    return exports


def modules(build_out):
    """The modules of a build directory, as the objects modpost reads (paths
    relative to it), in modules.order's order; a LabError without
    modules.order, or for a module listed and not built."""
    build_out = Path(build_out)
    order = build_out / ORDER
    if not order.exists():
        raise LabError(f"no {ORDER} in {build_out}")
    mods = []
    for line in order.read_text().split():
        rel = line[:-3] + ".o" if line.endswith(".ko") else line
        if not (build_out / rel).exists():
            raise LabError(f"{rel} is in {order} but was not built")
        if rel not in mods:
            mods.append(rel)
    return mods


def needs(tool, build_out, objs):
    """{object: set of symbols it needs from elsewhere} for objects of a
    build directory (nm -u, see the module docstring); a LabError when nm
    fails or is missing."""
    found = {o: set() for o in objs}
    for i in range(0, len(objs), NM_BATCH):
        batch = objs[i:i + NM_BATCH]
        try:
            p = subprocess.run([tool, "-A", "-P", "-u", *batch], cwd=build_out,
                               capture_output=True, text=True)
        except OSError as e:
            raise LabError(f"cannot run {tool}: {e}") from e
        if p.returncode:
            raise LabError(f"{tool} -u in {build_out} failed: {p.stderr.strip()}")
        for line in p.stdout.splitlines():
            obj, _, rest = line.partition(": ")
            fields = rest.split()
            if obj in found and len(fields) >= 2 and fields[1] == "U" \
                    and fields[0] not in RESOLVED_AT_LINK:
                found[obj].add(fields[0])
    return found


def missing_exports(tool, patched_out, stock_out):
    """([(module, symbol, why)], number of patched modules): each need of a
    module of either build that stock's Module.symvers exports and
    patched's does not, and each need of a patched module that neither
    exports (see the module docstring), sorted.  A LabError when a build
    has no Module.symvers or modules.order, or a listed module is missing."""
    outs = {"patched": Path(patched_out), "stock": Path(stock_out)}
    exports = {f: read_symvers(out / SYMVERS) for f, out in outs.items()}
    problems, count = {}, 0
    for flavour, out in outs.items():
        mods = modules(out)
        if flavour == "patched":
            count = len(mods)
        for obj, syms in needs(tool, out, mods).items():
            module = obj[:-2] if obj.endswith(".o") else obj
            for sym in syms - exports["patched"].keys():
                if sym in exports["stock"]:
                    why = "stock exports it, the series does not"
                elif flavour == "patched":
                    why = "neither tree exports it (modpost: undefined!)"
                else:
                    continue        # stock's own, with or without the series
                problems.setdefault((module, sym), why)
    return sorted((m, s, why) for (m, s), why in problems.items()), count
