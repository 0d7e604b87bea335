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

The worktree is one of config.SCRATCH_TREES: build.build() builds it as
the patched flavour, in a build directory that is a direct child of it,
so kbuild uses a relative srctree and ccache hits what the patched
nosplit build compiled: only the mutated file and the link are new.
"""

import subprocess

from ..core import config
from ..core.util import LabError, out, run, say
from ..guest import image, results, suites
from ..guest.testboot import boot_and_parse, boot_problems
from ..kernel import build, source
from . import debianboot

ARCH = "arm64"
VARIANT = "nosplit"
PROGRAM = "mprotect_batch"
# The mutations, as paths in the repository, and as files.
MUTATION_FILES = ("lab/kernel/mutations/arm64-bbm-narrow-flush.patch",)
MUTATIONS = tuple(config.REPO / f for f in MUTATION_FILES)
WANT = "no break-before-make"
FLAVOUR = "mutant"

# The lab's code that decides the verdict, beside the mutations and the
# guest's side (stamp inputs of 'lab check').
CODE = ("lab/commands/mutation.py",)


def tree():
    return config.source_tree(FLAVOUR)


def stamp_inputs():
    """As a boot leaf's (debianboot.stamp_inputs()), with this leaf's code
    and the mutations."""
    return debianboot.stamp_inputs(ARCH, CODE + MUTATION_FILES)


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


def judge(text, problems, console):
    """(status, detail, error) of one mutant's boot: pass when the check
    reported the planted bug; the boot's other problems are listed, but a
    report is what this boot is for, so they do not fail it alone.  A boot
    that never reached the plan fails (the tests did not run)."""
    hits = [l.strip() for l in text.splitlines() if WANT in l]
    if not results.parse(text):
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
        prepare(mutation)
        kernel = build.build(ARCH, VARIANT, FLAVOUR)
        b = boot_and_parse(ARCH, "patched", VARIANT, plan, f"mutant-{mutation.stem}",
                           kernel=kernel)
        status, detail, error = judge(b.text(), boot_problems(b), b.console)
        say(f"{mutation.name}: {status}: {detail}")
        verdicts.append((status, f"{mutation.stem}: {detail}", error))
    bad = [v for v in verdicts if v[0] != "pass"]
    if bad:
        return "fail", bad[0][1], "\n".join(v[2] for v in bad if v[2])
    return "pass", "; ".join(v[1] for v in verdicts), ""
