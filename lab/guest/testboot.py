# SPDX-License-Identifier: GPL-2.0-only
"""Testboot: one boot of a built kernel with a test plan, and what fails it.

Shared by 'lab test' (commands/test.py) and 'lab harden': the boot prints
the plan's progress lines, and a boot fails when it never reaches the plan,
never finishes, its console shows a kernel report (results.REPORTS), the
guest's /init says the lab's own set-up failed (a LAB-ERROR line: the XFS
disk did not mount, swap did not come up, no plan) or the plan's did (a
'# lab: could not ...' line of guest/lib.sh), the plan shell ended
with a status other than 0, or a program of the plan never started: what
was expected and did not arrive fails the boot.
"""

from ..core.util import say
from ..kernel import build
from . import memstate, results, run, suites


def echo_progress(prefix):
    def echo(line):
        if results.TOP_RE.match(line) or line.startswith(("LAB-", "# lab: start")):
            print(f"  [{prefix}] {line}", flush=True)
    return echo


def boot_and_parse(arch_name, flavour, variant, plan, tag, append="", cpus=2,
                   mem_mb=2048, timeout=3600, cpu=None, accel="tcg", extra=(),
                   kernel=None):
    """Boot a kernel with a test plan; kernel, an image's path, defaults to
    the build directory's of (arch_name, variant, flavour)."""
    kernel = kernel or build.image_path(arch_name, variant, flavour)
    env = {"LAB_ARCH": arch_name, "LAB_FLAVOUR": flavour, "LAB_VARIANT": variant}
    name = f"{arch_name}-{variant}-{flavour}-{tag}"
    say(f"booting {name}")
    b = run.boot(run.BootSpec(arch=arch_name, kernel=kernel, plan=plan, env=env, name=name,
                              append=suites.boot_append(arch_name, append), cpus=cpus,
                              mem_mb=mem_mb, timeout=timeout, cpu=cpu, accel=accel,
                              extra=tuple(extra)), echo=echo_progress(name))
    say(f"{name}: exit {b.exit_code}, {b.wall:.0f}s wall, console {b.console}, "
        f"memory after each program {memstate.save(name, b.text())}")
    took = sorted(results.durations(b.text()).items(), key=lambda kv: -kv[1])
    if took:
        say(f"{name}: longest programs (guest s): " +
            ", ".join(f"{n} {t:.0f}" for n, t in took[:6]))
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
    elif b.exit_code != 0:
        probs.append(("completed", f"LAB-EXIT: {b.exit_code}, the plan shell did not "
                      f"end cleanly; console: {b.console}"))
    text = b.text()
    never = never_started(b.plan, text)
    if b.ready and never:
        probs.append(("completed", f"{len(never)} program(s) of the plan never started: "
                      f"{', '.join(never)}; console: {b.console}"))
    # /init's own set-up (LAB-ERROR) and the plan's helpers' (guest/lib.sh:
    # "# lab: could not write ...", "could not reserve ...")
    setup = [line.strip() for line in text.splitlines()
             if line.startswith(("LAB-ERROR", "# lab: could not"))]
    if setup:
        probs.append(("setup", f"{setup[0]}" + (f" (+{len(setup) - 1} more)"
                                                 if len(setup) > 1 else "") +
                      f"; console: {b.console}"))
    reports = results.kernel_reports(text)
    if reports:
        probs.append(("console", f"{len(reports)} kernel report line(s), first: "
                      f"{reports[0]}; console: {b.console}"))
    return probs


def never_started(plan, text):
    """The programs of a plan (suites.plan_programs()) that the console shows
    neither starting ('# lab: start NAME:') nor reporting: the plan shell died
    or was cut off before them.  A program that started and never reported
    is results.parse()'s '<did not finish>' leaf."""
    seen = set()
    for line in results.console_lines(text):
        m = results.START_RE.match(line)
        if m:
            seen.add(m.group(1))
        m = results.TOP_RE.match(line)
        if m:
            seen.add(m.group(3))
    return [p for p in suites.plan_programs(plan) if p not in seen]
