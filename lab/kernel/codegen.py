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
_INSN = re.compile(r"^\s+(?P<addr>[0-9a-f]+):\s+(?P<text>\S.*)$")
_RELOC = re.compile(r"^\s+(?P<addr>[0-9a-f]+): (?P<type>R_\S+)\s+(?P<sym>\S+)$")
# A function symbol of 'objdump -t': address, section, size, name.
_SYMBOL = re.compile(r"^(?P<addr>[0-9a-f]+) .{6}F (?P<sec>\S+)\s+(?P<size>[0-9a-f]+) "
                     r"(?P<name>\S+)$")
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


def read_sizes(text):
    """{function: size} of the function symbols of 'objdump -t' output."""
    return {m.group("name"): int(m.group("size"), 16)
            for m in map(_SYMBOL.match, text.splitlines()) if m}


def parse(dump, sizes=None, code=None):
    """({function: [normalised instruction or relocation]}, {function:
    (section, start, end)}) of the text of 'objdump -dr -z
    --no-show-raw-insn', each body without its end padding.  A name that
    appears twice is refused: which one a claim means is not known.

    With @sizes ({function: size}, read_sizes()), a function ends at its
    size, and a label without a size (objdump's name for a section with no
    symbol, such as x86's .altinstr_replacement) is no function: what lies
    outside every function, such as the alternatives arm64 assembles into
    a subsection after the last function of .text, is in no body.  Without
    @sizes a function ends where the next label of its section starts.
    @code, a dict, receives {section: {address: (text, [(relocation type,
    value)])}} of every instruction, for side_tables() and body_reloc()."""
    out, where, cur, section, last = {}, {}, None, "", None
    code = {} if code is None else code
    for line in dump.splitlines():
        m = _SECTION.match(line)
        if m:
            section, cur, last = m.group("name"), None, None
            continue
        m = _FUNC.match(line)
        if m:
            cur = m.group("name")
            if sizes is not None and cur not in sizes:
                cur = None
                continue
            if cur in out:
                raise LabError(f"two functions named {cur} in one object")
            out[cur] = []
            start = last = int(m.group("addr"), 16)
            where[cur] = [section, start,
                          start + sizes[cur] if sizes is not None else None]
            continue
        r = _RELOC.match(line)
        i = None if r else _INSN.match(line)
        here = code.setdefault(section, {})
        if i:
            last = int(i.group("addr"), 16)
            here[last] = (i.group("text"), [])
        elif r and last in here:
            here[last][1].append((r.group("type"), r.group("sym")))
        if cur is None:
            continue
        if where[cur][2] is not None and last is not None and last >= where[cur][2]:
            continue    # past the function's size
        if r:
            out[cur].append(f"reloc {r.group('type')} {r.group('sym')}")
        elif i:
            out[cur].append(normalise(cur, i.group("text")))
        elif line.strip() == "...":
            out[cur].append("...")    # skipped zeros: never equal to no bytes
    if sizes is None:
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


def replacement(code, where, value, length, of):
    """The instructions an alternative of function @of puts in place: those
    of @code (parse()'s {section: {address: (text, relocations)}}) at the
    target of relocation value @value and in the @length bytes after it.
    objdump's rendering of a branch target there is dropped (in an object
    file it shows the unrelocated field); its relocation, function-relative
    (_value()), says where the branch goes."""
    m = _VALUE.match(value)
    if not m:
        return []
    at, here = _addend(m), code.get(m.group("sym"), {})
    return [_written(here[a], where, of) for a in sorted(here) if at <= a < at + length]


def _written(insn, where, of):
    """An instruction of parse()'s @code, (text, relocations), as
    replacement() and _block() compare it: objdump's branch target
    dropped, each relocation's target function-relative (_value())."""
    text, relocs = insn
    return " ".join([normalise(None, _TARGET.sub("<>", text))] +
                    [f"[{t} {_value(where, v, of)}]" for t, v in relocs])


def side_tables(relocs, contents, where, fmt, code=None):
    """{function: [entry]} of the tables of ENTRY: each entry whose first
    relocation points into the function, with its relocations (offset in
    the entry, type, target) and, where ENTRY gives a length, its bytes
    other than the relocated ones.  An alternative's entry also holds the
    instructions of its replacement (its last byte is their length, on
    x86_64 and arm64), read from @code (parse()'s): their place moves with
    everything else assembled there, their text is the code.  @relocs:
    {section: [(offset, type, value)]} of 'objdump -r'; @contents:
    {section: bytes} of 'objdump -s'."""
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
                repl = [v for o, _, v in rows if o == off + 4]
                if sec == ".altinstructions" and code is not None and repl and raw:
                    entry.append("replacement: " + "; ".join(
                        replacement(code, where, repl[0], data[off + size - 1], f)))
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


# Sections of merged strings: a relocation into one is compared by the
# string it points at, whose offset moves with the other strings there.
_STRINGS = ".rodata.str"


def body_reloc(entry, where, of, code, contents):
    """A relocation of function @of's body ('reloc TYPE VALUE'; any other
    entry as it is) with its target made independent of what else the
    object holds: into code, function-relative or, outside every function
    (an alternative's out-of-line code), its section alone (_value()); into
    a section of merged strings, the string.  A target in other data keeps
    its offset."""
    if not entry.startswith("reloc "):
        return entry
    _, typ, value = entry.split(" ", 2)
    m = _VALUE.match(value)
    if m and m.group("sym").startswith(_STRINGS) and m.group("sym") in contents:
        data = contents[m.group("sym")][max(_addend(m), 0):]
        text = data.split(b"\0", 1)[0].decode("utf-8", "replace")
        return f"reloc {typ} {m.group('sym')}:{text!r}"
    if m and m.group("sym") in code:
        target = _value(where, value, of)
        if not target.startswith("<"):
            # out of every function: the block of code there, to its end
            target += " {" + "; ".join(_block(code, where, m, of)) + "}"
        return f"reloc {typ} {target}"
    return entry


def _block(code, where, m, of):
    """The instructions of @code from the target of relocation value match
    @m up to the first that does not fall through (at most 16), as
    replacement() writes them."""
    at, here = _addend(m), code.get(m.group("sym"), {})
    out = []
    for a in sorted(a for a in here if a >= at)[:16]:
        out.append(_written(here[a], where, of))
        if _NO_FALL_THROUGH.match(out[-1]):
            break
    return out


def functions(path, objdump):
    """{function: body} of the object file @path, disassembled with
    @objdump: parse()'s instructions and relocations, then the entries of
    the side tables (side_tables()) that are about the function."""
    if not path.exists():
        raise LabError(f"{path} is missing: build that kernel first ('lab build')")
    dump = _objdump(objdump, ["-dr", "-z", "--no-show-raw-insn"], path)
    m = re.search(r"file format (\S+)", dump)
    fmt = m.group(1) if m else ""
    code = {}
    bodies, where = parse(dump, read_sizes(_objdump(objdump, ["-t"], path)), code)
    relocs = read_relocs(_objdump(objdump, ["-r"], path))
    present = [s for s in ENTRY.get(fmt, {}) if s in relocs]
    present += sorted({v.split("+")[0] for rows in relocs.values() for _, _, v in rows
                       if v.startswith(_STRINGS)})
    contents = read_contents(_objdump(objdump, ["-s"] + [a for s in present
                                                         for a in ("-j", s)], path)) \
        if present else {}
    for f, body in bodies.items():
        bodies[f] = [body_reloc(e, where, f, code, contents) for e in body]
    for f, entries in side_tables(relocs, contents, where, fmt, code).items():
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
