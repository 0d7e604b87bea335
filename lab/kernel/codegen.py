# SPDX-License-Identifier: GPL-2.0-only
"""What the compiler made of a function in two builds, stock 6.12 and the
series: the objdump -d of each function of an object, with what differs
from build to build by address alone taken out, compared.

The series claims, for some paths that cannot batch, that switch off runs
6.12's code instruction for instruction (patch 0046's change_protection(),
0043's readers of contiguous entries).  A bench shows that as a time within
the runs' spread; this shows it as code: SAME lists each such claim, and
'lab codegen' fails when one of them does not hold in the built kernels.

Normalising: addresses and raw bytes go; a branch or call target keeps its
symbol and offset ('<sym+0x1c>'), and a target inside the function itself
is written '<.+0x1c>', so that a function renamed by the series (6.12's
change_protection() is __change_protection() there) compares with its old
self; relocations are kept as their type and symbol, so a call to another
function is a difference.
"""

import re
import subprocess
from dataclasses import dataclass

from ..core.util import LabError


@dataclass(frozen=True)
class Same:
    """A claim: in the objects @obj of the arch's two builds, 6.12's
    function @stock and the series' function @patched are the same code."""
    arch: str
    obj: str
    stock: str
    patched: str
    patch: str
    why: str


SAME = (
    Same("x86_64", "mm/mprotect.o", "change_protection", "__change_protection", "0046",
         "with mprotect_batch off, or where nothing can batch, the unbatched walk "
         "is 6.12's"),
    Same("arm64", "fs/proc/task_mmu.o", "smaps_pte_range", "smaps_pte_range", "0043",
         "the contpte_early_exit switch is tested in contpte_ptep_get(), not in "
         "the inline ptep_get() its readers compile"),
    Same("arm64", "mm/page_vma_mapped.o", "page_vma_mapped_walk", "page_vma_mapped_walk",
         "0043", "as smaps_pte_range()"),
    Same("arm64", "mm/mlock.o", "mlock_pte_range", "mlock_pte_range", "0043",
         "as smaps_pte_range()"),
)

_FUNC = re.compile(r"^(?P<addr>[0-9a-f]+) <(?P<name>[^>]+)>:$")
_SECTION = re.compile(r"^Disassembly of section (?P<name>\S+):$")
_INSN = re.compile(r"^\s+[0-9a-f]+:\s+(?P<text>\S.*)$")
_RELOC = re.compile(r"^\s+[0-9a-f]+: (?P<type>R_\S+)\s+(?P<sym>\S+)$")
_TARGET = re.compile(r"\b[0-9a-f]+ <(?P<sym>[^>+]+)(?P<off>\+0x[0-9a-f]+)?>")
_VALUE = re.compile(r"^(?P<sym>[^+-]+)(?P<add>[+-]0x[0-9a-f]+)?$")


def objdump_cmd(cross):
    """The objdump of an arch's binaries (@cross: its CROSS_COMPILE)."""
    return f"{cross}objdump"


def normalise(name, text):
    """One instruction of function @name as objdump prints it, without
    what differs by address alone (see the module's comment)."""
    def target(m):
        sym = "." if m.group("sym") == name else m.group("sym")
        return f"<{sym}{m.group('off') or ''}>"
    text = re.sub(r"\s+//.*$", "", text)   # arm64's comments repeat an operand
    return re.sub(r"\s+", " ", _TARGET.sub(target, text)).strip()


# What an assembler pads the end of a function with, up to the alignment of
# the next one: not run, and present or not by what follows the function.
# Only taken off after an instruction that does not fall through.
_PADDING = re.compile(r"^(nop|data16 |cs nop|xchg %ax,%ax$|int3$)")
_NO_FALL_THROUGH = re.compile(r"^(ret|retq|jmp|b|br|ud2|brk|udf)(\s|$)")


def unpadded(body):
    """@body without the padding after its last instruction that does not
    fall through."""
    end = len(body)
    while end and _PADDING.match(body[end - 1]):
        end -= 1
    if end < len(body) and end and not _NO_FALL_THROUGH.match(body[end - 1]):
        return body    # a nop the code runs into is code
    return body[:end]


def parse(dump):
    """({function: [normalised instruction or relocation]}, {function:
    (section, start, end)}) of the text of 'objdump -dr -z
    --no-show-raw-insn', each body without its end padding.  A name that
    appears twice is refused: which one a claim means is not known."""
    out, where, cur, section = {}, {}, None, ""
    for line in dump.splitlines():
        m = _SECTION.match(line)
        if m:
            section, cur = m.group("name"), None
            continue
        m = _FUNC.match(line)
        if m:
            cur = m.group("name")
            if cur in out:
                raise LabError(f"two functions named {cur} in one object")
            out[cur] = []
            where[cur] = [section, int(m.group("addr"), 16), None]
            continue
        if cur is None:
            continue
        r = _RELOC.match(line)
        if r:
            out[cur].append(f"reloc {r.group('type')} {r.group('sym')}")
            continue
        i = _INSN.match(line)
        if i:
            out[cur].append(normalise(cur, i.group("text")))
        elif line.strip() == "...":
            out[cur].append("...")    # skipped zeros: never equal to no bytes
    # a function ends where the next one of its section starts
    starts = sorted((sec, a, f) for f, (sec, a, _) in where.items())
    for (sec, a, f), nxt in zip(starts, starts[1:] + [None]):
        where[f][2] = nxt[1] if nxt and nxt[0] == sec else None
    return ({f: unpadded(body) for f, body in out.items()},
            {f: tuple(w) for f, w in where.items()})


# Tables whose entries start with a relocation against the code they are
# about, and how long an entry is on each arch (its other fields: the
# jump target and the static key, an alternative's replacement and CPU
# feature, an exception's fixup and type).  Their relocations and bytes
# from the entry's first one on are part of the function's code here.
# __bug_table's entries hold a source line too; only their relocations
# are compared, so that moved lines are no difference.
ENTRY = {"elf64-x86-64": {"__jump_table": 16, ".altinstructions": 14, "__ex_table": 12,
                          "__bug_table": 0},
         "elf64-littleaarch64": {"__jump_table": 16, ".altinstructions": 12,
                                 "__ex_table": 12, "__bug_table": 0}}
_RELOC_SIZE = re.compile(r"(PC64|_64|ABS64|PREL64)$")


def _addend(m):
    """The addend of a _VALUE match, 0 when it has none."""
    add = m.group("add") or "+0x0"
    return int(add[1:], 16) * (-1 if add[0] == "-" else 1)


def _locate(where, sec, addr):
    """(function, offset in it) of address @addr of section @sec, or None."""
    for f, (s, start, end) in where.items():
        if s == sec and start <= addr and (end is None or addr < end):
            return f, addr - start
    return None


def _value(where, value, of):
    """A relocation's target, function-relative: '<.+0x10>' in function
    @of, '<f+0x10>' in another one, as objdump wrote it otherwise."""
    m = _VALUE.match(value)
    if not m:
        return value
    hit = _locate(where, m.group("sym"), _addend(m))
    if hit is None:
        # another section's code or data (an alternative's replacement, a
        # string): its offset moves with everything else put there, so
        # the section is kept and the offset is not
        if m.group("sym").startswith("."):
            return re.sub(r"^\.L\S*", ".L", m.group("sym"))
        return value    # a symbol: a static key's addend holds its branch's kind
    f, off = hit
    return f"<{'.' if f == of else f}+{off:#x}>"


def side_tables(relocs, contents, where, fmt):
    """{function: [entry]} of the tables of ENTRY: each entry whose first
    relocation points into the function, with its relocations (offset in
    the entry, type, target) and, where ENTRY gives a length, its bytes
    other than the relocated ones.  @relocs: {section: [(offset, type,
    value)]} of 'objdump -r'; @contents: {section: bytes} of 'objdump -s'."""
    sizes = ENTRY.get(fmt, {})
    out = {}
    for sec, size in sizes.items():
        rows = relocs.get(sec, [])
        data = contents.get(sec, b"")
        for off, typ, value in rows:
            m = _VALUE.match(value)
            hit = m and _locate(where, m.group("sym"), _addend(m))
            span = size or 12
            if not hit or off % span:
                continue    # not the first field of an entry, or not code
            f = hit[0]
            entry = [f"{o - off}:{t}:{_value(where, v, f)}" for o, t, v in rows
                     if off <= o < off + span]
            if size:
                raw = bytearray(data[off:off + size])
                for o, t, _ in rows:
                    if off <= o < off + size:
                        n = 8 if _RELOC_SIZE.search(t) else 4
                        raw[o - off:o - off + n] = b"\0" * len(raw[o - off:o - off + n])
                entry.append(raw.hex())
            out.setdefault(f, []).append(f"{sec} " + " ".join(entry))
    return out


def _by_section(text, header, row):
    """{section: [match of @row]} of objdump output in which each section's
    rows follow a line matching @header (its group 1: the section)."""
    out, rows = {}, None
    for line in text.splitlines():
        m = re.match(header, line)
        if m:
            rows = out.setdefault(m.group(1), [])
            continue
        m = re.match(row, line + " ")
        if m and rows is not None:
            rows.append(m)
    return out


def read_relocs(text):
    """{section: [(offset, type, value)]} of 'objdump -r' output."""
    return {sec: [(int(m.group(1), 16), m.group(2), m.group(3)) for m in rows]
            for sec, rows in _by_section(text, r"^RELOCATION RECORDS FOR \[(.+)\]:$",
                                         r"^([0-9a-f]{8,}) (\S+)\s+(\S+) $").items()}


def read_contents(text):
    """{section: bytes} of 'objdump -s' output."""
    return {sec: b"".join(bytes.fromhex(m.group(2).replace(" ", "")) for m in rows)
            for sec, rows in _by_section(text, r"^Contents of section (.+):$",
                                         r"^ ([0-9a-f]+) ((?:[0-9a-f]{2,8} ){1,4})").items()}


def _objdump(objdump, args, path):
    p = subprocess.run([objdump, *args, str(path)], capture_output=True, text=True)
    if p.returncode != 0:
        raise LabError(f"{objdump} {' '.join(args)} {path} failed: {p.stderr.strip()}")
    return p.stdout


def functions(path, objdump):
    """{function: body} of the object file @path, disassembled with
    @objdump: parse()'s instructions and relocations, then the entries of
    the side tables (side_tables()) that are about the function."""
    if not path.exists():
        raise LabError(f"{path} is missing: build that kernel first ('lab build')")
    dump = _objdump(objdump, ["-dr", "-z", "--no-show-raw-insn"], path)
    m = re.search(r"file format (\S+)", dump)
    fmt = m.group(1) if m else ""
    bodies, where = parse(dump)
    relocs = read_relocs(_objdump(objdump, ["-r"], path))
    present = [s for s in ENTRY.get(fmt, {}) if s in relocs]
    contents = read_contents(_objdump(objdump, ["-s"] + [a for s in present
                                                         for a in ("-j", s)], path)) \
        if present else {}
    for f, entries in side_tables(relocs, contents, where, fmt).items():
        if f in bodies:
            bodies[f] = bodies[f] + ["table " + e for e in entries]
    return bodies


def instructions(body):
    """The instructions of a body, relocations and table entries left out."""
    return [i for i in body if not i.startswith(("reloc ", "table "))]


def compare(stock, patched):
    """(status, detail) of two parse() bodies, each None when the object
    has no such function: 'same', 'differs' or 'missing'."""
    if stock is None or patched is None:
        return "missing", ("not in the stock build" if stock is None
                           else "not in the series' build")
    if stock == patched:
        return "same", f"{len(instructions(stock))} instructions"
    a, b = instructions(stock), instructions(patched)
    first = next((n for n, (x, y) in enumerate(zip(stock, patched)) if x != y),
                 min(len(stock), len(patched)))
    return "differs", (f"{len(a)} instructions in 6.12's, {len(b)} in the series'; "
                       f"first difference at line {first + 1}")


def object_table(stock, patched):
    """[(function, status, detail)] of every function either object has,
    by name (a function the series renamed is two rows: 'missing')."""
    return [(f, *compare(stock.get(f), patched.get(f)))
            for f in sorted(set(stock) | set(patched))]
