"""Host tests of lab/kernel/modsyms.py on objects the host's gcc builds: a
module that needs, with the series, a symbol that no EXPORT_SYMBOL*() of
the tree names fails the check until the tree exports it; what stock's
module needed already is not the series' business; a module object built
on one tree only, or listed and not built, is an error, not a pass."""

import shutil
import subprocess

import pytest

from lab.core.util import LabError
from lab.kernel import check, modsyms

OLD_USER = "int probe(void) { return 0; }\n"
NEW_USER = "extern int foliobatch_new_key;\nint probe(void) { return foliobatch_new_key; }\n"
DIRS = ["mm/", "drivers/xen/"]
MOD = "drivers/xen/xen-privcmd.o"


def compile_obj(root, rel, text, flags=()):
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed to build the test objects"
    src = root / "src" / (rel[:-2] + ".c")
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text)
    obj = root / rel
    obj.parent.mkdir(parents=True, exist_ok=True)
    cmd = [gcc, "-c", *flags, str(src), "-o", str(obj)]
    subprocess.run(cmd, check=True)
    # kbuild's record of the command, which module_objects() reads
    (obj.parent / f".{obj.name}.cmd").write_text(f"savedcmd_{rel} := {' '.join(cmd)}\n")


def build(tmp, name, module_text, listed=True):
    """A build directory with one module object in drivers/xen/, listed in
    modules.order (or, unlisted, compiled with -DMODULE)."""
    root = tmp / name
    compile_obj(root, MOD, module_text, flags=() if listed else ("-DMODULE",))
    if listed:
        (root / "drivers/xen/modules.order").write_text(MOD + "\n")
    return root


def tree(tmp, exports):
    """A git tree whose mm/foliobatch.c exports what exports names."""
    t = tmp / "tree"
    (t / "mm").mkdir(parents=True)
    (t / "mm/foliobatch.c").write_text(
        "int foliobatch_new_key;\n" +
        "".join(f"EXPORT_SYMBOL_GPL({e});\n" for e in exports))
    subprocess.run(["git", "init", "-q", str(t)], check=True)
    subprocess.run(["git", "-C", str(t), "add", "."], check=True)
    return t


def test_a_module_needing_an_unexported_symbol_fails(tmp_path):
    stock, patched = build(tmp_path, "stock", OLD_USER), build(tmp_path, "patched", NEW_USER)
    missing, n = modsyms.unexported_needs("nm", patched, stock, tree(tmp_path, []), DIRS)
    assert (missing, n) == ([(MOD, "foliobatch_new_key")], 1)


def test_an_exported_symbol_passes(tmp_path):
    stock, patched = build(tmp_path, "stock", OLD_USER), build(tmp_path, "patched", NEW_USER)
    t = tree(tmp_path, ["foliobatch_new_key"])
    assert modsyms.unexported_needs("nm", patched, stock, t, DIRS) == ([], 1)


def test_what_stock_needed_already_is_not_the_series_business(tmp_path):
    stock, patched = build(tmp_path, "stock", NEW_USER), build(tmp_path, "patched", NEW_USER)
    assert modsyms.unexported_needs("nm", patched, stock, tree(tmp_path, []), DIRS) == ([], 1)


def test_an_unlisted_object_compiled_as_a_module_is_checked(tmp_path):
    stock = build(tmp_path, "stock", OLD_USER, listed=False)
    patched = build(tmp_path, "patched", NEW_USER, listed=False)
    missing, n = modsyms.unexported_needs("nm", patched, stock, tree(tmp_path, []),
                                          ["mm/"], objs=[MOD])
    assert (missing, n) == ([(MOD, "foliobatch_new_key")], 1)


def test_no_module_object_counts_none(tmp_path):
    (tmp_path / "patched").mkdir()
    (tmp_path / "stock").mkdir()
    assert modsyms.unexported_needs("nm", tmp_path / "patched", tmp_path / "stock",
                                    tree(tmp_path, []), DIRS) == ([], 0)


def test_a_module_built_on_one_tree_only_is_an_error(tmp_path):
    stock, patched = build(tmp_path, "stock", OLD_USER), build(tmp_path, "patched", NEW_USER)
    t = tree(tmp_path, [])
    (stock / MOD).unlink()
    with pytest.raises(LabError, match="not on stock"):
        modsyms.unexported_needs("nm", patched, stock, t, DIRS)
    (patched / MOD).unlink()
    with pytest.raises(LabError, match="was not built"):
        modsyms.unexported_needs("nm", patched, stock, t, DIRS)


def test_a_missing_nm_is_an_error(tmp_path):
    stock, patched = build(tmp_path, "stock", OLD_USER), build(tmp_path, "patched", NEW_USER)
    with pytest.raises(LabError, match="cannot run"):
        modsyms.unexported_needs("no-such-nm", patched, stock, tree(tmp_path, []), DIRS)


def test_modules_on_reads_the_config(tmp_path):
    (tmp_path / ".config").write_text("CONFIG_64BIT=y\nCONFIG_MODULES=y\n")
    assert check.modules_on(tmp_path)
    (tmp_path / ".config").write_text("CONFIG_64BIT=y\n# CONFIG_MODULES is not set\n")
    assert not check.modules_on(tmp_path)
