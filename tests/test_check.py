# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of 'lab check' without a kernel build: warning parsing and
normalisation, the .o.cmd dependency scan and the make goals, configs, the
stored verdicts, the variant table and the command line."""

import json
import lzma
import os
import re
import shutil
import subprocess

import pytest

from lab import cli
from lab.core import config, deps
from lab.core.tally import Tally
from lab.core.util import LabError
from lab.commands import check as ccheck
from lab.kernel import build, check, debian

STOCK_LOG = """\
  CC      mm/rmap.o
../mm/rmap.c: In function \u2018try_to_unmap_one\u2019:
../mm/rmap.c:1702:23: warning: unused variable \u2018pte\u2019 [-Wunused-variable]
 1702 |         pte_t pte;
      |               ^~~
  CC      mm/vmscan.o
../include/linux/mm.h:400:1: warning: 'foo' defined but not used [-Wunused-function]
  LD      vmlinux.o
"""


def log_with(*lines):
    return "".join(line + "\n" for line in lines)


# --- warnings ----------------------------------------------------------------

def test_a_warning_that_moved_lines_is_not_new():
    patched = STOCK_LOG.replace("1702:23", "1788:23").replace("400:1", "417:1")
    new = check.new_warnings(check.merged(check.parse_log(STOCK_LOG)),
                             check.merged(check.parse_log(patched)))
    assert new == []


def test_a_new_text_is_new_and_keeps_its_line_as_printed():
    added = "../mm/rmap.c:1800:9: warning: unused variable 'nr' [-Wunused-variable]"
    patched = STOCK_LOG.replace("  CC      mm/vmscan.o\n",
                                "  CC      mm/vmscan.o\n" + added + "\n")
    new = check.new_warnings(check.merged(check.parse_log(STOCK_LOG)),
                             check.merged(check.parse_log(patched)))
    assert new == [added]


def test_another_flag_or_another_file_is_new():
    stock = check.merged(check.parse_log(STOCK_LOG))
    for changed in (STOCK_LOG.replace("-Wunused-function", "-Wunused-const-variable"),
                    STOCK_LOG.replace("include/linux/mm.h", "include/linux/mmzone.h")):
        assert len(check.new_warnings(stock, check.merged(check.parse_log(changed)))) == 1


SPARSE_KNOWN = ("../mm/pt_reclaim.c:160:18: warning: context imbalance in "
                "'try_to_free_pte' - unexpected unlock")


def sparse_log(*lines):
    return log_with("  CHECK   ../mm/pt_reclaim.c", *lines)


def test_known_false_warning_is_listed_not_new():
    stock = check.merged(check.parse_log(STOCK_LOG))
    patched = check.merged(check.parse_log(sparse_log(SPARSE_KNOWN)))
    assert check.new_warnings(stock, patched) == []
    known = check.known_warnings(stock, patched)
    assert [line for line, _ in known] == [SPARSE_KNOWN]
    assert "pte_unmap()" in known[0][1]


def test_debians_x86_config_puts_the_batched_copys_report_in_paravirt_h():
    # with CONFIG_PARAVIRT_XXL sparse reports change_pte_range() (stock) and
    # its batched copy (patched) at arch_leave_lazy_mmu_mode()'s pvop call
    where = "../arch/x86/include/asm/paravirt.h:564:9: warning: context imbalance in "
    stock = check.merged(check.parse_log(log_with(
        "  CHECK   ../mm/mprotect.c", where + "'change_pte_range' - unexpected unlock")))
    batched = where + "'change_pte_range_batched' - unexpected unlock"
    patched = check.merged(check.parse_log(log_with(
        "  CHECK   ../mm/mprotect.c", batched, where + "'change_pte_range' - unexpected unlock")))
    assert check.new_warnings(stock, patched) == []
    assert [line for line, _ in check.known_warnings(stock, patched)] == [batched]
    other = where + "'remap_pte_range_batched' - unexpected unlock"
    patched = check.merged(check.parse_log(log_with("  CHECK   ../mm/memory.c", other)))
    assert check.new_warnings(stock, patched) == [other]


def test_the_known_false_table_is_an_input_of_a_stored_verdict(monkeypatch):
    v = check.select(["x86_64/debian-amd64"])[0]
    t = check.TARGETS[v.arch]
    monkeypatch.setattr(check, "tree", lambda flavour: flavour * 8)
    monkeypatch.setattr(check.source, "series_hash", lambda: "s")
    monkeypatch.setattr(check, "config_inputs", lambda v, t, f: f)
    key = check.stamp_key(check.stamp_inputs(v, t, False))
    fewer = dict(check.KNOWN_FALSE)
    fewer.popitem()
    monkeypatch.setattr(check, "KNOWN_FALSE", fewer)
    assert check.stamp_key(check.stamp_inputs(v, t, False)) != key


@pytest.mark.parametrize("other", [
    # the same text in another function, another file, or another kind
    SPARSE_KNOWN.replace("try_to_free_pte", "try_get_and_clear_pmd"),
    SPARSE_KNOWN.replace("pt_reclaim.c", "memory.c"),
    SPARSE_KNOWN.replace("unexpected unlock", "different lock contexts for basic block"),
])
def test_a_known_entry_explains_only_its_own_warning(other):
    stock = check.merged(check.parse_log(STOCK_LOG))
    patched = check.merged(check.parse_log(sparse_log(other)))
    assert check.new_warnings(stock, patched) == [other]
    assert check.known_warnings(stock, patched) == []


def test_a_known_false_warning_is_shown_in_the_report(capsys):
    tally = Tally()
    v = check.select(["arm64/lab-contpte-off"])[0]
    ccheck.report(tally, v, check.verdict("pass", "1 known false warning",
                                         known=[(SPARSE_KNOWN, "why")]))
    out = capsys.readouterr().out
    assert f"known: {SPARSE_KNOWN}" in out and "why it is false: why" in out


@pytest.mark.parametrize("line,key", [
    ("../mm/rmap.c:12:5: warning: unused variable \u2018x\u2019 [-Wunused-variable]",
     "mm/rmap.c: warning: unused variable 'x' [-Wunused-variable]"),
    # kernel-doc (W=1) has no column
    ("../mm/rmap.c:99: warning: Function parameter or struct member 'nr' not described",
     "mm/rmap.c: warning: Function parameter or struct member 'nr' not described"),
    ("mm/rmap.o: warning: objtool: try_to_unmap_one+0x1a2: unreachable instruction",
     "mm/rmap.o: warning: objtool: try_to_unmap_one+0x..: unreachable instruction"),
    ("ld: warning: vmlinux.o: has a LOAD segment with RWX permissions",
     "ld: warning: vmlinux.o: has a LOAD segment with RWX permissions"),
    ("WARNING: modpost: vmlinux: section mismatch in reference: f+0x10 (section: .text)",
     "modpost: warning: vmlinux: section mismatch in reference: f+0x.. (section: .text)"),
    ("../mm/rmap.c:12:5: error: 'x' undeclared", "mm/rmap.c: error: 'x' undeclared"),
])
def test_normalise(line, key):
    assert check.normalise(line) == key


@pytest.mark.parametrize("line", [
    "../mm/rmap.c: In function 'f':",
    "../mm/rmap.c:12:5: note: declared here",
    " 1702 |         pte_t pte;",
    "In file included from ../mm/rmap.c:57:",
    "  CC      mm/rmap.o",
    "make[2]: *** [../scripts/Makefile.build:229: mm/rmap.o] Error 1",
    "make[1]: warning: jobserver unavailable: using -j1.",
])
def test_lines_that_are_not_warnings(line):
    assert check.normalise(line) is None


def test_parse_log_attributes_warnings_to_their_step():
    text = log_with(
        "  SYNC    include/config/auto.conf",
        "  CC [M]  drivers/xen/gntdev.o",
        "../drivers/xen/gntdev.c:5:1: warning: w1 [-Wx]",
        "  CHECK   ../mm/rmap.c",
        "../mm/rmap.c:10:3: warning: context imbalance in 'f' - unexpected unlock",
        "  CC      mm/rmap.o")
    steps = check.parse_log("../x.c:1:1: warning: early\n" + text)
    assert steps[""] == {"x.c: warning: early": "../x.c:1:1: warning: early"}
    assert list(steps["CC drivers/xen/gntdev.o"]) == ["drivers/xen/gntdev.c: warning: w1 [-Wx]"]
    # sparse's warnings say so, so that gcc's and sparse's never match
    assert list(steps["CHECK ../mm/rmap.c"]) == \
        ["sparse: mm/rmap.c: warning: context imbalance in 'f' - unexpected unlock"]
    assert steps["CC mm/rmap.o"] == {} and steps["SYNC include/config/auto.conf"] == {}


def test_record_keeps_what_was_not_rebuilt(tmp_path):
    first = log_with("  CC      mm/a.o", "../mm/a.c:1:1: warning: A [-Wa]",
                     "  CC      mm/b.o", "../mm/b.c:1:1: warning: B [-Wb]")
    assert len(check.record_warnings(tmp_path, first)) == 2
    # an incremental build: b rebuilt without its warning, c new; a untouched
    second = log_with("  CC      mm/b.o", "  CC      mm/c.o", "../mm/c.c:2:2: warning: C [-Wc]")
    got = check.record_warnings(tmp_path, second)
    assert sorted(got) == ["mm/a.c: warning: A [-Wa]", "mm/c.c: warning: C [-Wc]"]
    # nothing rebuilt: the record stands
    assert check.record_warnings(tmp_path, "") == got
    assert "CC mm/b.o" not in json.loads((tmp_path / check.RECORD).read_text())


def test_extra_pass_recompiles_the_objects_this_build_has(tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "mm").mkdir(parents=True)
    for name in ("rmap.o", ".rmap.o.cmd"):
        (out / "mm" / name).write_text("")
    log = tmp_path / "w1.log"
    # earlier output, with gcc's 3-byte quotes: the pass reads from a byte offset
    log.write_text("\u2018configure\u2019 output\n../mm/old.c:1:1: warning: not this pass\n")
    made = []

    def make(t, flavour, build_out, targets, log_, extra=()):
        made.append((list(targets), list(extra), (build_out / "mm/rmap.o").exists()))
        with open(log_, "a") as f:
            f.write("  CC      mm/rmap.o\n../mm/rmap.c:3:1: warning: W1 [-Wextra-thing]\n"
                    "  CHECK   ../mm/rmap.c\n../mm/rmap.c:4:1: warning: S\n")
        return True

    monkeypatch.setattr(check, "make", make)
    ok, warns = check.extra_pass(check.TARGETS["x86_64"], "stock", out,
                                 ["mm/rmap.o", "mm/pt_reclaim.o"], log)
    # only the object this build compiled, deleted first, W=1 and C=2
    assert made == [(["mm/rmap.o"], ["W=1", "C=2"], False)]
    assert ok and sorted(warns) == ["mm/rmap.c: warning: W1 [-Wextra-thing]",
                                    "sparse: mm/rmap.c: warning: S"]
    made.clear()
    assert check.extra_pass(check.TARGETS["x86_64"], "stock", out, ["mm/x.o"], log) == (True, {})
    assert made == []


# --- what to build -----------------------------------------------------------

def cmd_file(out, obj, deps_):
    path = check.cmd_file(out, obj)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"  {d} \\\n" for d in deps_)
    path.write_text(f"savedcmd_{obj} := gcc -c -o {obj}\n\nsource_{obj} := ../x.c\n\n"
                    f"deps_{obj} := \\\n    $(wildcard include/config/SWAP) \\\n{body}\n"
                    f"{obj}: $(deps_{obj})\n\n$(deps_{obj}):\n")


@pytest.fixture
def tree(tmp_path):
    """A build directory as kbuild leaves it, .o.cmd files and built-in.a."""
    out = tmp_path / "out"
    cmd_file(out, "mm/rmap.o", ["../include/linux/mm.h", "include/generated/bounds.h"])
    cmd_file(out, "mm/slub.o", ["../include/linux/slab.h"])
    cmd_file(out, "fs/ext4/inode.o", ["../include/linux/compiler.h",
                                      "../arch/x86/include/asm/tlbflush.h"])
    cmd_file(out, "drivers/xen/gntdev.o", ["../include/linux/mmu_notifier.h"])
    cmd_file(out, "drivers/xen/gntdev.mod.o", ["../include/linux/mm.h"])
    cmd_file(out, "arch/x86/kvm/../../../virt/kvm/kvm_main.o", ["../include/linux/mm.h"])
    cmd_file(out, "arch/x86/boot/compressed/misc.o", ["../include/linux/mm.h"])
    cmd_file(out, "arch/x86/kernel/paravirt.o", ["../arch/x86/include/asm/tlb.h"])
    for d in ("mm", "fs/ext4", "arch/x86/kernel"):
        (out / d / "built-in.a").write_text("")
    (out / "drivers/xen/modules.order").write_text("")
    return out


HEADERS = ["include/linux/mm.h", "include/linux/mmu_notifier.h",
           "arch/x86/include/asm/tlbflush.h", "arch/x86/include/asm/tlb.h",
           "include/linux/foliobatch.h"]


def test_cmd_deps_reads_the_deps_block(tree):
    obj, deps_ = check.cmd_deps(check.cmd_file(tree, "mm/rmap.o").read_text())
    assert obj == "mm/rmap.o"
    assert deps_ == ["../include/linux/mm.h", "include/generated/bounds.h"]
    assert check.cmd_deps("savedcmd_x.o := ld -r\n") is None


def test_objects_including_changed_headers(tree):
    found = check.objects_including(tree, HEADERS)
    assert found == ["arch/x86/boot/compressed/misc.o", "arch/x86/kernel/paravirt.o",
                     "arch/x86/kvm/../../../virt/kvm/kvm_main.o",
                     "drivers/xen/gntdev.o", "fs/ext4/inode.o", "mm/rmap.o"]
    # a generated header of the same name in the build directory is not the source's
    assert check.objects_including(tree, ["include/generated/bounds.h"]) == []


def test_buildable_objects(tree):
    assert check.buildable(tree, "mm/rmap.o")
    assert check.buildable(tree, "drivers/xen/gntdev.o")          # modules.order
    assert not check.buildable(tree, "arch/x86/boot/compressed/misc.o")
    assert not check.buildable(tree, "arch/x86/kvm/../../../virt/kvm/kvm_main.o")
    assert not check.buildable(tree, "drivers/xen/gntdev.mod.o")
    assert not check.buildable(tree, "vmlinux.o")


def test_changed_files_by_arch():
    files = ["mm/rmap.c", "arch/arm64/mm/contpte.c", "arch/riscv/mm/tlbflush.c",
             "arch/x86/kernel/paravirt.c", "arch/x86/mm/pgtable.c"]
    x86 = check.for_arch(files, "x86")
    assert x86 == ["mm/rmap.c", "arch/x86/kernel/paravirt.c", "arch/x86/mm/pgtable.c"]
    assert check.objects_of(x86 + ["include/linux/mm.h"]) == \
        ["mm/rmap.o", "arch/x86/kernel/paravirt.o", "arch/x86/mm/pgtable.o"]
    assert check.dirs_of(x86) == ["arch/x86/kernel/", "arch/x86/mm/", "mm/"]


def test_goals(tree):
    v = variant("x86_64/debian-amd64")
    t = check.TARGETS["x86_64"]
    c_files = ["mm/rmap.c", "arch/x86/kernel/paravirt.c"]
    got = check.goals(v, t, tree, False, c_files, HEADERS)
    dirs = [d.format(srcarch="x86") for d in check.DEBIAN_DIRS]
    # the variant's directories, the changed files' ones, then scanned objects
    # outside them that make can build alone
    assert got == dirs + ["arch/x86/kernel/", "fs/ext4/inode.o"]
    # --full: make's default target, vmlinux and the modules (modpost runs)
    assert check.goals(v, t, tree, True, c_files, HEADERS) == []
    assert check.goals(variant("x86_64/lab-thp-off"), t, tree, False, c_files,
                       HEADERS) == []


def test_make_splits_long_goal_lists(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(check, "run", lambda cmd, **kw: calls.append(cmd) or
                        type("P", (), {"returncode": 0})())
    t = check.TARGETS["riscv64"]
    objs = [f"mm/f{i}.o" for i in range(check.GOALS_PER_MAKE + 1)]
    assert check.make(t, "patched", tmp_path, objs, tmp_path / "log")
    assert len(calls) == 2 and calls[1][-1] == objs[-1] and "-Otarget" in calls[0]
    assert "ARCH=riscv" in calls[0] and "CROSS_COMPILE=riscv64-linux-gnu-" in calls[0]
    calls.clear()
    assert check.make(t, "patched", tmp_path, [], tmp_path / "log", extra=["W=1"])
    assert len(calls) == 1 and calls[0][-1] == "W=1"    # make's default target


# --- configs -----------------------------------------------------------------

def test_check_lines_later_fragment_wins(tmp_path):
    common = tmp_path / "common.config"
    common.write_text("CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_SWAP=y\n")
    extra = tmp_path / "lab-check.config"
    extra.write_text("CONFIG_TRANSPARENT_HUGEPAGE=n\n")
    dot = tmp_path / ".config"
    dot.write_text("CONFIG_SWAP=y\n# CONFIG_TRANSPARENT_HUGEPAGE is not set\n")
    check.check_lines(dot, [common, extra])
    dot.write_text("CONFIG_SWAP=y\nCONFIG_TRANSPARENT_HUGEPAGE=y\n")
    with pytest.raises(LabError, match="CONFIG_TRANSPARENT_HUGEPAGE=n ended up as"):
        check.check_lines(dot, [common, extra])


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "WORK", tmp_path / "work")
    return tmp_path / "work"


def fake_make(commands, dotconfig_text):
    """A util.run stand-in: records commands; olddefconfig writes a .config
    of the merged fragments' lines, then dotconfig_text (which wins)."""
    frags = []

    def run(cmd, **kw):
        cmd = [str(c) for c in cmd]
        commands.append(cmd)
        if cmd[0].endswith("merge_config.sh"):
            frags.extend(cmd[5:])
        if "olddefconfig" in cmd:
            out = next(c[2:] for c in cmd if c.startswith("O="))
            with open(f"{out}/.config", "a") as f:
                f.write("".join(open(p).read() for p in frags) + dotconfig_text)
        return type("P", (), {"returncode": 0})()
    return run


def test_write_config_lab_variant(work, monkeypatch):
    commands = []
    fake = fake_make(commands, "CONFIG_PT_RECLAIM=n\n")
    monkeypatch.setattr(check, "run", fake)
    monkeypatch.setattr(build, "run", fake)  # merge_fragments()
    v = variant("x86_64/lab-pt-reclaim-off")
    out = check.build_dir(v, "patched")
    out.mkdir(parents=True)
    check.write_config(v, check.TARGETS["x86_64"], "patched", out, work / "log")
    assert commands[0][-1] == "tinyconfig"
    merge = commands[1]
    assert merge[0].endswith("scripts/kconfig/merge_config.sh")
    assert merge[-2:] == [str(config.CONFIGS / "patched.config"), str(out / "lab-check.config")]
    assert commands[2][-1] == "olddefconfig"
    assert (out / "lab-check.config").read_text() == "CONFIG_PT_RECLAIM=n\n"


def test_write_config_fails_on_a_line_that_did_not_stick(work, monkeypatch):
    fake = fake_make([], "CONFIG_MMU_NOTIFIER=y\n")
    monkeypatch.setattr(check, "run", fake)
    monkeypatch.setattr(build, "run", fake)  # merge_fragments()
    v = variant("x86_64/lab-mmu-notifier-off")
    out = check.build_dir(v, "stock")
    out.mkdir(parents=True)
    with pytest.raises(LabError, match="CONFIG_MMU_NOTIFIER=n ended up as CONFIG_MMU_NOTIFIER=y"):
        check.write_config(v, check.TARGETS["x86_64"], "stock", out, work / "log")


def test_write_config_debian_starts_from_debians_file(work, monkeypatch):
    commands = []
    debian = work / "debian.config"
    debian.parent.mkdir(parents=True)
    debian.write_text("CONFIG_MMU_NOTIFIER=y\nCONFIG_DEBUG_INFO_BTF=y\n")
    monkeypatch.setattr(check, "debian_config", lambda t: debian)
    fake = fake_make(commands, "CONFIG_DEBUG_INFO_NONE=y\n")
    monkeypatch.setattr(check, "run", fake)
    monkeypatch.setattr(build, "run", fake)  # merge_fragments()
    v = variant("arm64/debian-arm64")
    out = check.build_dir(v, "patched")
    out.mkdir(parents=True)
    check.write_config(v, check.TARGETS["arm64"], "patched", out, work / "log")
    assert not any("tinyconfig" in c or "defconfig" in c for c in commands)
    assert commands[0][-2:] == [str(out / ".config"), str(out / "lab-check.config")]
    assert (out / ".config").read_text().startswith("CONFIG_MMU_NOTIFIER=y\n")


def test_debian_config_downloads_and_unpacks_once(work, monkeypatch):
    commands = []
    version = config.SOURCE_VERSION

    def run(cmd, **kw):
        commands.append(cmd)
        if cmd[0] == "apt-cache":
            return type("P", (), {"returncode": 0, "stdout": (
                f" {cmd[-1]} | {version} | http://deb.example bookworm-security/main "
                "arm64 Packages\n")})()
        if cmd[0] == "apt-get":
            assert cmd[-1] == f"{config.CONFIG_PACKAGE}:arm64={version}"
            (kw["cwd"] / f"{config.CONFIG_PACKAGE}_{version}_arm64.deb").write_text("deb")
        elif cmd[0] == "dpkg-deb":
            d = work / "dl" / "config-pkg" / "usr/src" / config.CONFIG_PACKAGE
            d.mkdir(parents=True)
            (d / "config.arm64_none_arm64.xz").write_bytes(lzma.compress(b"CONFIG_ARM64=y\n"))
        return type("P", (), {"returncode": 0})()

    monkeypatch.setattr(debian, "run", run)
    monkeypatch.setattr(debian.source, "run", run)
    path = check.debian_config(check.TARGETS["arm64"])
    assert path.read_text() == "CONFIG_ARM64=y\n"
    assert [c[0] for c in commands] == ["apt-cache", "apt-get", "dpkg-deb"]
    assert not (work / "dl" / "config-pkg").exists()
    assert check.debian_config(check.TARGETS["arm64"]) == path and len(commands) == 3


def test_config_inputs_differ_by_flavour_and_lines():
    v = variant("x86_64/lab-thp-off")
    t = check.TARGETS["x86_64"]
    # patched builds add configs/patched.config
    assert check.config_inputs(v, t, "stock") != check.config_inputs(v, t, "patched")
    other = variant("x86_64/lab-swap-off")
    assert check.config_inputs(v, t, "stock") != check.config_inputs(other, t, "stock")


# --- verdicts and the stored ones ----------------------------------------------

INPUTS = {"patched": "a" * 40, "stock": "b" * 40, "series": "c" * 16,
          "config": {"stock": "d", "patched": "e"}, "full": False,
          "variant": {"name": "lab-thp-off", "lines": ["CONFIG_TRANSPARENT_HUGEPAGE=n"]}}


@pytest.mark.parametrize("field,value", [
    ("patched", "f" * 40), ("stock", "0" * 40), ("series", "1" * 16),
    ("config", {"stock": "d", "patched": "e2"}), ("full", True),
    ("variant", {"name": "lab-thp-off", "lines": ["CONFIG_TRANSPARENT_HUGEPAGE=y"]}),
])
def test_changing_any_input_changes_the_key(field, value):
    assert check.stamp_key(dict(INPUTS, **{field: value})) != check.stamp_key(INPUTS)
    assert check.stamp_key(dict(INPUTS)) == check.stamp_key(INPUTS)


def test_stamp_round_trip(tmp_path):
    path = tmp_path / "out" / check.STAMP
    k = check.stamp_key(INPUTS)
    assert check.load_stamp(path, k) is None
    result = check.verdict("fail", "1 new warning", new=["../mm/rmap.c:1:1: warning: x"])
    check.save_stamp(path, k, result)
    assert check.load_stamp(path, k) == result
    assert check.load_stamp(path, check.stamp_key(dict(INPUTS, series="2" * 16))) is None


def test_a_second_run_with_the_same_inputs_prints_the_stored_verdict(work, monkeypatch, capsys):
    inputs = dict(INPUTS)
    builds = []
    monkeypatch.setattr(check, "stamp_inputs", lambda v, t, full, quick=False: dict(inputs))
    monkeypatch.setattr(check, "needs", lambda v, t: [])

    def build_variant(v, t, full, quick=False):
        builds.append(v.leaf)
        return check.verdict("fail", "1 new warning", new=["../mm/rmap.c:9:1: warning: new one"])

    monkeypatch.setattr(check, "build_variant", build_variant)
    v = variant("x86_64/lab-thp-off")
    tally = Tally()
    ccheck.check(v, tally)
    ccheck.check(v, tally)
    assert builds == ["check/x86_64/lab-thp-off"]
    assert tally.rows[1] == ("fail", "check/x86_64/lab-thp-off", "1 new warning, cached")
    assert capsys.readouterr().out.count("new: ../mm/rmap.c:9:1: warning: new one") == 2
    inputs["patched"] = "9" * 40                      # a new commit in the patched tree
    ccheck.check(v, tally)
    ccheck.check(v, tally, use_cache=False)            # --no-cache
    assert len(builds) == 3


# What decides a verdict beside the trees, the series and the configs: the
# tools' versions, as the first line of --version prints them, and the
# lab's own check code.
VERSIONS = {"gcc": "gcc (Debian 12.2.0-14+deb12u1) 12.2.0",
            "ld": "GNU ld (GNU Binutils for Debian) 2.40",
            "aarch64-linux-gnu-gcc": "aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0",
            "aarch64-linux-gnu-ld": "GNU ld (GNU Binutils for Debian) 2.40",
            "sparse": "0.6.4 (Debian: 0.6.4-3)"}
CHECK_FILES = ["lab/kernel/check.py", "lab/kernel/modsyms.py", "lab/kernel/build.py",
               "lab/commands/check.py"]


@pytest.fixture
def leaf_runs(work, monkeypatch, tmp_path):
    """ccheck.check() with the real stamp_inputs() over fixed trees, series
    and configs; a version probe that reads versions (change an entry to
    change a tool); the lab's check code read from a copy in repo; builds
    that only count.  Returns (versions, repo, builds)."""
    versions = dict(VERSIONS)
    monkeypatch.setattr(build, "tool_version",
                        lambda cmd: versions.get(cmd, f"{cmd}: not found"), raising=False)
    monkeypatch.setattr(check, "tree", lambda flavour: flavour * 8)
    monkeypatch.setattr(check.source, "series_hash", lambda: "s")
    monkeypatch.setattr(check, "config_inputs", lambda v, t, f: f)
    monkeypatch.setattr(check, "needs", lambda v, t: [])
    repo = tmp_path / "repo"
    for rel in CHECK_FILES:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(config.REPO / rel, repo / rel)
    monkeypatch.setattr(config, "REPO", repo)
    builds = []
    monkeypatch.setattr(check, "build_variant", lambda v, t, full, quick=False:
                        builds.append(v.leaf) or check.verdict("pass"))
    monkeypatch.setattr(build, "each_commit", lambda arch_name:
                        builds.append(f"check/{arch_name}/each-commit") or [])
    return versions, repo, builds


def runs_again(v, change):
    """Whether a leaf that ran and was stored runs again after change()
    (the second run with nothing changed prints the stored verdict)."""
    tally = Tally()
    for _ in range(2):
        ccheck.check(v, tally)
    assert [r[2] for r in tally.rows] == ["", "cached"]
    change()
    ccheck.check(v, tally)
    return tally.rows[-1][2] != "cached"


@pytest.mark.parametrize("tool", ["gcc", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-ld",
                                  "sparse"])
def test_a_new_tool_version_runs_a_leaf_again(leaf_runs, tool):
    versions, _, builds = leaf_runs
    v = variant("arm64/lab-contpte-off")
    assert runs_again(v, lambda: versions.update({tool: versions[tool] + " (rebuilt)"}))
    assert builds == [v.leaf] * 2


@pytest.mark.parametrize("tool", ["gcc", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-ld"])
def test_a_new_tool_version_runs_an_each_commit_leaf_again(leaf_runs, tool):
    versions, _, builds = leaf_runs
    v = variant("arm64/each-commit")
    assert runs_again(v, lambda: versions.update({tool: versions[tool] + " (rebuilt)"}))
    assert builds == [v.leaf] * 2


def test_sparse_is_no_input_of_a_leaf_that_runs_no_sparse(leaf_runs):
    versions, _, _ = leaf_runs
    assert not runs_again(variant("x86_64/each-commit"),
                          lambda: versions.update({"sparse": "0.6.5"}))


@pytest.mark.parametrize("rel", CHECK_FILES)
def test_a_change_to_the_labs_check_code_runs_a_leaf_again(leaf_runs, rel):
    _, repo, builds = leaf_runs
    for v in (variant("x86_64/debian-amd64"), variant("x86_64/each-commit")):
        assert runs_again(v, lambda: (repo / rel).write_text(
            (repo / rel).read_text() + f"\n# {v.leaf}\n")), (rel, v.leaf)


def test_the_check_code_is_what_decides_a_verdict():
    assert set(CHECK_FILES) <= set(check.CHECK_CODE)
    # the known-false table is an input of its own, of the sparse leaves
    assert "lab/kernel/knownfalse.py" not in check.CHECK_CODE
    assert "KNOWN_FALSE = {" in (config.REPO / "lab/kernel/knownfalse.py").read_text()


def test_a_new_known_false_entry_judges_only_the_leaves_that_compare_warnings(
        leaf_runs, monkeypatch):
    more = dict(check.KNOWN_FALSE, **{"sparse: mm/x.c: warning: y": "z"})
    for leaf, again in (("arm64/lab-contpte-off", True), ("x86_64/each-commit", False)):
        monkeypatch.setattr(check, "KNOWN_FALSE", dict(check.KNOWN_FALSE))
        assert runs_again(variant(leaf), lambda: monkeypatch.setattr(
            check, "KNOWN_FALSE", more)) == again, leaf


@pytest.mark.parametrize("returncode, text", [
    (-15, ""),
    (2, "make[2]: *** [../scripts/Makefile.build:229: mm/rmap.o] Terminated\n"),
    (2, "make: *** [Makefile:224: __sub-make] Killed\n"),
    (1, "gcc: fatal error: Killed signal terminated program cc1\n"
        "compilation terminated.\n"),
    (2, "aarch64-linux-gnu-gcc: fatal error: Terminated signal terminated program cc1 \n"),
])
def test_a_make_stopped_from_outside_is_told_from_a_failure(returncode, text):
    assert build.stopped(returncode, text)


@pytest.mark.parametrize("text", [
    "../mm/rmap.c:12:1: error: expected ';' before '}' token\n"
    "make[3]: *** [../scripts/Makefile.build:229: mm/rmap.o] Error 1\n",
    # a source line or message that only mentions the words
    "../mm/oom_kill.c:9: warning: 'Killed' defined but not used\n",
])
def test_a_failed_make_is_not_taken_for_a_stopped_one(text):
    assert build.stopped(2, text) == ""


@pytest.mark.parametrize("leaf", ["arm64/lab-contpte-off", "x86_64/each-commit"])
def test_a_build_stopped_from_outside_stores_no_verdict(leaf_runs, monkeypatch, leaf):
    """A make killed part-way (the chain stopped, the OOM killer) is no
    verdict on the series: the row fails and nothing is stored, so that
    the next run builds the leaf again."""
    def killed(*a, **k):
        build.raise_if_stopped(-15, "", "build.log")
    monkeypatch.setattr(check, "build_variant", killed)
    monkeypatch.setattr(build, "each_commit", killed)
    v = variant(leaf)
    tally = Tally()
    ccheck.check(v, tally, records=True, record=True)
    assert tally.rows[-1][:2] == ("fail", v.leaf)
    assert "stopped from outside" in tally.rows[-1][2]
    assert not check.record_path(v).exists()
    assert not list(config.WORK.rglob(check.STAMP + "*"))


def test_a_make_stopped_from_outside_ends_the_check_build(work, monkeypatch, tmp_path):
    """check.make() itself: a make whose job was killed raises, where a
    failed compile returns False (a FAIL verdict)."""
    log = tmp_path / "check.log"
    log.write_text("earlier output: make: *** [Makefile:1: x] Terminated\n")
    t = check.TARGETS["x86_64"]
    monkeypatch.setattr(build, "make_cmd", lambda *a, **k: ["make"])
    def fake_run(cmd, log, **k):
        with open(log, "a") as f:
            f.write(text)
        return subprocess.CompletedProcess(cmd, rc)
    monkeypatch.setattr(check, "run", fake_run)
    rc, text = 2, "x.c:1:1: error: no\nmake: *** [Makefile:1: x.o] Error 1\n"
    # the earlier make's stop in the same log is not this make's
    assert check.make(t, "patched", tmp_path, ["x.o"], log) is False
    rc, text = 2, "make[1]: *** [Makefile:1: x.o] Killed\n"
    with pytest.raises(LabError, match="stopped from outside"):
        check.make(t, "patched", tmp_path, ["x.o"], log)


def test_a_stored_verdict_records_its_inputs(leaf_runs):
    v = variant("arm64/lab-contpte-off")
    ccheck.check(v, Tally())
    stored = json.loads((check.build_dir(v, "patched") / check.STAMP).read_text())
    assert stored["inputs"]["tools"] == {k: VERSIONS[k] for k in
                                         ("gcc", "aarch64-linux-gnu-gcc",
                                          "aarch64-linux-gnu-ld", "sparse")}
    assert stored["key"] == check.stamp_key(stored["inputs"])


def new_machine(work):
    """Forget every stamp of this machine's work directory (a new machine)."""
    shutil.rmtree(work)
    work.mkdir()


def test_a_kept_record_stands_for_its_leaf_on_a_new_machine(leaf_runs, work,
                                                             check_records_in_tmp):
    _, _, builds = leaf_runs
    v = variant("arm64/lab-contpte-off")
    tally = Tally()
    ccheck.check(v, tally, records=True, record=True)
    kept = json.loads(check.record_path(v).read_text())
    assert kept["key"] == check.stamp_key(kept["inputs"]) and kept["leaf"] == v.leaf
    assert kept["result"]["status"] == "pass" and kept["took"] >= 0
    new_machine(work)
    ccheck.check(v, tally, records=True)
    assert builds == [v.leaf]
    assert tally.rows[-1][0] == "pass"
    assert "judged " in tally.rows[-1][2] and "kept in" in tally.rows[-1][2]


def test_a_kept_record_of_other_inputs_is_judged_again(leaf_runs, work):
    versions, _, builds = leaf_runs
    v = variant("arm64/each-commit")
    ccheck.check(v, Tally(), records=True, record=True)
    new_machine(work)
    versions["aarch64-linux-gnu-gcc"] += " (rebuilt)"
    tally = Tally()
    ccheck.check(v, tally, records=True)
    assert builds == [v.leaf] * 2 and tally.rows[-1][2] == ""


def test_a_kept_failure_stays_a_failure(leaf_runs, work, monkeypatch):
    v = variant("arm64/lab-contpte-off")
    monkeypatch.setattr(check, "build_variant", lambda v, t, full, quick=False:
                        check.verdict("fail", "1 new warning", new=["x.c:1:1: warning: y"]))
    ccheck.check(v, Tally(), records=True, record=True)
    new_machine(work)
    tally = Tally()
    ccheck.check(v, tally, records=True)
    assert tally.rows[-1][0] == "fail" and tally.exit_status() == 1


def test_record_keeps_the_verdict_a_stamp_already_holds(leaf_runs, work):
    """A leaf judged without --record (lab test's cheap leaves, or a plain
    lab check) is kept by a later --record as it was judged, not built
    again; the record carries the stamp's date, time taken and lab commit
    and stands for the leaf on a new machine."""
    _, _, builds = leaf_runs
    v = variant("arm64/lab-contpte-off")
    ccheck.check(v, Tally(), records=True)
    stamp = json.loads((check.build_dir(v, "patched") / check.STAMP).read_text())
    assert not check.record_path(v).exists() and stamp["took"] >= 0
    tally = Tally()
    ccheck.check(v, tally, records=True, record=True)
    assert builds == [v.leaf]
    kept = json.loads(check.record_path(v).read_text())
    assert (kept["key"], kept["stored"], kept["took"], kept["result"]) == \
        (stamp["key"], stamp["stored"], stamp["took"], stamp["result"])
    assert kept["inputs"] == stamp["inputs"] and kept["leaf"] == v.leaf
    assert tally.rows[-1][0] == "pass" and "now kept in" in tally.rows[-1][2]
    new_machine(work)
    tally = Tally()
    ccheck.check(v, tally, records=True)
    assert builds == [v.leaf] and "kept in" in tally.rows[-1][2]


def test_record_judges_again_a_stamp_without_inputs(leaf_runs):
    _, _, builds = leaf_runs
    v = variant("arm64/lab-contpte-off")
    ccheck.check(v, Tally())
    path = check.build_dir(v, "patched") / check.STAMP
    stamp = json.loads(path.read_text())
    check.save_stamp(path, stamp["key"], stamp["result"])
    ccheck.check(v, Tally(), records=True, record=True)
    assert builds == [v.leaf] * 2
    assert json.loads(check.record_path(v).read_text())["inputs"] == stamp["inputs"]


def test_without_record_nothing_is_kept(leaf_runs):
    v = variant("arm64/lab-contpte-off")
    ccheck.check(v, Tally(), records=True)
    assert not check.record_path(v).exists()


def test_lab_test_reads_no_kept_record(leaf_runs, work, monkeypatch):
    """CI judges its leaves on the machine that runs it."""
    _, _, builds = leaf_runs
    monkeypatch.setattr(check, "variant_dirs", lambda v, quick: ("mm/",))
    for v in check.VARIANTS:
        if v.ci:
            ccheck.check(v, Tally(), quick=True, records=True, record=True)
            assert check.record_path(v).exists()
    new_machine(work)
    ccheck.ci_form(Tally())
    assert builds == [v.leaf for v in check.VARIANTS if v.ci] * 2


def test_lab_check_takes_kept_records(monkeypatch):
    seen = []
    monkeypatch.setattr(ccheck.source, "apply", lambda: None)
    monkeypatch.setattr(ccheck, "check", lambda v, tally, full, use_cache, quick, records,
                        record: seen.append((records, record)))
    ccheck.main(["riscv64/defconfig"], record=True)
    ccheck.main(["riscv64/defconfig"])
    assert seen == [(True, True), (True, False)]


def test_a_trees_key_is_its_content_not_when_it_was_committed(tmp_path, monkeypatch):
    """The key holds on another machine, where 'git am' ran at another time."""
    ids = []
    for when in ("2026-01-01T00:00:00", "2026-06-01T00:00:00"):
        t = tmp_path / f"t{len(ids)}"
        t.mkdir()
        (t / "f").write_text("same\n")
        env = dict(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when, GIT_AUTHOR_NAME="a",
                   GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@b")
        for cmd in (["init", "-q"], ["add", "f"], ["commit", "-q", "-m", "m"]):
            subprocess.run(["git", "-C", str(t)] + cmd, check=True, env=dict(os.environ, **env))
        monkeypatch.setattr(config, "source_tree", lambda flavour, t=t: t)
        ids.append((check.tree("patched"), subprocess.run(
            ["git", "-C", str(t), "rev-parse", "HEAD"], capture_output=True,
            text=True).stdout.strip()))
    assert ids[0][0] == ids[1][0] and ids[0][1] != ids[1][1]


def test_kept_records_hold_their_keys():
    """Every record in the repository is what 'lab check --record' wrote: its
    key is the hash of its inputs, and it names its own leaf."""
    for path in sorted((config.REPO / "docs/results/check").glob("*.json")):
        kept = json.loads(path.read_text())
        assert kept["key"] == check.stamp_key(kept["inputs"]), path
        v = variant(kept["leaf"][len("check/"):])
        assert path.name == f"{v.arch}-{v.name}.json"
        assert kept["result"]["status"] in ("pass", "fail", "skip"), path


def test_testing_md_shows_the_kept_records():
    """docs/testing.md's table is the one the repository's records make
    ('lab report --history' writes it)."""
    from lab.commands import reportdir
    from lab.outputs import checkrecords
    text = (config.REPO / "docs/testing.md").read_text()
    made = checkrecords.block([v.leaf for v in check.VARIANTS],
                              checkrecords.load(config.REPO / "docs/results/check"),
                              check.source.series_hash(),
                              build.code_hash(check.CHECK_CODE), reportdir.boot_codes())
    assert made in text, "run 'lab report --history'"


def test_a_kept_boot_verdict_holds_for_its_guest_code_only(tmp_path):
    """A leaf that boots (debian-boot, mutation, commit-tests) keys its
    verdict on the guest's side too: after a change to a test program or
    a plan its record is judged again by the next 'lab check', and the
    table must not count it."""
    from lab.commands import reportdir
    from lab.outputs import checkrecords
    codes = reportdir.boot_codes()
    assert set(codes) == {v.leaf for v in check.VARIANTS
                          if v.base in ("debian-boot", "mutation", "commit-tests")}
    leaves = ["check/a/boot", "check/a/build"]
    rec = lambda leaf, guest: {
        "leaf": leaf, "stored": "2026-12-01 09:00:00", "took": 61,
        "inputs": {"series": "s1", "code": "c1", "boot": {"code": guest}},
        "result": {"status": "pass", "detail": ""}}
    (tmp_path / "0.json").write_text(json.dumps(rec("check/a/boot", "g0" * 32)))
    (tmp_path / "1.json").write_text(json.dumps(rec("check/a/build", "g0" * 32)))
    kept = checkrecords.load(tmp_path)
    text = checkrecords.block(leaves, kept, "s1", "c1", {"check/a/boot": "g1" * 32})
    assert "1 of 2 leaves" in text
    assert f"| `check/a/boot` | PASS | 2026-12-01 09:00:00 | 1m01s | yes | " \
        f"no, guest code {'g0' * 8} |" in text
    assert "| `check/a/build` | PASS | 2026-12-01 09:00:00 | 1m01s | yes | yes |" in text
    assert "2 of 2 leaves" in checkrecords.block(leaves, kept, "s1", "c1",
                                                  {"check/a/boot": "g0" * 32})


def test_the_records_table_counts_a_pass_on_this_series_and_code_only(tmp_path):
    """A kept PASS counts only when judged on the series in patches/ now
    and by the check code now: a record of other check code is run again
    by the next 'lab check', and its row says so."""
    from lab.outputs import checkrecords
    leaves = ["check/a/w", "check/a/x", "check/a/y", "check/a/z"]
    rec = lambda leaf, status, series, code="c1": {
        "leaf": leaf, "stored": "2026-12-01 09:00:00", "took": 61,
        "inputs": {"series": series, "code": code},
        "result": {"status": status, "detail": ""}}
    for n, r in enumerate([rec("check/a/w", "pass", "s1", "c0"),
                           rec("check/a/x", "pass", "s1"), rec("check/a/y", "pass", "s0"),
                           rec("check/a/z", "fail", "s1")]):
        (tmp_path / f"{n}.json").write_text(json.dumps(r))
    text = checkrecords.block(leaves, checkrecords.load(tmp_path), "s1", "c1")
    assert "1 of 4 leaves" in text
    assert "| `check/a/w` | PASS | 2026-12-01 09:00:00 | 1m01s | yes | no, code c0 |" in text
    assert "| `check/a/x` | PASS | 2026-12-01 09:00:00 | 1m01s | yes | yes |" in text
    assert "| `check/a/y` | PASS | 2026-12-01 09:00:00 | 1m01s | no, series s0 | yes |" in text
    assert "| `check/a/z` | FAIL |" in text
    assert checkrecords.block(leaves, {}, "s1", "c1").count("none kept") == 4


def test_a_new_compiler_writes_a_leafs_config_again(work, monkeypatch):
    """kbuild takes the compiler's capabilities into the .config: lines
    checked with the old compiler are checked again with the new one."""
    versions = dict(VERSIONS)
    monkeypatch.setattr(build, "tool_version",
                        lambda cmd: versions.get(cmd, f"{cmd}: not found"), raising=False)
    monkeypatch.setattr(check, "config_inputs", lambda v, t, f: f)
    written = []

    def write_config(v, t, flavour, build_out, log):
        written.append(flavour)
        (build_out / ".config").write_text("CONFIG_64BIT=y\n")
    monkeypatch.setattr(check, "write_config", write_config)
    v = variant("arm64/lab-contpte-off")
    out = check.build_dir(v, "patched")
    out.mkdir(parents=True)
    for _ in range(2):
        check.configure(v, check.TARGETS["arm64"], "patched", out, work / "log")
    assert written == ["patched"]
    versions["aarch64-linux-gnu-gcc"] = "aarch64-linux-gnu-gcc (Debian 13.1.0-1) 13.1.0"
    check.configure(v, check.TARGETS["arm64"], "patched", out, work / "log")
    assert written == ["patched"] * 2


def test_a_leaf_that_could_not_run_is_not_stored(work, monkeypatch):
    monkeypatch.setattr(check, "stamp_inputs", lambda v, t, full, quick=False: dict(INPUTS))
    monkeypatch.setattr(check, "needs", lambda v, t: ["riscv64-linux-gnu-gcc"])
    v = variant("riscv64/defconfig")
    tally = Tally()
    ccheck.check(v, tally)
    assert tally.rows[0][0] == "fail" and "riscv64-linux-gnu-gcc not found" in tally.rows[0][2]
    assert not (check.build_dir(v, "patched") / check.STAMP).exists()


def test_failed_build_is_a_skip_only_when_stock_fails_the_same_way(tmp_path):
    patched, stock = tmp_path / "p.log", tmp_path / "s.log"
    patched.write_text("  CC      mm/rmap.o\n../mm/rmap.c:10:2: error: 'x' undeclared\n")
    stock.write_text("  CC      mm/rmap.o\n../mm/rmap.c:12:2: error: 'x' undeclared\n")
    assert check.failed_build(patched, stock)["status"] == "skip"
    assert check.failed_build(patched)["status"] == "fail"
    stock.write_text("../mm/slub.c:3:1: error: something else\n")
    r = check.failed_build(patched, stock)
    assert r["status"] == "fail"
    assert r["detail"] == "build failed: ../mm/rmap.c:10:2: error: 'x' undeclared"


MODPOST_LOG = """\
  MODPOST Module.symvers
ERROR: modpost: "contpte_early_exit" [drivers/xen/xen-privcmd.ko] undefined!
ERROR: modpost: "contpte_early_exit" [drivers/xen/privcmd-buf.ko] undefined!
make[2]: *** [../scripts/Makefile.modpost:145: Module.symvers] Error 1
make[1]: *** [/work/src/patched/Makefile:1939: modpost] Error 2
make: *** [Makefile:224: __sub-make] Error 2
"""


def test_a_build_that_modpost_stops_names_the_symbol(tmp_path):
    """A whole build of the modules fails at modpost's "undefined!": the
    verdict names it, and stock stopping at it too makes a SKIP."""
    patched, stock = tmp_path / "p.log", tmp_path / "s.log"
    patched.write_text("  CC [M]  drivers/xen/privcmd.o\n" + MODPOST_LOG)
    r = check.failed_build(patched)
    assert r["status"] == "fail" and r["detail"] == \
        'build failed: ERROR: modpost: "contpte_early_exit" [drivers/xen/xen-privcmd.ko] undefined!'
    stock.write_text(MODPOST_LOG)
    assert check.failed_build(patched, stock)["status"] == "skip"


# --- the variant table -------------------------------------------------------

def variant(leaf):
    return next(v for v in check.VARIANTS if f"{v.arch}/{v.name}" == leaf)


def test_variant_table():
    leaves = [v.leaf for v in check.VARIANTS]
    assert len(leaves) == len(set(leaves))
    for v in check.VARIANTS:
        assert v.arch in check.TARGETS and v.base in check.BASES and v.why, v
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", v.name), v
        for line in v.lines:
            assert re.fullmatch(r"CONFIG_\w+=\S+", line), line
        if v.base in ("lab", "each-commit"):
            # the lab's own fragments exist for these arches only
            assert v.arch in config.ARCHES, v
            assert all(f.exists() for f in build.fragments(v.arch, "default", "patched"))
        if v.dirs:
            assert v.base in ("debian", "defconfig") and all(d.endswith("/") for d in v.dirs)
        if v.base == "debian":
            assert v.lines == check.DEBIAN_LINES and check.TARGETS[v.arch].deb_arch
    assert {(v.arch, v.base) for v in check.VARIANTS} >= {
        ("x86_64", "debian"), ("arm64", "debian"), ("riscv64", "defconfig"),
        ("x86_64", "lab"), ("arm64", "lab"), ("x86_64", "each-commit"),
        ("arm64", "each-commit")}
    assert [v.leaf for v in check.VARIANTS if v.default] == [
        "check/riscv64/defconfig", "check/x86_64/lab-pt-reclaim-off",
        "check/arm64/lab-contpte-off"]


def test_every_option_the_issue_names_is_turned():
    lines = {line for v in check.VARIANTS for line in v.lines}
    for opt in ("TRANSPARENT_HUGEPAGE", "SWAP", "MEMCG", "LRU_GEN", "MMU_NOTIFIER",
                "PT_RECLAIM", "ARM64_CONTPTE"):
        assert f"CONFIG_{opt}=n" in lines, opt
    assert {"CONFIG_ARM64_16K_PAGES=y", "CONFIG_ARM64_64K_PAGES=y",
            "CONFIG_MMU_NOTIFIER=y"} <= lines


def test_targets_match_the_lab_arches_and_have_packages():
    for name, a in config.ARCHES.items():
        t = check.TARGETS[name]
        assert (t.karch, t.cross, t.deb_arch) == (a.karch, a.cross, a.deb_arch)
    for t in check.TARGETS.values():
        assert f"{t.cross}gcc" in deps.COMMANDS, t
    assert "sparse" in deps.COMMANDS


def test_select():
    assert check.select() == [v for v in check.VARIANTS if v.default]
    assert check.select(everything=True) == list(check.VARIANTS)
    assert [v.leaf for v in check.select(["lab-thp-off"])] == ["check/x86_64/lab-thp-off"]
    assert [v.leaf for v in check.select(["arm64/each-commit"])] == ["check/arm64/each-commit"]
    assert len(check.select(["each-commit"])) == 2
    assert {v.arch for v in check.select(["arm64/lab-*"])} == {"arm64"}
    assert len(check.select(["check/x86_64/lab-*"])) == 7
    with pytest.raises(LabError, match="nonsense"):
        check.select(["lab-thp-off", "nonsense"])


# --- the command line --------------------------------------------------------

def test_lab_check_list_prints_the_variants(capsys):
    assert cli.main(["check", "--list"]) == 0
    out = capsys.readouterr().out
    for v in check.VARIANTS:
        assert v.leaf in out
    assert "*+ check/x86_64/lab-pt-reclaim-off" in out


def test_lab_check_options_reach_main(monkeypatch):
    got = []
    monkeypatch.setattr(ccheck, "main", lambda names, **kw: got.append((names, kw)) or 0)
    assert cli.main(["check"]) == 0
    assert cli.main(["check", "--all", "--full", "--no-cache", "-k", "a", "-k", "b"]) == 0
    assert cli.main(["check", "--quick"]) == 0
    assert cli.main(["check", "--all", "--record"]) == 0
    assert got == [(None, {"everything": False, "full": False, "use_cache": True,
                           "quick": False, "record": False}),
                   (["a", "b"], {"everything": True, "full": True, "use_cache": False,
                                 "quick": False, "record": False}),
                   (None, {"everything": False, "full": False, "use_cache": True,
                           "quick": True, "record": False}),
                   (None, {"everything": True, "full": False, "use_cache": True,
                           "quick": False, "record": True})]
    assert cli.main(["check", "--quick", "--full"]) == cli.LAB_ERROR


def test_ci_leaves_are_riscv_and_a_config_off_variant():
    ci = [v.leaf for v in check.VARIANTS if v.ci]
    assert ci == ["check/riscv64/defconfig", "check/x86_64/lab-pt-reclaim-off"]


def test_quick_builds_directories_of_a_lab_variant_only(tree):
    v = check.select(["x86_64/lab-pt-reclaim-off"])[0]
    t = check.TARGETS["x86_64"]
    c_files = ["mm/rmap.c", "arch/x86/kernel/paravirt.c"]
    assert check.goals(v, t, tree, False, c_files, []) == []
    assert check.goals(v, t, tree, False, c_files, [], quick=True) == \
        ["mm/", "arch/x86/mm/", "arch/x86/kernel/"]
    # --full wins, and quick does not change a variant with its own dirs
    assert check.goals(v, t, tree, True, c_files, [], quick=True) == []
    r = check.select(["riscv64/defconfig"])[0]
    assert check.variant_dirs(r, True) == check.variant_dirs(r, False) == r.dirs


def test_quick_and_whole_builds_have_different_stored_verdicts(monkeypatch):
    monkeypatch.setattr(check, "tree", lambda f: f"tree-{f}")
    monkeypatch.setattr(check.source, "series_hash", lambda: "series")
    monkeypatch.setattr(check, "config_inputs", lambda v, t, f: f"config-{f}")
    v = check.select(["x86_64/lab-pt-reclaim-off"])[0]
    t = check.TARGETS["x86_64"]
    assert check.stamp_key(check.stamp_inputs(v, t, False, quick=True)) != \
        check.stamp_key(check.stamp_inputs(v, t, False))


def test_lab_test_runs_the_ci_leaves_unless_told_not_to(monkeypatch, tmp_path):
    from lab.commands import harden, test as testcmd
    from lab.kernel import export
    ran = []
    monkeypatch.setattr(testcmd, "main", lambda *a, **k: None)
    monkeypatch.setattr(export, "test_row", lambda tally: None)
    monkeypatch.setattr(harden, "short_form", lambda *a: None)
    monkeypatch.setattr(ccheck, "ci_form", lambda tally, use_cache: ran.append(use_cache))
    monkeypatch.setattr(config, "WORK", tmp_path)
    cli.main(["test"])
    cli.main(["test", "--no-cache"])
    cli.main(["test", "--no-check"])
    cli.main(["test", "--only", "sanity"])
    assert ran == [True, False]


def _fake_variant_build(monkeypatch, tmp_path, extra_results):
    """build_variant() with builds that pass and W=1 passes that return
    extra_results[(flavour, sparse)] = (ok, first error line)."""
    monkeypatch.setattr(check.config, "log_dir", lambda: tmp_path)
    monkeypatch.setattr(check, "build_dir", lambda v, f: tmp_path / f)
    monkeypatch.setattr(check, "changed", lambda pattern: ["mm/rmap.c"] if pattern == "*.c" else [])
    monkeypatch.setattr(check, "configure", lambda *a: None)
    monkeypatch.setattr(check, "make", lambda *a, **k: True)
    monkeypatch.setattr(check, "record_warnings", lambda out, text: {})
    calls = []

    def extra_pass(t, flavour, build_out, objs, log, sparse=True):
        ok, line = extra_results[(flavour, sparse)]
        calls.append((flavour, sparse))
        log.write_text("" if ok else f"{line}\nmake: *** [x] Error 1\n")
        return ok, {}

    monkeypatch.setattr(check, "extra_pass", extra_pass)
    return calls


def test_sparse_failing_on_both_trees_gets_a_skip_row_and_w1_still_runs(monkeypatch, tmp_path):
    bad = "error: invalid argument to '-march': '_zicsr_zifencei'"
    calls = _fake_variant_build(monkeypatch, tmp_path, {
        ("patched", True): (False, bad), ("stock", True): (False, bad),
        ("patched", False): (True, ""), ("stock", False): (True, "")})
    v = check.select(["riscv64/defconfig"])[0]
    result = check.build_variant(v, check.TARGETS["riscv64"], full=False)
    assert result["status"] == "pass"
    assert "fails on stock the same way" in result["no_sparse"]
    assert calls == [("patched", True), ("stock", True), ("patched", False), ("stock", False)]
    tally = Tally()
    ccheck.report(tally, v, result)
    assert [r[0] for r in tally.rows] == ["pass", "skip"]


def test_sparse_failing_on_patched_only_fails_the_leaf(monkeypatch, tmp_path):
    _fake_variant_build(monkeypatch, tmp_path, {
        ("patched", True): (False, "error: mm/rmap.c:10: bad thing"),
        ("stock", True): (True, "")})
    v = check.select(["riscv64/defconfig"])[0]
    result = check.build_variant(v, check.TARGETS["riscv64"], full=False)
    assert result["status"] == "fail" and "W=1/sparse build failed" in result["detail"]


def test_a_config_write_cut_short_leaves_no_stamp(work, monkeypatch):
    # the stamp of the config before must not stand over a .config whose
    # writing was stopped part-way
    v = variant("x86_64/lab-pt-reclaim-off")
    out = check.build_dir(v, "patched")
    out.mkdir(parents=True)
    (out / ".config").write_text("CONFIG_OLD=y\n")
    (out / check.CONFIG_STAMP).write_text("old\n")

    def stopped(*a):
        raise KeyboardInterrupt
    monkeypatch.setattr(check, "write_config", stopped)
    with pytest.raises(KeyboardInterrupt):
        check.configure(v, check.TARGETS["x86_64"], "patched", out, work / "log")
    assert not (out / check.CONFIG_STAMP).exists()
