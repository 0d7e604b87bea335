"""Module symbols: does a module the series changes need a kernel symbol
that nothing exports?

modpost would stop such a build ("undefined!"), but only a build of the
modules runs modpost, and check's directory builds of the Debian configs
do not.  A static inline in a header that now names a new variable, say,
is compiled into every module that calls it.  This looks at the objects
instead, with nm:

  modules   the module objects of both trees: the ones the built
            directories' modules.order list, and every other object of the
            patched build compiled with -DMODULE (check rebuilds the objects
            that include a header the series changes);
  needs     per module object, the symbols it leaves undefined on patched
            and not on stock: what the series makes it need;
  exported  every symbol an EXPORT_SYMBOL*() of the patched source tree
            names (git grep; 6.12 turns each into an __export_symbol_ label
            and modpost into a __ksymtab_ entry at the link).

A need that is not exported is a module that does not link.  A module
part of a composite module that needs a symbol another part of it defines
would show here too; the series changes no module's own code.
"""

import re
import subprocess
from pathlib import Path

from ..core.util import LabError

EXPORT = re.compile(r"\bEXPORT_SYMBOL(?:_GPL|_NS|_NS_GPL|_GPL_FOR_MODULES)?\(\s*(\w+)")


def nm_undefined(tool, path):
    """The undefined symbols of an object (nm -u); a LabError when nm fails
    or is missing."""
    try:
        p = subprocess.run([tool, "-P", "-u", str(path)], capture_output=True, text=True)
    except OSError as e:
        raise LabError(f"cannot run {tool}: {e}") from e
    if p.returncode:
        raise LabError(f"{tool} -u {path} failed: {p.stderr.strip()}")
    return {line.split()[0] for line in p.stdout.splitlines() if line.strip()}


def exported(tree):
    """The symbols the EXPORT_SYMBOL*() lines of a source tree name."""
    # git grep picks the lines, EXPORT (one pattern) the names
    p = subprocess.run(["git", "-C", str(tree), "grep", "-h", "-F", "EXPORT_SYMBOL",
                        "--", "*.c", "*.h", "*.S"], capture_output=True, text=True)
    if p.returncode > 1:        # 1: no line matched
        raise LabError(f"git grep for exports in {tree} failed: {p.stderr.strip()}")
    return set(EXPORT.findall(p.stdout))


def module_objects(build_out, dirs, objs=()):
    """Module objects of a build directory, relative to it: what the
    directories' modules.order list, and those of objs whose .o.cmd
    compiled them with -DMODULE."""
    build_out = Path(build_out)
    mods = []
    for d in dirs:
        order = build_out / d.rstrip("/") / "modules.order"
        if order.exists():
            for line in order.read_text().split():
                rel = line[:-3] + ".o" if line.endswith(".ko") else line
                if rel not in mods:
                    mods.append(rel)
    for o in objs:
        cmd = build_out / Path(o).parent / f".{Path(o).name}.cmd"
        if o not in mods and cmd.exists() and " -DMODULE " in cmd.read_text(errors="replace"):
            mods.append(o)
    return mods


def unexported_needs(tool, patched_out, stock_out, tree, dirs, objs=()):
    """(module object, symbol) for each symbol a module object needs on
    patched and not on stock that no EXPORT_SYMBOL*() of tree names, and
    the number of module objects compared.  A module object listed but not
    built, or built on one tree only, is a LabError."""
    mods = module_objects(patched_out, dirs, objs)
    names, missing = None, []
    for rel in mods:
        ours, theirs = Path(patched_out) / rel, Path(stock_out) / rel
        if not ours.exists():
            raise LabError(f"{ours} is a module object of the build but was not built")
        if not theirs.exists():
            raise LabError(f"{rel} was built on patched and not on stock: "
                           "its needs cannot be compared")
        new = nm_undefined(tool, ours) - nm_undefined(tool, theirs)
        if new and names is None:
            names = exported(tree)
        missing += [(rel, sym) for sym in sorted(new - (names or set()))]
    return missing, len(mods)
