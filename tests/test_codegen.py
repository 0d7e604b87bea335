# SPDX-License-Identifier: GPL-2.0-only
"""Host tests of 'lab codegen' (lab/kernel/codegen.py, lab/commands/codegen.py):
a function compiled the same at another address is the same, one that calls
something else or runs another instruction differs, and a claim whose code
differs, or whose object or function is missing, ends the run non-zero."""

import shutil
import subprocess

import pytest

from lab.commands import codegen as cmd
from lab.core.tally import Tally
from lab.core.util import LabError
from lab.kernel import codegen

X86 = """
0000000000000000 <helper>:
   0:	endbr64
   4:	ret

0000000000000010 <walk>:
  10:	mov    0x0(%rip),%ecx        # 16 <walk+0x6>
  16:	test   %ecx,%ecx
  18:	je     20 <walk+0x10>
  1a:	call   0 <helper>
			1b: R_X86_64_PLT32	helper-0x4
  1f:	ret
  20:	xor    %eax,%eax
  22:	ret
"""

# the same walk, renamed and at another address, after another function
X86_MOVED = X86.replace("<walk", "<__walk").replace("  10:", " 110:").replace(
    "0000000000000010 <__walk>", "0000000000000110 <__walk>")

def bodies(text):
    """parse()'s function bodies of an objdump text."""
    return codegen.parse(text)[0]


ARM64 = """
0000000000000040 <convert>:
  40:	mov	w5, #0x27                  	// #39
  44:	b.eq	4c <convert+0xc>  // b.none
  48:	bl	0 <memset>
			48: R_AARCH64_CALL26	memset
  4c:	ret
"""


def test_a_function_at_another_address_or_name_is_the_same():
    a, b = bodies(X86)["walk"], bodies(X86_MOVED)["__walk"]
    assert codegen.compare(a, b)[0] == "same"
    assert "<.+0x10>" in " ".join(a)      # a branch inside the function


def test_arm64_comments_go_and_a_call_keeps_its_symbol():
    body = bodies(ARM64)["convert"]
    assert body[0] == "mov w5, #0x27"
    assert "reloc R_AARCH64_CALL26 memset" in body
    assert any(i.startswith("bl <memset") for i in body)


def test_a_call_to_another_function_differs():
    other = X86.replace("helper-0x4", "other-0x4").replace("call   0 <helper>",
                                                            "call   0 <other>")
    a, b = bodies(X86)["walk"], bodies(other)["walk"]
    status, detail = codegen.compare(a, b)
    assert status == "differs"
    assert "first difference at line 4" in detail


def test_one_instruction_more_differs():
    more = X86.replace("  20:	xor    %eax,%eax\n", "  20:	xor    %eax,%eax\n  21:	nop\n")
    status, _ = codegen.compare(bodies(X86)["walk"], bodies(more)["walk"])
    assert status == "differs"


def test_a_missing_function_is_missing():
    assert codegen.compare(None, ["ret"])[0] == "missing"
    assert codegen.compare(["ret"], None)[0] == "missing"


class FakeObjects(dict):
    """Objects stand-in: {object: parse() result}; an absent object raises
    as codegen.functions() does for a file that is not there."""

    def __getitem__(self, obj):
        if obj not in self:
            raise LabError(f"{obj} is missing: build that kernel first ('lab build')")
        return dict.__getitem__(self, obj)


CLAIM = (codegen.Same("x86_64", "mm/walk.o", "walk", "__walk", "0000", "test"),)


def test_a_claim_holds_when_the_code_is_the_same():
    rows = cmd.claim_rows("x86_64", FakeObjects({"mm/walk.o": bodies(X86)}),
                          FakeObjects({"mm/walk.o": bodies(X86_MOVED)}), CLAIM)
    assert [ok for ok, _ in rows] == [True]


@pytest.mark.parametrize("patched", [
    {"mm/walk.o": bodies(X86_MOVED.replace("xor    %eax,%eax", "mov    $1,%eax"))},
    {"mm/walk.o": bodies(X86)},     # the series' name is not there
    {},                                    # the object is not there
])
def test_a_claim_fails_when_it_does_not_hold(patched):
    rows = cmd.claim_rows("x86_64", FakeObjects({"mm/walk.o": bodies(X86)}),
                          FakeObjects(patched), CLAIM)
    assert [ok for ok, _ in rows] == [False]


def test_main_exits_1_on_a_failed_claim_and_on_no_claim(monkeypatch, tmp_path, capsys):
    (tmp_path / "s").mkdir()
    (tmp_path / "p").mkdir()
    s_dir, p_dir = tmp_path / "s", tmp_path / "p"
    monkeypatch.setattr(cmd, "claim_rows", lambda *a: [(True, "a"), (False, "b")])
    assert cmd.main(["x86_64"], s_dir, p_dir) == 1
    out = capsys.readouterr().out
    assert "not ok 2 b" in out and out.rstrip().endswith("1 passed, 1 failed")
    monkeypatch.setattr(cmd, "claim_rows", lambda *a: [])
    assert cmd.main(["x86_64"], s_dir, p_dir) == 1
    monkeypatch.setattr(cmd, "claim_rows", lambda *a: [(True, "a")])
    assert cmd.main(["x86_64"], s_dir, p_dir) == 0


def test_build_dirs_go_together():
    with pytest.raises(LabError):
        cmd.build_dirs("x86_64", "/a", None)
    with pytest.raises(LabError):
        cmd.main(["x86_64", "arm64"], "/a", "/b")


def test_every_claim_names_an_arch_object_and_patch():
    from lab.core import config
    for c in codegen.SAME:
        assert c.arch in config.ARCHES
        assert c.obj.endswith(".o") and c.patch.isdigit() and c.why


@pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("objdump")),
                    reason="needs the host's gcc and objdump")
def test_real_objects_compiled_twice(tmp_path):
    """gcc -O2 objects: the same function beside different neighbours is
    the same; a changed constant differs."""
    walk = "int walk(int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += p[i] * K; return s; }\n"
    srcs = {"a": "#define K 3\nint other(void) { return 1; }\n" + walk,
            "b": "#define K 3\n" + walk + "long more(long x) { return x * 7 + 2; }\n",
            "c": "#define K 5\n" + walk}
    objs = {}
    for name, text in srcs.items():
        (tmp_path / f"{name}.c").write_text(text)
        subprocess.run(["gcc", "-O2", "-c", "-o", str(tmp_path / f"{name}.o"),
                        str(tmp_path / f"{name}.c")], check=True)
        objs[name] = codegen.functions(tmp_path / f"{name}.o", "objdump")
    assert codegen.compare(objs["a"]["walk"], objs["b"]["walk"])[0] == "same"
    assert codegen.compare(objs["a"]["walk"], objs["c"]["walk"])[0] == "differs"
    with pytest.raises(LabError):
        codegen.functions(tmp_path / "absent.o", "objdump")


def test_end_padding_is_not_code():
    padded = X86.replace("  22:	ret\n", "  22:	ret\n  23:	nopl   0x0(%rax,%rax,1)\n"
                         "  2a:	data16 cs nopw 0x0(%rax,%rax,1)\n")
    assert bodies(padded)["walk"] == bodies(X86)["walk"]
    inner = X86.replace("  1f:	ret\n", "  1f:	nop\n  1f:	ret\n")
    assert bodies(inner)["walk"] != bodies(X86)["walk"]


def test_an_operand_or_an_addend_alone_differs():
    imm = X86.replace("xor    %eax,%eax", "xor    %ecx,%ecx")
    assert codegen.compare(bodies(X86)["walk"], bodies(imm)["walk"])[0] == "differs"
    addend = X86.replace("helper-0x4", "helper-0x8")
    assert codegen.compare(bodies(X86)["walk"], bodies(addend)["walk"])[0] == "differs"
    arm_imm = ARM64.replace("mov	w5, #0x27                  	// #39",
                            "mov	w5, #0x28                  	// #40")
    assert codegen.compare(bodies(ARM64)["convert"], bodies(arm_imm)["convert"])[0] == "differs"
    rip = X86.replace("# 16 <walk+0x6>", "# 1a <walk+0xa>")
    assert codegen.compare(bodies(X86)["walk"], bodies(rip)["walk"])[0] == "differs"


def test_skipped_zeros_are_not_nothing():
    zeros = ARM64.replace("  4c:	ret\n", "\t...\n  54:	ret\n")
    assert codegen.compare(bodies(ARM64)["convert"], bodies(zeros)["convert"])[0] == "differs"


def test_padding_the_code_runs_into_is_code():
    falls = X86.replace("  22:	ret\n", "  22:	nop\n")
    assert bodies(falls)["walk"][-1] == "nop"
    # a conditional branch falls through: the nop after it is code
    cond = ARM64.replace("  4c:	ret\n", "  4c:	b.eq	40 <convert>\n  50:	nop\n")
    assert bodies(cond)["convert"][-1] == "nop"
    uncond = ARM64.replace("  4c:	ret\n", "  4c:	b	40 <convert>\n  50:	nop\n")
    assert bodies(uncond)["convert"][-1] == "b <.>"


def test_two_functions_of_one_name_are_refused():
    with pytest.raises(LabError):
        codegen.parse(X86 + X86)


RELOCS = """
RELOCATION RECORDS FOR [__jump_table]:
OFFSET           TYPE              VALUE
0000000000000000 R_X86_64_PC32     .text+0x0000000000000016
0000000000000004 R_X86_64_PC32     .text+0x0000000000000020
0000000000000008 R_X86_64_PC64     some_key+0x0000000000000002
0000000000000010 R_X86_64_PC32     .text+0x0000000000000000
0000000000000014 R_X86_64_PC32     .text+0x0000000000000004
0000000000000018 R_X86_64_PC64     other_key
"""


def tables(relocs, raw=b"\0" * 32):
    _, where = codegen.parse("Disassembly of section .text:\n" + X86)
    return codegen.side_tables(codegen.read_relocs(relocs), {"__jump_table": raw}, where,
                               "elf64-x86-64")


def test_a_static_branch_is_part_of_its_function():
    t = tables(RELOCS)
    assert t["walk"] == ["__jump_table 0:R_X86_64_PC32:<.+0x6> 4:R_X86_64_PC32:<.+0x10> "
                         "8:R_X86_64_PC64:some_key+0x0000000000000002 " + "00" * 16]
    assert len(t["helper"]) == 1      # the second entry, about helper()
    other_key = tables(RELOCS.replace("some_key+0x0000000000000002", "other_key+0x0000000000000002"))
    assert other_key["walk"] != t["walk"]
    other_kind = tables(RELOCS.replace("some_key+0x0000000000000002", "some_key"))
    assert other_kind["walk"] != t["walk"]


ALT = """
RELOCATION RECORDS FOR [.altinstructions]:
OFFSET           TYPE              VALUE
0000000000000000 R_X86_64_PC32     .text+0x0000000000000016
0000000000000004 R_X86_64_PC32     .altinstr_replacement
"""


def test_an_alternatives_cpu_feature_is_part_of_its_function():
    _, where = codegen.parse("Disassembly of section .text:\n" + X86)

    def alt(raw):
        return codegen.side_tables(codegen.read_relocs(ALT), {".altinstructions": raw},
                                   where, "elf64-x86-64")["walk"]
    feature = bytes.fromhex("0000000000000000" + "75000000" + "0505")
    assert alt(feature) == alt(feature)
    assert alt(feature) != alt(bytes.fromhex("0000000000000000" + "76000000" + "0505"))
    # the relocated fields are not bytes to compare
    assert alt(feature) == alt(bytes.fromhex("1111111122222222" + "75000000" + "0505"))


def test_one_directory_twice_is_refused(tmp_path):
    with pytest.raises(LabError):
        cmd.build_dirs("x86_64", tmp_path, tmp_path)


def test_lab_test_rows_pass_a_claim_that_holds_and_fail_one_that_does_not(monkeypatch):
    """tally_claims(): a row per claim of the arches asked, named by arch,
    object and function; a claim whose code differs, or whose object is not
    there (a build that did not happen), fails with the reason."""
    claims = CLAIM + (codegen.Same("x86_64", "mm/gone.o", "g", "g", "0000", "test"),
                      codegen.Same("arm64", "mm/walk.o", "walk", "walk", "0000", "test"))
    objs = {"s": FakeObjects({"mm/walk.o": bodies(X86)}),
            "p": FakeObjects({"mm/walk.o": bodies(X86_MOVED)})}
    monkeypatch.setattr(cmd, "build_dirs", lambda a, s=None, p=None: ("s", "p"))
    monkeypatch.setattr(cmd, "Objects", lambda root, objdump: objs[root])
    t = Tally()
    cmd.tally_claims(t, ["x86_64"], claims)
    assert [(s, n) for s, n, _ in t.rows] == [("pass", "x86_64/default/codegen/mm/walk.o:__walk"),
                                         ("fail", "x86_64/default/codegen/mm/gone.o:g")]
    assert "missing" in t.rows[1][2]
    objs["p"] = FakeObjects({"mm/walk.o": bodies(
        X86_MOVED.replace("xor    %eax,%eax", "mov    $1,%eax"))})
    t = Tally()
    cmd.tally_claims(t, ["x86_64"], CLAIM)
    assert [s for s, _, _ in t.rows] == ["fail"] and "differs" in t.rows[0][2]
    t = Tally()
    cmd.tally_claims(t, ["riscv64"], claims)     # no claim of that arch: no row
    assert t.rows == []


def test_lab_test_rows_fail_when_a_claim_gets_no_result(monkeypatch):
    """A claim that claim_rows() answered nothing for is a failed row, not
    a claim that silently went."""
    monkeypatch.setattr(cmd, "build_dirs", lambda a, s=None, p=None: ("s", "p"))
    monkeypatch.setattr(cmd, "Objects", lambda root, objdump: None)
    monkeypatch.setattr(cmd, "claim_rows", lambda *a: [])
    t = Tally()
    cmd.tally_claims(t, ["x86_64"], CLAIM)
    assert [(s, n) for s, n, _ in t.rows] == [("fail", "x86_64/default/codegen/lab")]


# arm64 assembles an alternative's replacement into a subsection after the
# last function of .text: objdump shows it as more of that function.
ARM64_SUB = """
Disassembly of section .text:

0000000000000000 <first>:
   0:	mov	x0, #0x1
   4:	ret

0000000000000008 <last>:
   8:	nop
   c:	ret
  10:	dsb	ish
  14:	tlbi	vmalle1is
"""
SUB_SIZES = {"first": 8, "last": 8}
SUB_ALT = """
RELOCATION RECORDS FOR [.altinstructions]:
OFFSET           TYPE              VALUE
0000000000000000 R_AARCH64_PREL32  .text+0x0000000000000008
0000000000000004 R_AARCH64_PREL32  .text+0x0000000000000010
"""
SUB_RAW = {".altinstructions": bytes.fromhex("00000000" "00000000" "2a00" "04" "08")}


def sub_tables(dump, relocs=SUB_ALT, sizes=SUB_SIZES):
    code = {}
    bodies, where = codegen.parse(dump, sizes, code)
    t = codegen.side_tables(codegen.read_relocs(relocs), SUB_RAW, where,
                            "elf64-littleaarch64", code)
    return bodies, t


def test_code_after_a_functions_size_is_not_in_it():
    """With the symbols' sizes, the replacement arm64 puts after the last
    function is not that function's code; without them it would be."""
    bodies, _ = sub_tables(ARM64_SUB)
    assert bodies["last"] == ["nop", "ret"]
    assert codegen.parse(ARM64_SUB)[0]["last"][-1] == "tlbi vmalle1is"
    # a label without a size is no function
    assert ".altinstr_replacement" not in codegen.parse(
        "Disassembly of section .altinstr_replacement:\n\n"
        "0000000000000000 <.altinstr_replacement>:\n   0:\tnop\n", {})[0]


def test_an_alternatives_replacement_is_compared_by_its_code():
    """The replacement's place is no difference, its instructions are."""
    _, t = sub_tables(ARM64_SUB)
    assert t["last"][0].endswith("replacement: dsb ish; tlbi vmalle1is")
    # the same replacement, moved by a longer function before it
    moved = ARM64_SUB.replace("   8:\tnop\n", "   8:\tnop\n   c:\tnop\n").replace(
        "   c:\tret\n  10:\tdsb\tish\n  14:\ttlbi", "  10:\tret\n  14:\tdsb\tish\n  18:\ttlbi")
    _, t2 = sub_tables(moved, SUB_ALT.replace(".text+0x0000000000000010",
                                              ".text+0x0000000000000014"),
                       {"first": 8, "last": 12})
    assert t2["last"] == t["last"]
    other = ARM64_SUB.replace("tlbi\tvmalle1is", "tlbi\tvmalle1")
    assert sub_tables(other)[1]["last"] != t["last"]


def test_a_string_or_out_of_line_block_is_compared_by_its_content():
    """A relocation into merged strings compares the string, one into code
    outside every function the block there; not their offsets."""
    where = {"f": (".text", 0, 16)}
    code = {".altinstr_aux": {0: ("testb  $0x1,0x0(%rip)        # 7 <.altinstr_aux+0x7>",
                                  [("R_X86_64_PC32", "boot_cpu_data+0x6d")]),
                              7: ("jmp    c <.altinstr_aux+0xc>",
                                  [("R_X86_64_PC32", ".text+0x8")]),
                              12: ("jmp    11 <.altinstr_aux+0x11>",
                                   [("R_X86_64_PC32", ".text+0x4")])}}
    strings = {".rodata.str1.1": b"one\0bad pte\0"}

    def rel(value, code=code, strings=strings):
        return codegen.body_reloc(f"reloc R_X86_64_32S {value}", where, "f", code, strings)

    assert rel(".rodata.str1.1+0x4") == rel(".rodata.str1.1",
                                            strings={".rodata.str1.1": b"bad pte\0"})
    assert rel(".rodata.str1.1+0x4").endswith(":'bad pte'")
    assert rel(".rodata.str1.1+0x0") != rel(".rodata.str1.1+0x4")
    block = rel(".altinstr_aux+0x7")
    assert block == "reloc R_X86_64_32S .altinstr_aux {jmp <> [R_X86_64_PC32 <.+0x8>]}"
    assert rel(".altinstr_aux+0x0").count(";") == 1    # stops at the jmp
    assert rel(".altinstr_aux+0xc") != block             # another target
    # data elsewhere keeps its offset; code in a function is function-relative
    assert rel(".data+0x10") == "reloc R_X86_64_32S .data+0x10"
    assert rel(".text+0x4", code={".text": {}}) == "reloc R_X86_64_32S <.+0x4>"
