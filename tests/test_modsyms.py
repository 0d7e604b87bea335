# SPDX-License-Identifier: GPL-2.0-only
"""Host tests of lab/kernel/modsyms.py and of the module-symbol check of a
'lab check' leaf, on what a build of the modules leaves behind, made up
here: Module.symvers in modpost's format, modules.order, and module
objects the host's gcc compiles.  A module that needs a symbol stock
exports and patched does not fails, whether or not the series changed
it; a patched module that needs a symbol neither tree exports fails; a
leaf that cannot check (no modules, no modpost, no Module.symvers) says
so instead of passing."""

import shutil
import subprocess

import pytest

from lab.core.tally import Tally
from lab.core.util import LabError
from lab.commands import check as ccheck
from lab.kernel import check, modsyms

PRIVCMD = "drivers/xen/xen-privcmd.o"
GNTDEV = "drivers/xen/xen-gntdev.o"
# a module of Debian's arm64 config that the series does not change, and
# whose ptep_get() (inline, arm64) names the series' static key
USES_KEY = ("extern int contpte_early_exit;\n"
            "int privcmd_probe(void) { return contpte_early_exit; }\n")
PLAIN = "extern int vm_insert_page(void);\nint probe(void) { return vm_insert_page(); }\n"


def compile_obj(root, rel, text):
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed to build the test objects"
    src = root / "src" / (rel[:-2] + ".c")
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([gcc, "-c", str(src), "-o", str(root / rel)], check=True)


def symvers_line(sym, module="vmlinux", kind="EXPORT_SYMBOL_GPL", ns=""):
    return f"0x1a2b3c4d\t{sym}\t{module}\t{kind}\t{ns}\n"


def made(root, modules, exports, config="CONFIG_64BIT=y\nCONFIG_MODULES=y\n"):
    """A build directory as a build of the modules leaves it: .config,
    modules.order, each module's .o (modules: {object: C text}) and
    Module.symvers (exports: symbols of vmlinux, or (symbol, module))."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".config").write_text(config)
    for rel, text in modules.items():
        compile_obj(root, rel, text)
    (root / "modules.order").write_text("".join(f"{rel}\n" for rel in modules))
    (root / "Module.symvers").write_text("".join(
        symvers_line(*((e,) if isinstance(e, str) else e)) for e in exports))
    return root


EXPORTS = ["vm_insert_page", "contpte_early_exit"]


# --- modsyms -------------------------------------------------------------------

def test_read_symvers_reads_modposts_format(tmp_path):
    f = tmp_path / "Module.symvers"
    f.write_text(symvers_line("vm_insert_page", kind="EXPORT_SYMBOL") +
                 symvers_line("xen_privcmd_ioctl", "drivers/xen/xen-privcmd") +
                 symvers_line("dma_buf_map", "vmlinux", ns="DMA_BUF"))
    assert modsyms.read_symvers(f) == {
        "vm_insert_page": ("vmlinux", "EXPORT_SYMBOL", ""),
        "xen_privcmd_ioctl": ("drivers/xen/xen-privcmd", "EXPORT_SYMBOL_GPL", ""),
        "dma_buf_map": ("vmlinux", "EXPORT_SYMBOL_GPL", "DMA_BUF")}
    f.write_text("vm_insert_page vmlinux EXPORT_SYMBOL\n")
    with pytest.raises(LabError, match="not a Module.symvers line"):
        modsyms.read_symvers(f)
    with pytest.raises(LabError, match="no Module.symvers"):
        modsyms.read_symvers(tmp_path / "out" / "Module.symvers")


def test_modules_are_modules_order_and_must_be_built(tmp_path):
    out = made(tmp_path / "out", {PRIVCMD: PLAIN}, EXPORTS)
    assert modsyms.modules(out) == [PRIVCMD]
    # before 6.2 modules.order named the .ko
    (out / "modules.order").write_text("drivers/xen/xen-privcmd.ko\n")
    assert modsyms.modules(out) == [PRIVCMD]
    (out / "modules.order").write_text(f"{PRIVCMD}\n{GNTDEV}\n")
    with pytest.raises(LabError, match=f"{GNTDEV} is in .* but was not built"):
        modsyms.modules(out)
    (out / "modules.order").unlink()
    with pytest.raises(LabError, match="no modules.order"):
        modsyms.modules(out)


def test_needs_are_what_modpost_looks_up(tmp_path):
    # weak needs may stay unresolved; __this_module and the GOT are the .ko's
    out = tmp_path / "out"
    compile_obj(out, PRIVCMD, USES_KEY + PLAIN.replace("probe", "probe2") +
                "extern int __this_module;\nint *me(void) { return &__this_module; }\n"
                "__attribute__((weak)) int optional(void);\n"
                "int maybe(void) { return optional ? optional() : 0; }\n")
    assert modsyms.needs("nm", out, [PRIVCMD]) == {
        PRIVCMD: {"contpte_early_exit", "vm_insert_page"}}
    with pytest.raises(LabError, match="cannot run"):
        modsyms.needs("no-such-nm", out, [PRIVCMD])


def test_needs_reads_many_objects(tmp_path, monkeypatch):
    monkeypatch.setattr(modsyms, "NM_BATCH", 2)
    out = tmp_path / "out"
    objs = [f"drivers/m{i}.o" for i in range(5)]
    for i, rel in enumerate(objs):
        compile_obj(out, rel, f"extern int s{i};\nint f{i}(void) {{ return s{i}; }}\n")
    assert modsyms.needs("nm", out, objs) == {rel: {f"s{i}"} for i, rel in enumerate(objs)}


def test_an_export_the_series_takes_away_fails_a_module_it_did_not_change(tmp_path):
    # the same object on both trees: the series did not touch the module
    stock = made(tmp_path / "stock", {PRIVCMD: USES_KEY, GNTDEV: PLAIN}, EXPORTS)
    patched = made(tmp_path / "patched", {PRIVCMD: USES_KEY, GNTDEV: PLAIN},
                   ["vm_insert_page"])
    assert modsyms.missing_exports("nm", patched, stock) == (
        [("drivers/xen/xen-privcmd", "contpte_early_exit",
          "stock exports it, the series does not")], 2)


def test_a_stock_module_that_loses_an_export_fails(tmp_path):
    # patched's copy of the module no longer needs the symbol, whose export
    # the series took away: what stock's module (and an out-of-tree one
    # built the same way) needs is gone
    stock = made(tmp_path / "stock", {PRIVCMD: USES_KEY}, EXPORTS)
    patched = made(tmp_path / "patched", {PRIVCMD: PLAIN}, ["vm_insert_page"])
    missing, _ = modsyms.missing_exports("nm", patched, stock)
    assert missing == [("drivers/xen/xen-privcmd", "contpte_early_exit",
                        "stock exports it, the series does not")]


def test_a_need_neither_tree_exports_fails_a_patched_module(tmp_path):
    stock = made(tmp_path / "stock", {PRIVCMD: PLAIN}, ["vm_insert_page"])
    patched = made(tmp_path / "patched", {PRIVCMD: USES_KEY}, ["vm_insert_page"])
    missing, _ = modsyms.missing_exports("nm", patched, stock)
    assert missing == [("drivers/xen/xen-privcmd", "contpte_early_exit",
                        "neither tree exports it (modpost: undefined!)")]
    # stock's own unresolved need is not the series' business
    assert modsyms.missing_exports("nm", stock, stock) == ([], 1)


def test_exports_of_both_trees_and_of_modules_pass(tmp_path):
    uses_module = ("extern int xen_privcmd_ioctl(void);\n"
                   "int g(void) { return xen_privcmd_ioctl(); }\n")
    mods = {PRIVCMD: USES_KEY, GNTDEV: uses_module}
    exports = EXPORTS + [("xen_privcmd_ioctl", "drivers/xen/xen-privcmd")]
    stock = made(tmp_path / "stock", mods, exports)
    patched = made(tmp_path / "patched", mods, exports)
    assert modsyms.missing_exports("nm", patched, stock) == ([], 2)


def test_a_build_without_module_symvers_cannot_pass(tmp_path):
    stock = made(tmp_path / "stock", {PRIVCMD: USES_KEY}, EXPORTS)
    patched = made(tmp_path / "patched", {PRIVCMD: USES_KEY}, EXPORTS)
    (patched / "Module.symvers").unlink()
    with pytest.raises(LabError, match="no Module.symvers in .*patched"):
        modsyms.missing_exports("nm", patched, stock)


# --- the check of a leaf --------------------------------------------------------

@pytest.fixture
def leaf(tmp_path, monkeypatch):
    """build_variant() whose builds (make), configs and W=1 passes do
    nothing: the build directories tmp_path/<flavour> hold what a test put
    there.  Returns the variant's verdict for (leaf, full)."""
    monkeypatch.setattr(check.config, "log_dir", lambda: tmp_path)
    monkeypatch.setattr(check, "build_dir", lambda v, f: tmp_path / f)
    monkeypatch.setattr(check, "changed", lambda pattern: [])
    monkeypatch.setattr(check, "configure", lambda *a: None)
    monkeypatch.setattr(check, "make", lambda *a, **k: True)
    monkeypatch.setattr(check, "record_warnings", lambda out, text: {})
    monkeypatch.setattr(check, "extra_pass", lambda *a, **k: (True, {}))

    def run(name, full=False, quick=False):
        v = check.select([name])[0]
        for f in ("patched", "stock"):
            (tmp_path / f).mkdir(exist_ok=True)
        return check.build_variant(v, check.TARGETS[v.arch], full, quick)
    return run


def test_a_debian_leaf_fails_on_an_export_the_series_takes_away(tmp_path, leaf):
    made(tmp_path / "stock", {PRIVCMD: USES_KEY, GNTDEV: PLAIN}, EXPORTS)
    made(tmp_path / "patched", {PRIVCMD: USES_KEY, GNTDEV: PLAIN}, ["vm_insert_page"])
    result = leaf("x86_64/debian-amd64", full=True)
    assert result["status"] == "fail"
    assert result["detail"].startswith(
        "1 symbol that a module needs and the series' Module.symvers does not export: "
        "drivers/xen/xen-privcmd: contpte_early_exit (stock exports it, the series does not)")


def test_a_debian_leaf_fails_on_a_need_nothing_exports(tmp_path, leaf):
    made(tmp_path / "stock", {PRIVCMD: PLAIN}, ["vm_insert_page"])
    made(tmp_path / "patched", {PRIVCMD: USES_KEY}, ["vm_insert_page"])
    result = leaf("x86_64/debian-amd64", full=True)
    assert result["status"] == "fail" and "modpost: undefined!" in result["detail"]


def test_a_debian_leaf_passes_with_what_it_checked(tmp_path, leaf):
    made(tmp_path / "stock", {PRIVCMD: USES_KEY, GNTDEV: PLAIN}, EXPORTS)
    made(tmp_path / "patched", {PRIVCMD: USES_KEY, GNTDEV: PLAIN}, EXPORTS)
    result = leaf("x86_64/debian-amd64", full=True)
    assert result["status"] == "pass"
    assert "module symbols: what 2 modules need is exported (Module.symvers of both " \
        "trees)" in result["detail"]


def test_a_whole_build_of_the_modules_without_module_symvers_fails(tmp_path, leaf):
    # a result that was expected and did not arrive
    made(tmp_path / "stock", {PRIVCMD: USES_KEY}, EXPORTS)
    made(tmp_path / "patched", {PRIVCMD: USES_KEY}, EXPORTS)
    (tmp_path / "stock" / "Module.symvers").unlink()
    result = leaf("x86_64/debian-amd64", full=True)
    assert result["status"] == "fail"
    assert "module symbols not checked: no Module.symvers in" in result["detail"]


def test_a_directory_build_says_it_did_not_check_and_reads_no_old_symvers(tmp_path, leaf):
    # Module.symvers and modules.order of an earlier --full build describe
    # other objects: a directory build runs no modpost
    for f in ("stock", "patched"):
        made(tmp_path / f, {PRIVCMD: USES_KEY}, EXPORTS if f == "stock" else [])
        shutil.copyfile(tmp_path / f / "modules.order",
                        tmp_path / f / "drivers/xen/modules.order")
    result = leaf("x86_64/debian-amd64")
    assert result["status"] == "pass"
    assert "no modpost in a directory build: module symbols not checked (--full builds " \
        "the modules)" in result["detail"]


def test_a_config_without_modules_says_so(tmp_path, leaf):
    for f in ("stock", "patched"):
        (tmp_path / f).mkdir()
        (tmp_path / f / ".config").write_text("CONFIG_64BIT=y\n# CONFIG_MODULES is not set\n")
    result = leaf("x86_64/lab-pt-reclaim-off")
    assert result["status"] == "pass"
    assert result["detail"] == "the config builds no modules: module symbols not checked"


def test_an_empty_modules_order_says_so(tmp_path, leaf):
    made(tmp_path / "stock", {}, EXPORTS)
    made(tmp_path / "patched", {}, EXPORTS)
    result = leaf("riscv64/defconfig", full=True)
    assert result["status"] == "pass" and "modules.order is empty" in result["detail"]


def test_the_failure_is_printed_under_the_leaf(tmp_path, leaf):
    made(tmp_path / "stock", {PRIVCMD: USES_KEY}, EXPORTS)
    made(tmp_path / "patched", {PRIVCMD: USES_KEY}, ["vm_insert_page"])
    tally = Tally()
    ccheck.report(tally, check.select(["x86_64/debian-amd64"])[0],
                  leaf("x86_64/debian-amd64", full=True))
    assert tally.rows[0][0] == "fail" and "contpte_early_exit" in tally.rows[0][2]


def test_modules_on_reads_the_config(tmp_path):
    (tmp_path / ".config").write_text("CONFIG_64BIT=y\nCONFIG_MODULES=y\n")
    assert check.modules_on(tmp_path)
    (tmp_path / ".config").write_text("CONFIG_64BIT=y\n# CONFIG_MODULES is not set\n")
    assert not check.modules_on(tmp_path)
