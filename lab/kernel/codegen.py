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

_FUNC = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")
_INSN = re.compile(r"^\s+[0-9a-f]+:\s+(?P<text>\S.*)$")
_RELOC = re.compile(r"^\s+[0-9a-f]+: (?P<type>R_\S+)\s+(?P<sym>\S+)$")
_TARGET = re.compile(r"\b[0-9a-f]+ <(?P<sym>[^>+]+)(?P<off>\+0x[0-9a-f]+)?>")


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
_PADDING = re.compile(r"^(nop|data16 |cs nop|xchg %ax,%ax$|int3$)")


def unpadded(body):
    """@body without the padding at its end."""
    end = len(body)
    while end and _PADDING.match(body[end - 1]):
        end -= 1
    return body[:end]


def parse(dump):
    """{function: [normalised instruction or relocation]} of the text of
    'objdump -dr --no-show-raw-insn', each without its end padding."""
    out, cur = {}, None
    for line in dump.splitlines():
        m = _FUNC.match(line)
        if m:
            cur = m.group("name")
            out[cur] = []
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
    return {f: unpadded(body) for f, body in out.items()}


def functions(path, objdump):
    """parse() of the object file @path, disassembled with @objdump."""
    if not path.exists():
        raise LabError(f"{path} is missing: build that kernel first ('lab build')")
    p = subprocess.run([objdump, "-dr", "--no-show-raw-insn", str(path)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise LabError(f"{objdump} -dr {path} failed: {p.stderr.strip()}")
    return parse(p.stdout)


def instructions(body):
    """The instructions of a parse() body, relocations left out."""
    return [i for i in body if not i.startswith("reloc ")]


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
