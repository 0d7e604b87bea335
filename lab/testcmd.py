"""The test command: host unit tests, then the guest suites on each arch.

For every arch: build the stock and patched kernels, build the guest image,
boot each kernel with the test plan, and boot the patched kernel once more
with a foliobatch= boot parameter.  Then, unless harden=False, the short
form of 'lab harden' on the patched debug kernel of the arches in
harden.SHORT_ARCHES.  Verdicts:
  - own tests must pass on both kernels;
  - an upstream selftest leaf that fails on patched but passes on stock is
    a failure; one that fails on stock as well is reported, not counted;
  - a boot that does not reach the plan, does not finish, or whose console
    shows a kernel report (oops, BUG, WARNING, KASAN, lockdep, ...) fails.
The last line is 'N passed, N failed'; the exit status is 1 on any failure.
"""

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from . import build, config, deps, image, results, run, source, suites
from .util import LabError, Timer, say


class Tally:
    def __init__(self):
        self.rows = []          # (status, name, detail)

    def add(self, status, name, detail=""):
        self.rows.append((status, name, detail))
        tag = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP",
               "stockfail": "STOCK-FAIL", "flaky": "FLAKY"}[status]
        print(f"{tag:10} {name}{'  # ' + detail if detail else ''}", flush=True)

    def count(self, status):
        return sum(1 for r in self.rows if r[0] == status)

    def finish(self, out, timer):
        """Print the summary and the 'N passed, N failed' line; return the
        exit status (1 on any failure)."""
        fails = [r for r in self.rows if r[0] == "fail"]
        print()
        say(f"results: {out}  (total time {timer})")
        if self.count("stockfail"):
            say(f"{self.count('stockfail')} upstream selftest leaves fail on stock "
                "6.12 too (listed as STOCK-FAIL above; not counted)")
        if self.count("flaky"):
            say(f"{self.count('flaky')} upstream selftest leaves failed on patched "
                "but passed when re-run (listed as FLAKY above; not counted)")
        say(f"{self.count('skip')} skipped")
        for s, n, d in fails:
            print(f"FAILED: {n}  {d}")
        print(f"{self.count('pass')} passed, {len(fails)} failed")
        return 1 if fails else 0


def run_pytest(tally):
    xml = config.WORK / "results" / "pytest.xml"
    xml.parent.mkdir(parents=True, exist_ok=True)
    say("host unit tests (pytest)")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={xml}", str(config.REPO / "tests")],
                       cwd=config.REPO, capture_output=True, text=True)
    if not xml.exists():
        print(p.stdout + p.stderr)
        tally.add("fail", "host/pytest", "pytest did not run")
        return
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"host/{case.get('classname')}.{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            tally.add("fail", name)
        elif case.find("skipped") is not None:
            tally.add("skip", name)
        else:
            tally.add("pass", name)
    if p.returncode not in (0, 1):
        print(p.stdout + p.stderr)


def echo_progress(prefix):
    def echo(line):
        if results.TOP_RE.match(line) or line.startswith(("LAB-", "# lab: start")):
            print(f"  [{prefix}] {line}", flush=True)
    return echo


def boot_and_parse(arch_name, flavour, variant, plan, tag, append="", cpus=2,
                   mem_mb=2048, timeout=3600):
    kernel = build.image_path(arch_name, variant, flavour)
    env = {"LAB_ARCH": arch_name, "LAB_FLAVOUR": flavour, "LAB_VARIANT": variant}
    name = f"{arch_name}-{variant}-{flavour}-{tag}"
    say(f"booting {name}")
    b = run.boot(arch_name, kernel, plan, env, name, append=append, cpus=cpus,
                 mem_mb=mem_mb, timeout=timeout, echo=echo_progress(name))
    say(f"{name}: exit {b.exit_code}, {b.wall:.0f}s wall, console {b.console}")
    return b


def boot_problems(b):
    """Failures of the boot itself, as (what, detail)."""
    probs = []
    if not b.ready:
        probs.append(("boot", f"never reached the plan; console: {b.console}"))
    elif b.timed_out:
        probs.append(("completed", f"timed out; console: {b.console}"))
    elif b.exit_code is None:
        probs.append(("completed", f"no LAB-EXIT (crash?); console: {b.console}"))
    reports = results.kernel_reports(b.text())
    if reports:
        probs.append(("console", f"{len(reports)} kernel report line(s), first: "
                      f"{reports[0]}; console: {b.console}"))
    return probs


def judge(arch_name, variant, per_flavour):
    """Leaf verdicts of the main boots of one arch, as (status, name, detail,
    program); status 'regress' marks an upstream leaf that passes on stock
    and fails on patched."""
    rows = []
    stock = {r.name: r for r in per_flavour.get("stock", [])}
    for flavour, leaves in per_flavour.items():
        for r in leaves:
            name = f"{arch_name}/{variant}/{flavour}/{r.name}"
            if r.status != "fail" or not suites.is_upstream(r.program):
                rows.append((r.status, name, r.detail if r.status != "pass" else "",
                             r.program))
            elif flavour == "stock":
                rows.append(("stockfail", name, "upstream test fails on stock 6.12",
                             r.program))
            elif stock.get(r.name) and stock[r.name].status == "fail":
                rows.append(("stockfail", name, "fails on stock too", r.program))
            else:
                rows.append(("regress", name, "fails on patched, passes on stock"
                             if r.name in stock else "fails on patched; no stock result",
                             r.program))
    return rows


def retry_regressions(arch_name, variant, rows, attempts=2):
    """Re-run, on patched, the upstream programs that regressed.

    Upstream selftests can be racy under emulation (uffd-unit-tests' events
    test saw UFFDIO_COPY fail with ENOENT on stock once).  A program whose
    failing leaves pass in a re-run is reported as FLAKY, not hidden; one
    that fails in every attempt stays a failure.
    """
    progs = sorted({r[3] for r in rows if r[0] == "regress"})
    if not progs:
        return rows
    passed = set()
    for attempt in range(1, attempts + 1):
        todo = [p for p in progs if p not in passed]
        if not todo:
            break
        say(f"re-running on patched (attempt {attempt}): {', '.join(todo)}")
        plan = suites.test_plan(arch_name, only=set(todo), variant=variant)
        b = boot_and_parse(arch_name, "patched", variant, plan, f"retry{attempt}")
        leaves = {r.name: r for r in results.parse(b.text())}
        if boot_problems(b):
            continue
        for p in todo:
            failing = [r[1].split("/patched/", 1)[1] for r in rows
                       if r[0] == "regress" and r[3] == p]
            if all(leaves.get(n) and leaves[n].status != "fail" for n in failing):
                passed.add(p)
    out = []
    for status, name, detail, prog in rows:
        if status == "regress":
            status = "flaky" if prog in passed else "fail"
            detail += "; passed when re-run" if prog in passed else \
                f"; failed in {attempts} re-runs too"
        out.append((status, name, detail, prog))
    return out


def test_arch(tally, arch_name, variant, own, upstream, only):
    t = Timer()
    for flavour in config.FLAVOURS:
        build.build(arch_name, variant, flavour)
    image.build(arch_name)
    plan = suites.test_plan(arch_name, own=own, upstream=upstream, only=only,
                            variant=variant)
    per_flavour = {}
    for flavour in config.FLAVOURS:
        b = boot_and_parse(arch_name, flavour, variant, plan, "tests")
        for what, detail in boot_problems(b):
            tally.add("fail", f"{arch_name}/{variant}/{flavour}/{what}", detail)
        per_flavour[flavour] = results.parse(b.text())
    rows = retry_regressions(arch_name, variant, judge(arch_name, variant, per_flavour))
    for status, name, detail, _ in rows:
        tally.add(status, name, detail)
    if own and (not only or "switches" in only):
        b = boot_and_parse(arch_name, "patched", variant, suites.boot_param_plan(),
                           "bootparam", append=suites.BOOT_PARAM, timeout=600)
        for what, detail in boot_problems(b):
            tally.add("fail", f"{arch_name}/{variant}/patched-bootparam/{what}", detail)
        for r in results.parse(b.text()):
            tally.add(r.status, f"{arch_name}/{variant}/patched-bootparam/{r.name}",
                      r.detail if r.status != "pass" else "")
    say(f"{arch_name}/{variant}: done in {t}")


def main(arches, variant="default", pytest=True, own=True, upstream=True, only=None,
         harden=True):
    t = Timer()
    tally = Tally()
    deps.check()
    if pytest:
        run_pytest(tally)
    source.apply()
    for arch_name in arches:
        try:
            test_arch(tally, arch_name, variant, own, upstream, only)
        except LabError as e:
            tally.add("fail", f"{arch_name}/{variant}/lab", str(e).splitlines()[0])
            print(str(e), file=sys.stderr)
    if harden:
        from . import harden as hd     # harden imports this module
        for arch_name in [a for a in arches if a in hd.SHORT_ARCHES]:
            try:
                hd.harden_arch(tally, arch_name, "debug", int(hd.SHORT_MINUTES * 60),
                               hd.SHORT_ROUND, suite=False)
            except LabError as e:
                tally.add("fail", f"{arch_name}/debug/harden/lab", str(e).splitlines()[0])
                print(str(e), file=sys.stderr)
    out = config.WORK / "results" / f"test-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([{"status": s, "name": n, "detail": d}
                               for s, n, d in tally.rows], indent=1))
    return tally.finish(out, t)
