# SPDX-License-Identifier: GPL-2.0-only
"""The test command: host unit tests, then the guest suites on each arch.

For every arch: build the stock and patched kernels, build the guest image,
boot each kernel with the test plan, and boot the patched kernel once more
with a foliobatch= boot parameter and, where suites.NO_RANGE_TLBI names a
CPU without range TLB invalidation, once more on that CPU for the reclaim
suites.  The stock boot is reused from the
cache (cache.py) when the stock image, the guest image, the plan and the
boot arguments are those of a stored one.  (testrun.py then
adds the short form of 'lab harden' to the same tally; see
harden.short_form.)
Verdicts:
  - own tests must pass on both kernels;
  - an upstream selftest leaf that fails on patched but passes on stock is
    a failure; one that fails on stock as well is reported, not counted;
  - a boot that does not reach the plan, does not finish, or whose console
    shows a kernel report (oops, BUG, WARNING, KASAN, lockdep, ...) fails;
  - a patched program that leaves more memory, page tables or swap behind
    than the same program on stock, beyond the stock boot's tolerance,
    fails (memstate.py).
The last line is 'N passed, N failed' (Tally.finish); the exit status is 1 on
any failure.
"""

import re
import subprocess
import sys
import threading
import time
import traceback
import xml.etree.ElementTree as ET
from collections import Counter

from ..core import config, deps
from ..core.util import LabError, Timer, say
from ..guest import cache, image, leftout, memstate, results, run, skips, suites
from ..guest.testboot import boot_and_parse, boot_problems
from ..guest.verdicts import judge
from ..kernel import build, source
from . import here


def run_pytest(tally):
    xml = config.WORK / "results" / "pytest.xml"
    xml.parent.mkdir(parents=True, exist_ok=True)
    xml.unlink(missing_ok=True)
    say("host unit tests (pytest)")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={xml}", str(config.REPO / "tests")],
                       cwd=config.REPO, capture_output=True, text=True)
    tally_pytest(tally, p.returncode, xml, p.stdout + p.stderr)


def tally_pytest(tally, returncode, xml, output):
    """Rows of one pytest run: one per test case of its JUnit XML, and a
    failed row host/pytest when it ran no test case (exit 5: none collected;
    or no report), ended other than by passing or failing tests (exit 2
    interrupted, 3 internal error, 4 usage error), or said it failed (exit
    1) with no failed case in its report."""
    cases = list(ET.parse(xml).getroot().iter("testcase")) if xml.exists() else []
    failed = 0
    for case in cases:
        name = f"host/{case.get('classname')}.{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            tally.add("fail", name)
        elif case.find("skipped") is not None:
            tally.add("skip", name)
        else:
            tally.add("pass", name)
    problem = None
    if not cases:
        problem = f"pytest ran no test (exit {returncode}" + \
            ("" if xml.exists() else ", no JUnit report") + ")"
    elif returncode not in (0, 1):
        problem = f"pytest exit {returncode}"
    elif returncode == 1 and not failed:
        problem = "pytest exit 1 with no failed test case in its report"
    if problem:
        print(output)
        tally.add("fail", "host/pytest", problem)


def same_way(patched, stock):
    """Whether a stock re-run's leaf (a results.Result, or None when the
    re-run lacked it) did what the patched main boot's did: lacked it too,
    skipped it too, or failed it without a failure line patched's failure
    printed and it did not (results.new_failure_lines())."""
    if patched is None or stock is None:
        return patched is None and stock is None
    if patched.status in ("skip", "xfail"):
        return stock.status == patched.status
    return (patched.status == "fail" and stock.status == "fail"
            and not results.new_failure_lines(patched, stock))


def retry_regressions(arch_name, variant, rows, patched_leaves=(), attempts=2):
    """Re-run the upstream programs that regressed, on patched and on stock
    alike, attempts times each.

    Upstream selftests can be racy under emulation.  A regressed leaf is
    FLAKY (listed, not counted) only when stock, re-run as often, did the
    same at least once (same_way() against the patched main boot's leaf in
    patched_leaves); otherwise it fails, whatever the patched re-runs did:
    fail, fail, pass on patched with stock passing is a failure.  Every leaf
    a patched re-run reports is judged as well: one that fails there and
    did not fail in the main boot fails.  A re-run boot's own problems (a
    kernel report, a timeout, no exit marker) are failed rows of their own.
    """
    regressed = {r[1].split("/patched/", 1)[1] for r in rows if r[0] == "regress"}
    progs = sorted({r[3] for r in rows if r[0] == "regress"})
    if not progs:
        return rows
    main = {r.name: r for r in patched_leaves}
    same = Counter()
    extra = []
    plan = suites.test_plan(arch_name, only=set(progs), variant=variant)
    for attempt in range(1, attempts + 1):
        for flavour in config.FLAVOURS[::-1]:
            say(f"re-running on {flavour} (attempt {attempt}): {', '.join(progs)}")
            b = boot_and_parse(arch_name, flavour, variant, plan, f"retry{attempt}",
                               **TEST_BOOT)
            prefix = f"{arch_name}/{variant}/{flavour}-retry{attempt}"
            problems = boot_problems(b)
            for what, detail in problems:
                extra.append(("fail", f"{prefix}/{what}", detail, ""))
            if problems:
                continue
            leaves = {r.name: r for r in results.parse(b.text())}
            if flavour == "stock":
                same.update(n for n in regressed if same_way(main.get(n), leaves.get(n)))
                continue
            for r in leaves.values():
                was = main.get(r.name)
                if r.status == "fail" and r.name not in regressed and \
                        (was is None or was.status != "fail"):
                    extra.append(("fail", f"{prefix}/{r.name}", "fails in the re-run, "
                                  "did not in the main boot", r.program))
    out = []
    for status, name, detail, prog in rows:
        if status == "regress":
            n = same[name.split("/patched/", 1)[1]]
            status = "flaky" if n else "fail"
            detail += (f"; stock did the same in {n} of {attempts} re-runs" if n else
                       f"; stock did not in {attempts} re-runs")
        out.append((status, name, detail, prog))
    return out + extra


# The main test boots of both flavours (the stock cache's key holds these).
#
# Test boots run their two vCPUs on one host thread (round-robin TCG), not
# one thread per vCPU (QEMU's default, MTTCG).  'lab test' boots the two
# arches side by side on a 2-core machine, and two MTTCG guests are four
# vCPU threads on two cores: every TLB invalidation broadcast to all vCPUs
# and every translation-cache flush makes all of a guest's vCPU threads meet
# in an exclusive section, which waits for a descheduled thread.  Measured
# 2026-11-24, the two patched test boots side by side: 492 s (x86_64) and
# 491 s (arm64) wall with MTTCG, 219 s and 249 s with one thread each; alone
# with MTTCG they took 224 s and 270 s.  The programs of the suites are
# functional tests; 'lab harden', which hunts races, keeps MTTCG.
TEST_ACCEL = "tcg,thread=single"
# ... and the race tests (suites.RACE_TESTS) once more in a boot of their own
# with one host thread per vCPU, where both vCPUs really run at once and a
# race window opens at any instruction, not only where the round-robin
# scheduler switches vCPUs.
RACE_ACCEL = "tcg,thread=multi"
TEST_BOOT = {"append": "", "cpus": 2, "mem_mb": 2048, "timeout": 3600,
             "accel": TEST_ACCEL}


def stock_boot(arch_name, variant, plan, use_cache=True):
    """The stock kernel's test boot: a stored one when its key matches
    (unless use_cache is False), otherwise a fresh boot, which is stored
    when the boot itself did not fail."""
    name = f"{arch_name}-{variant}-stock"
    qemu_args = dict(mem_mb=TEST_BOOT["mem_mb"], cpus=TEST_BOOT["cpus"],
                     append=suites.boot_append(arch_name, TEST_BOOT["append"]),
                     accel=TEST_BOOT["accel"], variant=variant)
    stored = cache.boot_key(arch_name, build.image_path(arch_name, variant, "stock"),
                            plan, qemu_args,
                            **dict(TEST_BOOT, arch=arch_name, variant=variant,
                                   flavour="stock", disks_mb=[run.XFS_MB, run.SWAP_MB]))
    if stored is None:
        raise LabError(f"{name}: no kernel or guest image to boot (build them first)")
    k, inputs = stored
    hit = cache.load(name, k) if use_cache else None
    if hit:
        hit[1].plan = plan   # the key holds the plan's hash: the stored boot ran it
    if hit and (failed_leaves(hit[1]) or boot_problems(hit[1])):
        say(f"{name}: the stored boot {hit[0]} has failed leaves or problems; not reused")
        hit = None
    if hit:
        entry, b = hit
        say(f"stock results reused from {entry} (key {k[:16]}); "
            f"console of that boot: {b.console}; memory after each program: "
            f"{memstate.save(f'{name}-tests', b.text())}")
        return b
    say(f"{name}: {'no stored boot' if use_cache else '--no-cache'} for key "
        f"{k[:16]}; booting")
    b = boot_and_parse(arch_name, "stock", variant, plan, "tests", **TEST_BOOT)
    failed = failed_leaves(b)
    if boot_problems(b):
        say(f"{name}: the boot failed; not stored")
    elif failed:
        say(f"{name}: {len(failed)} leaves failed ({failed[0]}, ...); not stored, so "
            "that a chance stock failure excuses nothing in later runs")
    else:
        say(f"{name}: results stored in {cache.store(name, k, inputs, b)}")
    return b


def failed_leaves(b):
    return [r.name for r in results.parse(b.text()) if r.status == "fail"]


# Guest images share their tools (gen_init_cpio, the Debian package cache):
# arches tested side by side build them one at a time.
_image_lock = threading.Lock()


def test_arch(tally, arch_name, variant, own, upstream, only, use_cache=True):
    t = Timer()
    for flavour in config.FLAVOURS:
        build.build(arch_name, variant, flavour)
    with _image_lock:
        image.build(arch_name)
    plan = suites.test_plan(arch_name, own=own, upstream=upstream, only=only,
                            variant=variant)
    if own:
        note_left_out(tally, arch_name, "tests", only)
    per_flavour = {}
    texts = {}
    for flavour in config.FLAVOURS:
        if flavour == "stock":
            b = stock_boot(arch_name, variant, plan, use_cache)
        else:
            b = boot_and_parse(arch_name, flavour, variant, plan, "tests", **TEST_BOOT)
        texts[flavour] = b.text()
        for what, detail in boot_problems(b):
            tally.add("fail", f"{arch_name}/{variant}/{flavour}/{what}", detail)
        if flavour == "patched" and arch_name in suites.CPU_FEATURES:
            cpu_features(tally, f"{arch_name}/{variant}/patched", b,
                         want=suites.CPU_FEATURES[arch_name])
        per_flavour[flavour] = results.parse(b.text())
        if not per_flavour[flavour]:
            tally.add("fail", f"{arch_name}/{variant}/{flavour}/results",
                      f"no test result on the console: {b.console}")
    rows = retry_regressions(arch_name, variant, judge(arch_name, variant, per_flavour, plan),
                             per_flavour["patched"])
    for status, name, detail, _ in rows:
        tally.add(status, name, detail)
    for status, name, detail in memstate.judge(f"{arch_name}/{variant}/patched",
                                               texts["stock"], texts["patched"]):
        tally.add(status, name, detail)
    if own and arch_name in suites.NO_RANGE_TLBI:
        cpu, progs = suites.NO_RANGE_TLBI[arch_name]
        progs = [p for p in progs if not only or p in only]
        if progs:
            plan = suites.test_plan(arch_name, upstream=False, only=set(progs),
                                    variant=variant, boot=cpu)
            note_left_out(tally, arch_name, cpu, progs)
            b = boot_and_parse(arch_name, "patched", variant, plan, cpu,
                               timeout=TEST_BOOT["timeout"], cpu=cpu,
                               accel=TEST_ACCEL)
            tally_boot(tally, f"{arch_name}/{variant}/patched-{cpu}", b,
                       probes=(arch_name, cpu, plan))
            if arch_name in suites.CPU_FEATURES:
                cpu_features(tally, f"{arch_name}/{variant}/patched-{cpu}", b,
                             unwanted=suites.CPU_FEATURES[arch_name][:1])
    numa = {p: ts for p, ts in suites.NUMA_TESTS.items() if not only or p in only}
    numa_up = {p: w for p, w in suites.NUMA_UPSTREAM.items()
               if upstream and (not only or p in only)}
    plan = suites.race_plan(numa if own else {}, variant, numa_up, arch_name)
    if extra_plan(tally, f"{arch_name}/{variant}/patched-numa", plan,
                  whole=(own or upstream) and not only):
        b = boot_and_parse(arch_name, "patched", variant, plan, "numa",
                           timeout=TEST_BOOT["timeout"], accel=TEST_ACCEL,
                           extra=suites.NUMA_QEMU)
        tally_boot(tally, f"{arch_name}/{variant}/patched-numa", b)
    races = {p: ts for p, ts in suites.RACE_TESTS.items() if not only or p in only}
    plan = suites.race_plan(races if own else {}, variant, arch_name=arch_name)
    if extra_plan(tally, f"{arch_name}/{variant}/patched-mttcg", plan,
                  whole=own and not only):
        b = boot_and_parse(arch_name, "patched", variant, plan, "mttcg",
                           timeout=TEST_BOOT["timeout"], accel=RACE_ACCEL)
        tally_boot(tally, f"{arch_name}/{variant}/patched-mttcg", b)
    if own and not only and arch_name in here.GUEST_ARCHES:
        here_check(tally, arch_name, variant)
    if own and (not only or "switches" in only):
        b = boot_and_parse(arch_name, "patched", variant, suites.boot_param_plan(),
                           "bootparam", append=suites.BOOT_PARAM, timeout=600,
                           accel=TEST_ACCEL)
        tally_boot(tally, f"{arch_name}/{variant}/patched-bootparam", b)
    say(f"{arch_name}/{variant}: done in {t}")


def extra_plan(tally, prefix, plan, whole):
    """Whether to boot an extra boot (numa, mttcg, nosplit) of plan
    (suites.race_plan(): None when nothing is left to run).  A run of every
    program (whole) expects each extra boot to run something: an empty plan
    there is a failed <prefix>/plan row, not a boot that silently goes; a
    run of some programs (--only) notes the boot it leaves out."""
    if plan:
        return True
    if whole:
        tally.add("fail", f"{prefix}/plan", "nothing left to run: every test of "
                  "this boot is left out (suites.ARCH_LEFT_OUT, BOOT_LEFT_OUT)")
    else:
        tally.note(f"{prefix}: not booted, none of the programs asked for runs there")
    return False


def note_left_out(tally, arch_name, boot, only=None):
    """A summary line for each program and reason of what arch_name's plans
    for boot leave out (suites.left_out_lines()), of the programs in only."""
    for line in suites.left_out_lines(arch_name, boot):
        if not only or line.split(":")[0] in only:
            tally.note(f"left out of {arch_name}'s {boot} plans: {line}")


def nosplit_check(tally, arch_name, variant=suites.SHORT_VARIANT):
    """The tests that take a PMD lock and a PTE lock together
    (suites.NOSPLIT_TESTS and NOSPLIT_UPSTREAM) on the patched kernel
    without split PTE locks; rows <arch>/<variant>/patched-nosplit/..."""
    prefix = f"{arch_name}/{variant}/patched-nosplit"

    def boot():
        build.build(arch_name, variant, "patched")
        with _image_lock:
            image.build(arch_name)
        plan = suites.race_plan(suites.NOSPLIT_TESTS, variant, suites.NOSPLIT_UPSTREAM,
                                arch_name)
        if not extra_plan(tally, prefix, plan, whole=True):
            return
        b = boot_and_parse(arch_name, "patched", variant, plan, "nosplit",
                           timeout=TEST_BOOT["timeout"], accel=RACE_ACCEL)
        tally_boot(tally, prefix, b)

    guarded(tally, f"{prefix}/lab", boot)


def here_check(tally, arch_name, variant):
    """run-here.sh in a guest of the patched kernel, as on a machine of its
    own, and the report of what it wrote (lab/commands/here.py)."""
    b = boot_and_parse(arch_name, "patched", variant, here.guest_plan(arch_name),
                       "here", timeout=1800, accel=TEST_ACCEL)
    prefix = f"{arch_name}/{variant}/patched-here"
    tally_boot(tally, prefix, b)
    dest = config.WORK / "results" / f"here-{arch_name}-{time.strftime('%Y%m%d-%H%M%S')}"
    ok, detail = here.check_guest_run(b.text(), dest)
    tally.add("pass" if ok else "fail", f"{prefix}/report", "" if ok else
              f"{detail}; console: {b.console}")


def cpu_features(tally, prefix, b, want=(), unwanted=()):
    """A row for the CPU features the kernel reported on the console of
    boot b: each of want detected, none of unwanted."""
    found = set(re.findall(r"CPU features: detected: (.+?)(?: on CPU[-\d,]+)?\s*$",
                           b.text(), re.M))
    # No such line at all is a console that says nothing, not an answer.
    bad = [] if found else ["no 'CPU features: detected' line on the console"]
    bad += [f"missing: {f}" for f in want if f not in found]
    bad += [f"detected: {f}" for f in unwanted if f in found]
    tally.add("fail" if bad else "pass", f"{prefix}/cpu-features",
              f"{'; '.join(bad)} (console: {b.console})" if bad else "")


def tally_boot(tally, prefix, b, probes=None):
    """Rows for an extra patched boot: its own problems and every leaf (a
    boot without any is a failure); probes, (arch, boot, plan) of a plan
    that leaves tests out, judges the probes of those (leftout.judge())."""
    for what, detail in boot_problems(b):
        tally.add("fail", f"{prefix}/{what}", detail)
    leaves = results.parse(b.text())
    if probes:
        arch_name, boot, plan = probes
        for row in leftout.judge(arch_name, boot, {"patched": prefix}, {"patched": leaves},
                                 suites.plan_programs(plan)):
            tally.add(*row)
    for r in leaves:
        name = f"{prefix}/{r.name}"
        if probes and leftout.is_probe(r.program):
            continue
        if r.status != "skip":
            tally.add(r.status, name, r.detail if r.status != "pass" else "")
        elif skips.other_kernel(r.detail) == "stock":
            # the extra boots run the patched kernel only; the main stock
            # boot runs the stock kernel's variants
            tally.add("variant", name, "the stock kernel's variant: the main stock boot runs it")
        else:
            status, detail = skips.account(name, r.detail)
            tally.add(status, name, detail)
    if not leaves:
        tally.add("fail", f"{prefix}/results", f"no test result on the console: {b.console}")


def guarded(tally, name, fn, *args, **kwargs):
    """fn(*args, **kwargs), with any exception (not SystemExit) as a failed
    row name; return whether it ended without one."""
    try:
        fn(*args, **kwargs)
        return True
    except LabError as e:
        tally.add("fail", name, str(e).splitlines()[0])
        print(str(e), file=sys.stderr)
    except Exception as e:
        tally.add("fail", name, f"{type(e).__name__}: {e}".splitlines()[0])
        traceback.print_exc()
    return False


def main(tally, arches, variant="default", pytest=True, own=True, upstream=True,
         only=None, use_cache=True, later=(), jobs=2):
    """Host unit tests, then the guest suites of each arch; rows go to tally.

    Every kernel the run needs (and the kernels in later, for what follows
    it) is built ahead, in order, while the kernels before it boot.  Up to
    jobs arches are tested at the same time, each in a thread of its own:
    a test boot keeps about one vCPU busy, so two guests share the two
    host cores instead of taking turns."""
    deps.check()
    source.apply()
    build.build_ahead([(a, variant, f) for a in arches for f in config.FLAVOURS]
                      + list(later))
    if pytest:
        run_pytest(tally)
    args = (variant, own, upstream, only, use_cache)
    reported = set()

    def one(arch_name):
        # guarded() turns an exception into a failed row; an exit that is
        # not an Exception (SystemExit) skips the add and is a row below
        guarded(tally, f"{arch_name}/{variant}/lab", test_arch, tally, arch_name, *args)
        reported.add(arch_name)

    if jobs <= 1 or len(arches) <= 1:
        for arch_name in arches:
            one(arch_name)
    else:
        pending = list(arches)
        while pending:
            batch, pending = pending[:jobs], pending[jobs:]
            threads = [threading.Thread(target=one, name=f"test-{a}", args=(a,))
                       for a in batch]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
    # an arch whose thread ended without a word must not pass by silence
    for arch_name in arches:
        if arch_name not in reported:
            tally.add("fail", f"{arch_name}/{variant}/lab", "the arch's tests ended "
                      "without reporting (see the traceback above)")
