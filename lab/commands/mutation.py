# SPDX-License-Identifier: GPL-2.0-only
"""The mutation leaf of 'lab check' (check/arm64/bbm-mutation): a check
that can fail, shown failing.

QEMU does not model the TLB conflict abort that a change of the contiguous
bit without break-before-make may raise, so the series carries a
CONFIG_DEBUG_VM check of its batched protection change instead
(arch/arm64/mm/mmu.c, prot_batch_*()), which learns of TLB invalidations
from the TLBI helpers of asm/tlbflush.h.  This leaf plants a bug the check
exists to catch, one of MUTATIONS (a patch on top of the series in a
worktree of its own, WORK/src/mutant), builds the arm64 nosplit kernel
(DEBUG_VM, KASAN, lockdep) from it, boots it with PROGRAM's tests and
passes only when the console shows the check's report (WANT).  A mutant
that boots without the report, or does not build, or whose mutation no
longer applies, fails the leaf.

The worktree's build directory is a direct child of it, as the lab's own
are, so kbuild uses a relative srctree and ccache hits what the patched
nosplit build compiled: only the mutated file and the link are new.
"""

import os
import subprocess

from ..core import config
from ..core.util import LabError, out, run, say
from ..guest import image, results, suites
from ..guest.testboot import boot_and_parse, boot_problems
from ..kernel import build, source

ARCH = "arm64"
VARIANT = "nosplit"
PROGRAM = "mprotect_batch"
MUTATIONS = (config.REPO / "lab/kernel/mutations/arm64-bbm-narrow-flush.patch",)
WANT = "no break-before-make"
FLAVOUR = "mutant"

# The lab's code that decides the verdict, beside the mutations and the
# guest's side (stamp inputs of 'lab check').
CODE = ("lab/commands/mutation.py",)


def tree():
    return config.source_tree(FLAVOUR)


def stamp_inputs():
    files = list(CODE) + [str(m.relative_to(config.REPO)) for m in MUTATIONS]
    files += subprocess.run(["git", "-C", str(config.REPO), "ls-files", "guest"],
                            capture_output=True, text=True).stdout.split()
    return {"code": build.code_hash(sorted(files)),
            "qemu": build.tool_version(config.arch(ARCH).qemu)}


def prepare(mutation):
    """WORK/src/mutant at the patched tree's HEAD, clean, with @mutation
    applied."""
    patched = source.apply()
    head = out(["git", "-C", str(patched), "rev-parse", "HEAD"])
    t = tree()
    if not t.exists():
        run(["git", "-C", str(patched), "worktree", "add", "-q", "--detach", str(t), head])
    run(["git", "-C", str(t), "checkout", "-q", "-f", "--detach", head], quiet=True)
    p = subprocess.run(["git", "-C", str(t), "apply", str(mutation)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise LabError(f"the mutation {mutation.name} no longer applies to the series: "
                       f"{p.stderr.strip()}")
    return t


def build_mutant(t):
    """Build the nosplit kernel of tree @t; the image's path."""
    a = config.arch(ARCH)
    outdir = t / f"out-{ARCH}-{VARIANT}"
    outdir.mkdir(parents=True, exist_ok=True)
    log = config.log_dir() / f"build-{ARCH}-{VARIANT}-{FLAVOUR}.log"
    log.write_text("")
    env = dict(os.environ, **build.BUILD_ENV)
    base = build.make_cmd(a, t, outdir, FLAVOUR)
    frags = build.fragments(ARCH, VARIANT, "patched")

    def write():
        run(base + ["tinyconfig"], env=env, log=log)
        build.merge_fragments(base, t, outdir, frags, env, log)
        build.check_config(outdir / ".config", frags)

    build.stamped_config(outdir, build.config_hash(ARCH, VARIANT, "patched"), write)
    say(f"building {ARCH}/{VARIANT}/{FLAVOUR} (log: {log})")
    if run(base, env=env, log=log, check=False).returncode != 0:
        raise LabError(f"the mutant does not build:\n{build.first_error(log)}\n(log: {log})")
    return outdir / a.image


def judge(text, problems, console):
    """(status, detail, error) of one mutant's boot: pass when the check
    reported the planted bug; the boot's other problems are listed, but a
    report is what this boot is for, so they do not fail it alone.  A boot
    that never reached the plan fails (the tests did not run)."""
    hits = [l.strip() for l in text.splitlines() if WANT in l]
    ran = any(r for r in results.parse(text))
    if not ran:
        return "fail", f"no test result on the console: {console}", ""
    if not hits:
        return ("fail", f"the check stayed silent: no '{WANT}' on the console "
                f"({console})", "\n".join(f"{w}: {d}" for w, d in problems))
    return "pass", f"the check fired: {hits[0]}", ""


def leaf():
    """A check verdict's (status, detail, error) for check/arm64/bbm-mutation."""
    image.build(ARCH)
    plan = suites.test_plan(ARCH, own=True, upstream=False, only={PROGRAM},
                            variant=VARIANT)
    verdicts = []
    for mutation in MUTATIONS:
        t = prepare(mutation)
        kernel = build_mutant(t)
        b = boot_and_parse(ARCH, "patched", VARIANT, plan, f"mutant-{mutation.stem}",
                           kernel=kernel)
        status, detail, error = judge(b.text(), boot_problems(b), b.console)
        say(f"{mutation.name}: {status}: {detail}")
        verdicts.append((status, f"{mutation.stem}: {detail}", error))
    bad = [v for v in verdicts if v[0] != "pass"]
    if bad:
        return "fail", bad[0][1], "\n".join(v[2] for v in bad if v[2])
    return "pass", "; ".join(v[1] for v in verdicts), ""
