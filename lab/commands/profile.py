# SPDX-License-Identifier: GPL-2.0-only
"""Profile: where two kernels' instructions differ, function by function.

'lab bench' says how much instruction-time a workload takes; this says
where.  One boot per kernel runs one bench workload once under
'-icount shift=0,sleep=off' with the insnprof QEMU plugin
(lab/insnprof/insnprof.c), which counts the instructions of every kernel
translation block.  The counts are mapped to the functions of the kernel's
vmlinux and the two kernels are compared: stock 6.12 against the patched
kernel in one mode of the workload (by default "off", every switch off).
The whole boot is counted, so boot work shows too; it is the same on both
kernels except for what the series adds.

Blocks that start at a function's first instruction are entered once per
call, so the report also gives calls per function.
"""

import bisect
import shutil
import time

from ..core import config
from ..core.util import LabError, Timer, out, run as run_cmd, say
from ..guest import image, run, workloads
from ..kernel import build, source
from ..outputs.stats import instr_time
from . import bench

PLUGIN_SRC = config.REPO / "lab" / "insnprof" / "insnprof.c"


def plugin():
    """Build the insnprof plugin when its source is newer; return its path."""
    so = config.WORK / "insnprof" / "insnprof.so"
    if so.exists() and so.stat().st_mtime >= PLUGIN_SRC.stat().st_mtime:
        return so
    if not shutil.which("gcc"):
        raise LabError("gcc not found: apt-get install gcc")
    so.parent.mkdir(parents=True, exist_ok=True)
    run_cmd(["gcc", "-O2", "-Wall", "-shared", "-fPIC", "-fvisibility=hidden",
             "-o", str(so), str(PLUGIN_SRC)], quiet=True)
    return so


def symbols(arch_name, vmlinux):
    """(sorted start addresses, names) of vmlinux's text symbols."""
    a = config.arch(arch_name)
    nm = f"{a.cross}nm"
    if not shutil.which(nm):
        raise LabError(f"{nm} not found: 'lab deps --install'")
    starts, names = [], []
    for line in out([nm, "-n", str(vmlinux)]).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            starts.append(int(parts[0], 16))
            names.append(parts[2])
    return starts, names


def parse_blocks(text):
    """The plugin's lines -> {vaddr: [insns executed, times entered, TLB
    maintenance instructions executed, of them whole-ASID invalidations]}.
    A line without the last column (an older plugin) counts none."""
    blocks = {}
    for line in text.splitlines():
        vaddr, insns, execs, tlb, *rest = line.split()
        asid = int(rest[0]) if rest else 0
        b = blocks.setdefault(int(vaddr, 16), [0, 0, 0, 0])
        b[0] += int(insns) * int(execs)
        b[1] += int(execs)
        b[2] += int(tlb) * int(execs)
        b[3] += asid * int(execs)
    return blocks


def by_function(blocks, starts, names):
    """{function: [instructions, calls, TLB maintenance instructions,
    whole-ASID invalidations]}; calls count entries at its first
    instruction."""
    funcs = {}
    for vaddr, (insns, execs, tlb, asid) in blocks.items():
        i = bisect.bisect_right(starts, vaddr) - 1
        name = names[i] if i >= 0 else "?"
        f = funcs.setdefault(name, [0, 0, 0, 0])
        f[0] += insns
        f[2] += tlb
        f[3] += asid
        if i >= 0 and starts[i] == vaddr:
            f[1] += execs
    return funcs


def diff_table(base, other, top):
    """Rows (function, base insns, other insns, delta, base calls, other
    calls) for the top functions by |delta|, then the total."""
    names = set(base) | set(other)
    rows = []
    for n in names:
        b, o = base.get(n, [0, 0, 0, 0]), other.get(n, [0, 0, 0, 0])
        if b[0] != o[0]:
            rows.append((n, b[0], o[0], o[0] - b[0], b[1], o[1]))
    rows.sort(key=lambda r: -abs(r[3]))
    tb = sum(v[0] for v in base.values())
    to = sum(v[0] for v in other.values())
    return rows[:top], (tb, to)


def format_table(rows, totals, base_name, other_name):
    w = max([len(r[0]) for r in rows] + [8])
    lines = [f"{'function':{w}} {base_name + ' insns':>16} {other_name + ' insns':>16} "
             f"{'delta':>12} {base_name + ' calls':>14} {other_name + ' calls':>14}"]
    for n, b, o, d, bc, oc in rows:
        lines.append(f"{n:{w}} {b:16,} {o:16,} {d:+12,} {bc:14,} {oc:14,}")
    tb, to = totals
    lines.append(f"{'all kernel code':{w}} {tb:16,} {to:16,} {to - tb:+12,} "
                 f"({(to - tb) / tb:+.2%})")
    return "\n".join(lines)


def profile_boot(arch_name, flavour, w, mode, quick, outdir, so):
    kernel = build.image_path(arch_name, "default", flavour)
    tag = f"{flavour}-{mode}" if flavour == "patched" else flavour
    mode = None if flavour == "stock" else mode
    counts = outdir / f"{arch_name}-{w.name}-{tag}.blocks"
    say(f"profile boot {arch_name}/{tag}: {w.name}")
    b = run.boot(run.BootSpec(
        arch=arch_name, kernel=kernel,
        plan=workloads.plan([w], 1, flavour, quick, only_mode=mode,
                            switch_arch=arch_name),
        env={"LAB_ARCH": arch_name, "LAB_FLAVOUR": flavour, "LAB_VARIANT": "default"},
        name=f"{arch_name}-profile-{w.name}-{tag}",
        **dict(bench.boot_args(quick),
               **workloads.boot_kwargs(w.boot, ["-plugin", f"{so},out={counts}"]),
               append="nokaslr " + bench.BOOT_APPEND)))
    if not b.ready or b.exit_code != 0 or not counts.exists():
        raise LabError(f"profile boot {arch_name}/{tag} did not complete "
                       f"(console: {b.console})")
    runs = bench.parse_runs(b, {})
    t = instr_time(runs[0]) / 1e9 if runs else float("nan")
    return parse_blocks(counts.read_text()), t, b.console


# Functions whose calls are the mechanisms the series changes; the table
# shows those the kernel has (inlined ones have no symbol of their own).
MECHANISMS = (
    "folio_referenced_one", "lru_gen_look_around", "try_to_unmap_one",
    "try_to_unmap_flush", "try_to_unmap_flush_dirty", "arch_tlbbatch_flush",
    "__contpte_try_unfold", "__contpte_try_fold",
    "contpte_ptep_test_and_clear_young", "contpte_ptep_clear_flush_young",
    "contpte_test_and_clear_young_ptes", "contpte_clear_flush_young_ptes",
    "flush_tlb_mm_range", "native_flush_tlb_multi", "flush_tlb_func",
    "smp_call_function_many_cond",
)


def mechanism_table(columns, asid=False):
    """columns: [(label, funcs)] -> text: calls of MECHANISMS per boot and
    the TLB maintenance instructions of all kernel code; with asid, also
    the whole-ASID invalidations among them (arm64: flush_tlb_mm() is
    inline, so its TLBI ASIDE1IS is what counts its calls)."""
    names = [m for m in MECHANISMS if any(m in f for _, f in columns)]
    w = max([len(n) for n in names] + [36])
    lines = [f"{'calls':{w}} " + " ".join(f"{lab:>16}" for lab, _ in columns)]
    for n in names:
        lines.append(f"{n:{w}} " + " ".join(f"{f.get(n, [0, 0, 0, 0])[1]:16,}"
                                             for _, f in columns))
    lines.append(f"{'TLB maintenance instructions (all)':{w}} " +
                 " ".join(f"{sum(v[2] for v in f.values()):16,}" for _, f in columns))
    if asid:
        lines.append(f"{'  of them TLBI ASIDE1* (flush_tlb_mm)':{w}} " +
                     " ".join(f"{sum(v[3] for v in f.values()):16,}"
                              for _, f in columns))
    lines.append(f"{'kernel instructions (all)':{w}} " +
                 " ".join(f"{sum(v[0] for v in f.values()):16,}" for _, f in columns))
    return "\n".join(lines)


def most_table(columns, top):
    """columns: [(label, funcs)] -> text: the top functions by instructions
    in the second column (the first patched mode), each with its
    instructions in every column.  The counts are of the whole boot, so
    the boot's own functions are among them; a function the workload runs
    the same on every kernel (swap_writepage()'s zero-fill scan, for
    one) bounds what any batch can save."""
    first = columns[1][1]
    names = sorted(first, key=lambda n: -first[n][0])[:top]
    w = max([len(n) for n in names] + [36])
    lines = [f"{'function':{w}} " + " ".join(f"{lab + ' insns':>16}" for lab, _ in columns)]
    for n in names:
        lines.append(f"{n:{w}} " + " ".join(f"{f.get(n, [0])[0]:16,}" for _, f in columns))
    return "\n".join(lines)


def main(arches, workload, modes=("off",), quick=False, top=25):
    t = Timer()
    if workload not in workloads.BY_NAME:
        raise LabError(f"unknown workload '{workload}' "
                       f"(known: {', '.join(workloads.BY_NAME)})")
    w = workloads.BY_NAME[workload]
    for mode in modes:
        if mode not in w.modes:
            raise LabError(f"unknown mode '{mode}' of {workload} "
                           f"(known: {', '.join(w.modes)})")
    other = [a for a in arches if not w.runs_on(a)]
    if other:
        raise LabError(f"{workload} does not run on {', '.join(other)} "
                       f"(it runs on {', '.join(w.arches)}): use -a")
    source.apply()
    so = plugin()
    outdir = config.WORK / "results" / f"profile-{time.strftime('%Y%m%d-%H%M%S')}"
    outdir.mkdir(parents=True)
    report = []
    for arch_name in arches:
        for flavour in config.FLAVOURS:
            build.build(arch_name, "default", flavour)
        image.build(arch_name)
        syms = {f: symbols(arch_name, config.build_dir(arch_name, "default", f) / "vmlinux")
                for f in config.FLAVOURS}
        columns, times = [], []
        for flavour, mode in [("stock", "stock")] + [("patched", m) for m in modes]:
            blocks, secs, _ = profile_boot(arch_name, flavour, w, mode, quick, outdir, so)
            columns.append((mode, by_function(blocks, *syms[flavour])))
            times.append(f"{mode} {secs:.4f} s")
        stock, first = columns[0][1], columns[1]
        rows, totals = diff_table(stock, first[1], top)
        head = (f"{arch_name} {w.name} ({'quick' if quick else 'full'} scale); "
                "measured run, instruction-time: " + ", ".join(times))
        report.append(head + "\n\n" +
                      mechanism_table(columns, asid=arch_name == "arm64") + "\n\n"
                      f"functions whose instructions differ most, stock against "
                      f"patched '{first[0]}':\n" +
                      format_table(rows, totals, "stock", first[0]) + "\n\n"
                      f"functions with the most instructions in patched "
                      f"'{first[0]}', boot included:\n" + most_table(columns, top))
    text = "\n\n".join(report) + "\n"
    (outdir / "profile.txt").write_text(text)
    print(text)
    say(f"profile done in {t}: {outdir / 'profile.txt'}")
    return 0
