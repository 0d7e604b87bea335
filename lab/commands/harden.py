# SPDX-License-Identifier: GPL-2.0-only
"""Harden: the whole series under abuse, on the debug variant.

For each arch, on the patched kernel of a variant (debug by default:
KASAN, PROVE_LOCKING, DEBUG_VM, DEBUG_VM_PGTABLE, PAGE_TABLE_CHECK) with
every switch on at boot:
  1. the whole guest suite (own tests and upstream selftests), unless
     suite=False (the short form, which CI runs after 'lab test' has run
     the suite on the default variant);
  2. guest/harden.sh for a bounded time: stress-ng's memory stressors and
     trinity (vm system calls only) in a memory cgroup with swap, the
     stamp data-integrity check, and random switch flips throughout.
A boot fails on any kernel report (results.REPORTS: oops, BUG, WARNING,
KASAN, lockdep, Bad rss-counter, page-table-check, ...), on a
data-integrity mismatch (stress-ng --verify or stamp), and on any load
that did not run (no operations counted).
"""

import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from ..core import config, deps
from ..core.tally import Tally
from ..core.util import LabError, Timer, say
from ..guest import image, memstate, results, run, suites
from ..guest.testboot import boot_and_parse, boot_problems
from ..guest.verdicts import judge
from ..kernel import build, source

LINE_RE = re.compile(r"^(HARDEN-[A-Z]+)\s*(.*)$")


@dataclass
class Load:
    """What one harden.sh boot reported."""
    rounds: int = 0
    seconds: float = 0.0
    done: bool = False
    stress: Counter = field(default_factory=Counter)   # stressor -> bogo ops
    trinity: int = 0
    trinity_rounds: int = 0
    stamp_passes: int = 0
    stamp_checks: int = 0
    stamp_mismatches: int = 0
    stamp_rounds: int = 0
    shm_passes: int = 0
    shm_locks: int = 0
    shm_mismatches: int = 0
    shm_rounds: int = 0
    flip_writes: int = 0
    flip_changes: int = 0
    fails: list = field(default_factory=list)

    def summary(self):
        ops = ", ".join(f"{k} {v}" for k, v in sorted(self.stress.items()))
        return (f"{self.seconds / 60:.1f} min of load in {self.rounds} rounds; "
                f"stress-ng {sum(self.stress.values())} bogo ops ({ops}); "
                f"trinity {self.trinity} system calls; stamp {self.stamp_passes} "
                f"passes, {self.stamp_checks} page checks, {self.stamp_mismatches} "
                f"mismatches; shmlock {self.shm_passes} passes, {self.shm_locks} "
                f"SHM_LOCK/UNLOCK pairs, {self.shm_mismatches} mismatches; "
                f"{self.flip_writes} switch writes "
                f"({self.flip_changes} changed a value)")


def parse_load(text):
    """Fold the HARDEN-* lines of a console into a Load."""
    ld = Load()
    for line in text.splitlines():
        m = LINE_RE.match(line.strip())
        if not m:
            continue
        key, rest = m.group(1), m.group(2).split()
        if key == "HARDEN-ROUND":
            ld.rounds += 1
        elif key == "HARDEN-STRESS" and len(rest) == 2:
            ld.stress[rest[0]] += int(rest[1])
        elif key == "HARDEN-TRINITY" and rest:
            ld.trinity += int(rest[0])
            ld.trinity_rounds += 1
        elif key == "HARDEN-STAMP" and len(rest) == 3:
            ld.stamp_passes += int(rest[0])
            ld.stamp_checks += int(rest[1])
            ld.stamp_mismatches += int(rest[2])
            ld.stamp_rounds += 1
        elif key == "HARDEN-SHMLOCK" and len(rest) == 3:
            ld.shm_passes += int(rest[0])
            ld.shm_locks += int(rest[1])
            ld.shm_mismatches += int(rest[2])
            ld.shm_rounds += 1
        elif key == "HARDEN-FLIPS" and len(rest) == 2:
            ld.flip_writes += int(rest[0])
            ld.flip_changes += int(rest[1])
        elif key == "HARDEN-FAIL":
            ld.fails.append(" ".join(rest))
        elif key == "HARDEN-DONE":
            ld.done = True
            kv = dict(x.split("=", 1) for x in rest if "=" in x)
            ld.seconds = float(kv.get("seconds", 0))
    return ld


def verdicts(ld, want_seconds):
    """(status, what, detail) rows for a Load."""
    rows = []

    def row(ok, what, detail):
        rows.append(("pass" if ok else "fail", what, detail))

    row(ld.done and ld.seconds >= 0.9 * want_seconds, "load-time",
        f"{ld.seconds:.0f} s of {want_seconds} s" if ld.done else "harden.sh never finished")
    stress_fails = [f for f in ld.fails if f.startswith("stress-ng")]
    row(sum(ld.stress.values()) > 0 and not stress_fails, "stress-ng",
        "; ".join(stress_fails) or f"{sum(ld.stress.values())} bogo ops")
    trin_fails = [f for f in ld.fails if f.startswith("trinity")]
    row(ld.trinity > 0 and not trin_fails and ld.trinity_rounds == ld.rounds, "trinity",
        "; ".join(trin_fails) or f"{ld.trinity} system calls")
    stamp_fails = [f for f in ld.fails if f.startswith("stamp")]
    row(ld.stamp_passes > 0 and ld.stamp_mismatches == 0 and not stamp_fails
        and ld.stamp_rounds == ld.rounds, "data-integrity",
        "; ".join(stamp_fails) or f"{ld.stamp_mismatches} mismatches in "
        f"{ld.stamp_checks} page checks")
    shm_fails = [f for f in ld.fails if f.startswith("shmlock")]
    row(ld.shm_passes > 0 and ld.shm_locks > 0 and ld.shm_mismatches == 0
        and not shm_fails and ld.shm_rounds == ld.rounds, "shm-lock",
        "; ".join(shm_fails) or f"{ld.shm_locks} SHM_LOCK/UNLOCK pairs, "
        f"{ld.shm_mismatches} mismatches in {ld.shm_passes} passes")
    flip_fails = [f for f in ld.fails if f.startswith("switch")]
    row(ld.flip_changes > 0 and not flip_fails, "switch-flips",
        "; ".join(flip_fails) or f"{ld.flip_writes} writes, {ld.flip_changes} changes")
    other = [f for f in ld.fails if not f.startswith(("stress-ng", "trinity", "stamp",
                                                      "shmlock", "switch"))]
    if other:
        row(False, "setup", "; ".join(other))
    return rows


def run_suite(tally, arch_name, variant):
    """The test plan on the patched kernel, and on stock with the same plan,
    judged as 'lab test' judges its main boots (guest/verdicts.judge():
    declared skips, a fixture variant counted where the other kernel ran
    it, a leaf stock passes and patched lacks fails, an upstream failure
    excused only when stock failed it the same way in this run); there is
    no re-run here, so a leaf judge() would have 'lab test' re-run fails."""
    plan = suites.test_plan(arch_name, variant=variant)
    prefix = f"{arch_name}/{variant}/harden-suite"
    per, texts = {}, {}
    for flavour, suffix in (("patched", ""), ("stock", "-stock")):
        b = boot_and_parse(arch_name, flavour, variant, plan,
                           "harden-suite", timeout=6 * 3600)
        for what, detail in boot_problems(b):
            tally.add("fail", f"{prefix}{suffix}/{what}", detail)
        texts[flavour] = b.text()
        per[flavour] = results.parse(texts[flavour])
    for status, name, detail, _ in judge(arch_name, variant, per, plan):
        tally.add(*suite_row(arch_name, variant, status, name, detail))
    for row in memstate.judge(prefix, texts["stock"], texts["patched"]):
        tally.add(*row)


def suite_row(arch_name, variant, status, name, detail):
    """(status, name, detail) of a judge() row of the harden suite: named
    under harden-suite (patched) or harden-suite-stock, and a 'regress' a
    failure."""
    for flavour, boot in (("patched", "harden-suite"), ("stock", "harden-suite-stock")):
        head = f"{arch_name}/{variant}/{flavour}/"
        if name.startswith(head):
            name = f"{arch_name}/{variant}/{boot}/{name[len(head):]}"
    if status == "regress":
        return "fail", name, f"{detail} (no re-run in lab harden)"
    return status, name, detail


def run_load(tally, arch_name, variant, seconds, round_s):
    prefix = f"{arch_name}/{variant}/harden"
    kernel = build.image_path(arch_name, variant, "patched")
    # the load length in the name: the short form must not overwrite the
    # console of a long run
    name = f"{arch_name}-{variant}-patched-harden-{seconds}s"
    plan = f". /lab/lib.sh\n/lab/harden.sh {seconds} {round_s}\n"
    env = {"LAB_ARCH": arch_name, "LAB_FLAVOUR": "patched", "LAB_VARIANT": variant}

    def echo(line):
        if line.startswith(("HARDEN-ROUND", "HARDEN-FAIL", "HARDEN-DONE", "LAB-")):
            print(f"  [{name}] {line}", flush=True)

    say(f"booting {name}: {seconds} s of load in rounds of {round_s} s")
    b = run.boot(run.BootSpec(arch=arch_name, kernel=kernel, plan=plan, env=env, name=name,
                              mem_mb=2048, cpus=2, timeout=2 * seconds + 1800,
                              swap_mb=2048, xfs_mb=2048), echo=echo)
    say(f"{name}: exit {b.exit_code}, {b.wall:.0f}s wall, console {b.console}")
    for what, detail in boot_problems(b):
        tally.add("fail", f"{prefix}/{what}", detail)
    ld = parse_load(b.text())
    reports = results.kernel_reports(b.text())
    for status, what, detail in verdicts(ld, seconds):
        tally.add(status, f"{prefix}/{what}", detail)
    say(f"{prefix}: {ld.summary()}; {len(reports)} kernel reports")
    return {"arch": arch_name, "variant": variant, "console": str(b.console),
            "wall_s": round(b.wall), "load": {
                "seconds": ld.seconds, "rounds": ld.rounds,
                "stress_bogo_ops": dict(ld.stress), "trinity_syscalls": ld.trinity,
                "stamp": [ld.stamp_passes, ld.stamp_checks, ld.stamp_mismatches],
                "shmlock": [ld.shm_passes, ld.shm_locks, ld.shm_mismatches],
                "switch_writes": ld.flip_writes, "switch_changes": ld.flip_changes,
                "fails": ld.fails}, "kernel_reports": reports}


def harden_arch(tally, arch_name, variant="debug", seconds=1800, round_s=300,
                suite=True):
    """Build, then the suite (optional) and the load; rows go to tally."""
    t = Timer()
    build.build(arch_name, variant, "patched")
    if suite:
        build.build(arch_name, variant, "stock")
    image.build(arch_name)
    if suite:
        run_suite(tally, arch_name, variant)
    rec = run_load(tally, arch_name, variant, seconds, round_s)
    say(f"{arch_name}/{variant}: harden done in {t}")
    return rec


def short_kernels(arches):
    """The kernels short_form() boots, as (arch, variant, flavour)."""
    return [(a, suites.SHORT_VARIANT, "patched") for a in arches
            if a in suites.SHORT_ARCHES]


def short_form(tally, arches):
    """What 'lab test' runs last: the load alone, for suites.SHORT_MINUTES,
    on the patched suites.SHORT_VARIANT kernel of the arches in
    suites.SHORT_ARCHES."""
    for arch_name, variant, _ in short_kernels(arches):
        try:
            harden_arch(tally, arch_name, variant, int(suites.SHORT_MINUTES * 60),
                        suites.SHORT_ROUND, suite=False)
        except LabError as e:
            tally.add("fail", f"{arch_name}/{variant}/harden/lab", str(e).splitlines()[0])
            print(str(e), file=sys.stderr)


def main(arches, variant="debug", minutes=30.0, round_s=300, suite=True):
    tally = Tally()
    deps.check()
    source.apply()
    seconds = int(minutes * 60)
    recs = [harden_arch(tally, a, variant, seconds, min(round_s, seconds), suite)
            for a in arches]
    out = config.WORK / "results" / f"harden-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs": recs, "rows": tally.rows}, indent=1))
    return tally.finish(out)
