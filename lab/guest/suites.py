# SPDX-License-Identifier: GPL-2.0-only
"""Suites: what runs in the guest, as plans (shell scripts using /lab/lib.sh).

Own tests are every guest/tests/*.c program.  Upstream tests are the
tools/testing/selftests/mm programs in image.SELFTESTS, with bounded
arguments.  A test boot runs both in one go; a second, short boot of the
patched kernel checks the foliobatch= boot parameter.
"""

import re

from ..core import config
from . import image

# Own test program -> timeout in seconds (default 600).
OWN_TIMEOUTS = {"reclaim_batch": 2400, "reclaim_tlb": 1800, "anon_unmap_batch": 1200}

# Upstream selftest -> (timeout in seconds, arguments)
SELFTEST_ARGS = {
    "mremap_test": (900, []),
    "mremap_dontunmap": (300, []),
    "cow": (1800, []),
    "khugepaged": (1200, []),
    # arm64 under TCG, guest seconds: 384 on stock and 435 on patched
    # alone, 488 to 602 beside a kernel build; x86_64 142 to 211
    "split_huge_page_test": (1200, ["/mnt/xfs"]),
    "transhuge-stress": (120, ["-d", "10", "256"]),   # 10 s over 256 MiB
    "uffd-unit-tests": (900, []),
    "madv_populate": (300, []),
    "mkdirty": (300, []),
    "soft-dirty": (300, []),
}

# The short form of 'lab harden' (harden.short_form), what 'lab test' (and so
# CI) runs after the suites: minutes of load and seconds per round ...
SHORT_MINUTES = 2.0
SHORT_ROUND = 60
# ... on which arches, and on which kernel: the debug kernel without split
# PTE locks (configs/nosplit.config), which 'lab test' also boots with the
# tests that take a PMD lock and a PTE lock together (NOSPLIT_TESTS).  A cold
# CI run must stay under 60 minutes; the debug kernels are the largest builds
# (about 7 min x86_64, 6 min arm64 on 2 cores), and four default kernels and
# their test boots already take about 45.  arm64 carries most of the series'
# arch code (contpte young batching, the TLB-batch range), so it is the one
# CI hardens; the long form ('lab harden') runs both, on the debug kernel
# with split PTE locks (and so with separately allocated ones: lockdep makes
# spinlock_t too large to embed).
SHORT_ARCHES = ("arm64",)
SHORT_VARIANT = "nosplit"

# What the nosplit boot runs: the own tests where a PTE page vanishes under
# code that holds or compares its lock with the PMD lock, and the own tests
# that need the debug config's NUMA balancing, arm64's MTE
# (configs/arm64-debug.config, booted with mte=on) or the debug config's
# CONFIG_DEBUG_VM checks on arm64 (the break-before-make check of contpte
# blocks), and anon_unmap_batch's data and race tests, whose swap-out the
# debug config's CONFIG_DEBUG_VM checks (rmap, swap counts, anon-exclusive)
# (program -> test names as -t takes them: the test's own name,
# without fixture or variant, which runs all its variants), and
# the upstream programs that collapse and move page tables
# (program -> the word its cases must have in their names, or None for the
# whole program): khugepaged, and uffd-unit-tests' UFFDIO_MOVE cases, whose
# move_pages_pte() holds both locks (the other cases take 4 minutes more
# on this KASAN kernel under TCG).
NOSPLIT_TESTS = {"pt_reclaim": ("race", "uffd_move_race", "uffd_move_race_thp",
                                "collapse_race", "collapse_uffd_race"),
                 "mprotect_batch": ("numa_hinting", "tags_on_every_pte",
                                    "halves_then_whole",
                                    "half_back_then_whole"),
                 "anon_unmap_batch": ("pageout_data", "fork_then_reclaim",
                                      "many_sharers", "race_writes",
                                      "race_dontneed", "race_pin")}
NOSPLIT_UPSTREAM = {"khugepaged": None, "uffd-unit-tests": "move"}

# arm64 CPUs without FEAT_TLBIRANGE (Cortex-A72, Neoverse-N1) flush a range
# of more than MAX_DVM_OPS pages with flush_tlb_mm(): the young flush and
# the deferred unmap of a PTE-mapped large folio take that path there.  The
# own reclaim suites run once more on the patched kernel with this CPU.
NO_RANGE_TLBI = {"arm64": ("cortex-a72", ("reclaim_batch", "reclaim_tlb"))}

# CPU features the series' paths depend on, as the kernel names them on its
# console ("CPU features: detected: ..."): every patched test boot on the
# default CPU must have them, or the arm64 range flushes and MGLRU's page
# table walk (arch_has_hw_pte_young()) go untested; the NO_RANGE_TLBI boot
# must not have the first.
CPU_FEATURES = {"arm64": ("TLB range maintenance instructions",
                          "Hardware dirty bit management")}

# Boot parameter exercised by the switches test on the patched kernel: two
# switches off, an unknown name and a bad value that must be ignored.
BOOT_PARAM = "foliobatch=pt_reclaim=0,unmap_batch=0,no_such_switch=1,mremap_batch=2"


def _kstrtobool(text):
    """1 or 0 for what the kernel's kstrtobool() (6.12) accepts: it reads
    the first character, or the first two after an 'o'; None otherwise."""
    if text[:1] in ("y", "Y", "t", "T", "1"):
        return 1
    if text[:1] in ("n", "N", "f", "F", "0"):
        return 0
    if text[:1] in ("o", "O") and text[1:2] in ("n", "N", "f", "F"):
        return 1 if text[1:2] in ("n", "N") else 0
    return None


def expected_switches(cmdline, arch_name):
    """What each switch reads after a boot with kernel command line
    cmdline, as "name=0|1,..." in config.SWITCHES order: the value the
    switches test (guest/tests/switches.c boot_values) checks, passed to it
    in LAB_EXPECT_SWITCHES.

    Every switch starts at its default on arch_name
    (config.SWITCH_DEFAULTS).  Each foliobatch= argument
    before "--" applies in order, its comma-separated items
    "<name>=<bool>" ("all" names every switch) too, so the last one wins;
    an item without '=', with an unknown name or with a value kstrtobool()
    rejects is ignored, as the kernel ignores it.  Double quotes are
    dropped, as the kernel's argument parser drops them."""
    value = dict(config.SWITCH_DEFAULTS[arch_name])
    for arg in cmdline.replace('"', "").split():
        if arg == "--":
            break
        if not arg.startswith("foliobatch="):
            continue
        for item in arg[len("foliobatch="):].split(","):
            name, eq, text = item.partition("=")
            on = _kstrtobool(text) if eq else None
            if on is None:
                continue
            for sw in value:
                if name in ("all", sw):
                    value[sw] = on
    return ",".join(f"{sw}={v}" for sw, v in value.items())


# Huge pages reserved for the upstream tests that cover hugetlb where pages
# exist, per size the kernel has (lab_hugepages in guest/lib.sh): cow maps
# two pages of each size, and uffd-unit-tests' hugetlb cases map 32 MB as
# source and 32 MB as destination (UFFDIO_TEST_MEM_SIZE) of the default
# size: 32 pages of 2 MB, and the rest for cow.  arm64 also has 64 kB
# (contiguous PTEs) and 32 MB (contiguous PMDs).  32 MB is gigantic, above
# MAX_PAGE_ORDER: the lab kernels, without CONTIG_ALLOC, cannot allocate it
# at run time, so the test boots reserve it on the kernel command line
# (GIGANTIC), and the prologue only checks the count.  1 GB pages would
# take half the guest: cow's cases of them are declared skips (skips.tsv).
# A reservation that falls short is a setup failure of the boot
# (testboot.boot_problems() reads the plan's "could not" lines).
HUGEPAGES = {2048: 48, 64: 8, 32768: 2}
GIGANTIC = {"arm64": "hugepagesz=32M hugepages=2"}


def boot_append(arch_name, append=""):
    """The kernel command line of a test boot: append, and the gigantic
    huge pages the arch's test boots reserve (GIGANTIC)."""
    return " ".join(a for a in (append, GIGANTIC.get(arch_name, "")) if a)


PROLOGUE = ". /lab/lib.sh\n" + "".join(
    f"lab_hugepages {kb} {n}\n" for kb, n in HUGEPAGES.items())


def _expect_line(cmdline):
    """The plan lines that export LAB_EXPECT_SWITCHES for the guest's arch
    (uname -m); on another arch the variable stays unset and the switches
    test fails."""
    lines = ['case "$(uname -m)" in']
    for uname, arch_name in config.UNAME_ARCH.items():
        lines.append(f"{uname}) export LAB_EXPECT_SWITCHES="
                     f"{expected_switches(cmdline, arch_name)} ;;")
    return "\n".join(lines + ["esac"]) + "\n"


# Every plan tells the switches test what the switches read at boot: their
# defaults, for a boot without foliobatch= (boot_param_plan() puts its own).
PROLOGUE += _expect_line("")


def own_tests():
    return sorted(p.stem for p in (config.GUEST / "tests").glob("*.c"))


def is_upstream(program):
    return program in SELFTEST_ARGS


def stock_only(leaf):
    """Whether a leaf ("program/name") is one of the own tests' cases that
    run on the stock kernel only and SKIP on patched by design: a fixture
    variant named stock or stock_* (kselftest_harness names a case
    fixture.variant.test), or a test named stock_*."""
    program, _, name = leaf.partition("/")
    if is_upstream(program):
        return False
    return any(part == "stock" or part.startswith("stock_") for part in name.split("."))


# Every upstream program runs without address space randomisation
# (guest/lib.sh lab_no_aslr).  Several map at the fixed hint 1 GB without
# MAP_FIXED (khugepaged's BASE_ADDR, uffd-common's BASE_PMD_ADDR,
# split_huge_page_test's PTE-mapped case) or with MAP_FIXED_NOREPLACE
# (mremap_test's areas and the 40 MB preamble below them), and fail when
# the hint is taken: arm64 puts a static binary's heap anywhere up to 1 GB
# above it (arch_randomize_brk()), so now and then over the hint.  Seen:
# khugepaged's "Failed to allocate VMA at 0x40000000" (2026-11-26),
# mremap_test's "Failed to map dest preamble region: File exists"
# (2026-11-27), split_huge_page_test's "No THP is allocated" after its
# first case (a cold run of 3ec0724: its 8 MB at the hint came back
# elsewhere, not 2 MB aligned).  A list of the programs that need it
# missed the third; none of them tests randomisation, so all go without.

# Upstream programs whose cases run one at a time (guest/lib.sh
# lab_run_cases): each case is a leaf, and a case in which the program exits
# does not stop the cases after it.  program -> seconds per case.
CASE_PROGRAMS = {"uffd-unit-tests": 300}


def plan_programs(plan):
    """The programs a plan runs, in order: the name on each lab_run and
    lab_run_cases line (after a lab_no_aslr)."""
    lines = (l.removeprefix("lab_no_aslr ") for l in plan.splitlines())
    return [l.split()[1] for l in lines if l.startswith(("lab_run ", "lab_run_cases "))]


def _lines(entries):
    body = [f"lab_plan {len(entries)}"]
    for name, timeout, argv in entries:
        pre = "lab_no_aslr " if is_upstream(name) else ""
        if name in CASE_PROGRAMS:
            body.append(f"{pre}lab_run_cases {name} {CASE_PROGRAMS[name]} {' '.join(argv)}")
        else:
            body.append(f"{pre}lab_run {name} {timeout} {' '.join(argv)}")
    return PROLOGUE + "\n".join(body) + "\n"


# Timeouts above are for the default variant.  KASAN, lockdep and
# PAGE_TABLE_CHECK make the debug variant several times slower under TCG
# (split_huge_page_test took over 600 s on it), so its timeouts are scaled.
TIMEOUT_SCALE = {"default": 1, "debug": 4, "nosplit": 4, "debian": 2}


def _upstream_entry(prog, scale, extra=()):
    """A plan entry for an upstream selftest: its scaled timeout and its
    arguments (SELFTEST_ARGS), then extra."""
    timeout, args = SELFTEST_ARGS[prog]
    return (prog, scale * timeout, [f"/lab/selftests/mm/{prog}"] + args + list(extra))


# Tests of the own programs that a plan leaves out with the harness's -T
# (a test's own name: all its fixture variants), why, and the SKIP message
# (a glob) the test prints where it is left out.  ARCH_LEFT_OUT: tests of a
# mechanism the arch does not have in 6.12, which could only skip there.
# BOOT_LEFT_OUT: tests a boot cannot run that another boot of the same
# 'lab test' runs ("tests": the main test boots of both kernels, where the
# numa boot runs what needs two nodes; "cortex-a72": the NO_RANGE_TLBI
# boot, where the main boots run what needs the hardware access flag).
# 'lab test' prints both tables with its summary, and each boot whose plan
# leaves tests out runs them once more on their own, as the program
# "<program>.left-out" (left_out_probes()): each must skip there with its
# message (lab/guest/leftout.py), so that no entry can hide a test the arch
# or boot can run.
ARCH_LEFT_OUT = {
    "x86_64": {
        "mprotect_batch": [(("contpte_unfolds", "halves_then_whole", "half_back_then_whole"),
                            "x86_64 has no contiguous PTEs: nothing to unfold or fold",
                            "* has no contiguous PTEs: nothing to *fold*"),
                           (("tags_on_every_pte",), "MTE is arm64's", "MTE is arm64's")],
        "mremap_batch": [(("contpte_unfolds",),
                          "x86_64 has no contiguous PTEs: move_ptes() never batches there",
                          "* has no contiguous PTEs: move_ptes() never batches there*")],
        "read_batch": [(("contpte_reads", "mincore_visits", "smaps_and_mlock",
                         "mincore_vector", "mincore_swapped", "fold_race",
                         "mincore_migrating"),
                        "x86_64 has no contiguous PTEs: no contpte_ptep_get(), and "
                        "contpte_early_exit and mincore_batch are not built there",
                        "no contiguous PTEs on this arch: *")],
        "reclaim_batch": [(("mglru_look_around_calls",),
                           "x86_64 has no contiguous PTEs: the look-around's batch and "
                           "single PTEs make the same calls",
                           "x86: no count with a margin tells the look-around's batch "
                           "from single PTEs*")],
    },
    "arm64": {
        "mprotect_batch": [(("soft_dirty",), "arm64 has no soft-dirty PTE bit in 6.12",
                            "* has no soft-dirty bit in 6.12"),
                           (("key_on_every_pte",),
                            "arm64's protection keys (CONFIG_ARM64_POE, 6.12, built "
                            "here as in Debian's config) need FEAT_S1POE, which QEMU "
                            "7.2's -cpu max does not have",
                            "pkey_alloc: *: no protection keys here")],
        "mremap_batch": [(("soft_dirty_survives",),
                          "arm64 has no soft-dirty PTE bit in 6.12",
                          "no soft-dirty on * in 6.12")],
        "anon_unmap_batch": [(("soft_dirty_kept",),
                              "arm64 has no soft-dirty PTE bit in 6.12",
                              "no soft-dirty on * in 6.12")],
    },
}
BOOT_LEFT_OUT = {
    "tests": {"read_batch": [(("mbind_move", "mbind_strict", "mincore_migrating"),
                              "needs two NUMA nodes: the numa boot runs it",
                              "one NUMA node: *")]},
    "cortex-a72": {"reclaim_batch": [(("mglru_walk_calls",),
                                      "Cortex-A72 has no hardware access flag, without "
                                      "which MGLRU does not walk page tables: the main "
                                      "boots run it",
                                      "no hardware access flag on this CPU: *")]},
}
# The name of the program that runs what a plan left out of program prog.
PROBE_SUFFIX = ".left-out"


def _left_out_tables(arch_name, boot):
    return (ARCH_LEFT_OUT.get(arch_name, {}), BOOT_LEFT_OUT.get(boot, {}))


def left_out(arch_name, prog, boot="tests"):
    """The test names of own program prog that arch_name's plans for boot
    leave out (ARCH_LEFT_OUT, BOOT_LEFT_OUT: {arch or boot: {program:
    [(test names, why, skip message)]}}), each once: a test may be in both
    tables (an arch-only test that needs a boot of its own)."""
    return tuple(dict.fromkeys(n for table in _left_out_tables(arch_name, boot)
                               for names, _, _ in table.get(prog, ()) for n in names))


def left_out_lines(arch_name, boot="tests"):
    """One line per program and reason of what arch_name's plans for boot
    leave out, for the run's summary."""
    return [f"{prog}: {', '.join(names)} ({why})"
            for table in _left_out_tables(arch_name, boot)
            for prog, entries in sorted(table.items()) for names, why, _ in entries]


def left_out_probes(arch_name, boot="tests"):
    """{program: {test name: (why, skip message glob)}} of what the boot's
    probes run: on the main test boots ("tests") what ARCH_LEFT_OUT and
    BOOT_LEFT_OUT["tests"] leave out, on another boot what its own
    BOOT_LEFT_OUT entry does (the main boots probe the arch's)."""
    tables = _left_out_tables(arch_name, boot) if boot == "tests" else \
        (BOOT_LEFT_OUT.get(boot, {}),)
    probes = {}
    for table in tables:
        for prog, entries in table.items():
            for names, why, skip in entries:
                probes.setdefault(prog, {}).update((n, (why, skip)) for n in names)
    return probes


def _own_entry(arch_name, prog, scale, boot="tests"):
    return (prog, scale * OWN_TIMEOUTS.get(prog, 600),
            [f"/lab/tests/{prog}"] + [a for n in left_out(arch_name, prog, boot)
                                      for a in ("-T", n)])


def _probe_entry(prog, names, scale):
    return (prog + PROBE_SUFFIX, scale * OWN_TIMEOUTS.get(prog, 600),
            [f"/lab/tests/{prog}"] + [a for n in sorted(names) for a in ("-t", n)])


def base_program(program):
    """The own program a probe program ("<program>.left-out") runs; any
    other program's own name."""
    return program.removesuffix(PROBE_SUFFIX)


def test_plan(arch_name, own=True, upstream=True, only=None, variant="default",
              boot="tests", probes=True):
    """The plan of a test boot of arch_name: every own program (less what
    left_out() names for boot), the probes of what that leaves out
    (left_out_probes(); not with probes False) and the arch's upstream
    selftests; only, a set of program names, keeps those (and their
    probes)."""
    scale = TIMEOUT_SCALE[variant]
    entries = []
    if own:
        for t in own_tests():
            entries.append(_own_entry(arch_name, t, scale, boot))
        for t, names in sorted(left_out_probes(arch_name, boot).items()
                               if probes else ()):
            entries.append(_probe_entry(t, names, scale))
    if upstream:
        entries += [_upstream_entry(t, scale) for t in image.selftests_for(arch_name)]
    if only:
        entries = [e for e in entries if base_program(e[0]) in only]
    return _lines(entries)


# The own tests that race two threads against each other (a PTE table freed
# or moved under a walker, a write lost under reclaim): 'lab test' runs them
# once more in a boot with one host thread per vCPU (RACE_ACCEL of
# lab/commands/test.py).
# program -> its kselftest_harness test names (run with -t NAME).
RACE_TESTS = {
    "pt_reclaim": ("race", "uffd_move_race", "uffd_move_race_thp", "collapse_race"),
    "reclaim_tlb": ("no_lost_write_anon", "no_lost_write_file", "pt_race_under_reclaim"),
    "read_batch": ("fold_race",),
    "anon_unmap_batch": ("race_writes", "race_fork", "race_dontneed", "race_pin"),
}

# The tests that need two NUMA nodes, run by a boot of the patched kernel
# with two (NUMA_QEMU: 1 GB and one vCPU each): mbind_batch's move test,
# and mkdirty, whose migration case mbind()s to a second node.  Each vCPU
# is a socket of its own (the later -smp wins over run.qemu_cmd's): two
# cores of one socket share a last-level cache, and x86 warns at boot when
# such siblings sit on different nodes.
NUMA_TESTS = {"read_batch": ("mbind_move", "mbind_strict", "mincore_migrating")}
NUMA_UPSTREAM = {"mkdirty": None}
NUMA_QEMU = ("-smp", "2,sockets=2,cores=1,threads=1",
             "-object", "memory-backend-ram,id=lab-m0,size=1024M",
             "-object", "memory-backend-ram,id=lab-m1,size=1024M",
             "-numa", "node,nodeid=0,cpus=0,memdev=lab-m0",
             "-numa", "node,nodeid=1,cpus=1,memdev=lab-m1")


def race_plan(races, variant="default", upstream=None, arch_name=None):
    """A plan that runs the named tests of each own program ({program:
    names}; on arch_name, less the ones ARCH_LEFT_OUT names, and a program
    none is left of is not run) and then the upstream programs of upstream
    ({program: the word its cases must have in their names, or None}; a
    word only for CASE_PROGRAMS).  None when that leaves nothing to run:
    a boot of an empty plan would prove nothing, and fails for want of a
    result."""
    scale = TIMEOUT_SCALE[variant]
    entries = []
    for prog, names in sorted(races.items()):
        gone = left_out(arch_name, prog, boot=None)
        names = [n for n in names if n not in gone]
        if names:
            entries.append((prog, scale * OWN_TIMEOUTS.get(prog, 600),
                            [f"/lab/tests/{prog}"] + [a for n in names for a in ("-t", n)]))
    for prog, word in (upstream or {}).items():
        if word and prog not in CASE_PROGRAMS:
            raise ValueError(f"{prog} does not run case by case")
        entries.append(_upstream_entry(prog, scale, [word] if word else []))
    return _lines(entries) if entries else None


def boot_param_plan():
    """The plan of the boot with BOOT_PARAM on the command line: the
    switches test, told what BOOT_PARAM must have set (in place of the
    prologue's defaults)."""
    plan = _lines([("switches", 120, ["/lab/tests/switches"])])
    return plan.replace(_expect_line(""), _expect_line(BOOT_PARAM), 1)
