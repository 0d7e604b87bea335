# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of 'lab harden': the load's output and its verdicts."""

from lab.commands import harden

CONSOLE = """\
LAB-READY: 6.12.117-patched 2 cpus MemTotal: 2000000 kB
HARDEN-ROUND 1 lru_gen=n seconds=60
HARDEN-STRESS vm 120
HARDEN-STRESS mremap 30
HARDEN-TRINITY 5000
HARDEN-STAMP 40 80000 0
HARDEN-SHMLOCK 12 9000 0
HARDEN-FLIPS 100 48
HARDEN-ROUND 2 lru_gen=y seconds=60
HARDEN-STRESS vm 100
HARDEN-TRINITY 4000
HARDEN-STAMP 30 60000 0
HARDEN-SHMLOCK 10 8000 0
HARDEN-FLIPS 90 50
HARDEN-DONE seconds=121 rounds=2
LAB-EXIT: 0
"""


def rows(ld, want=120):
    return {what: (status, detail) for status, what, detail in harden.verdicts(ld, want)}


def test_parse_sums_rounds():
    ld = harden.parse_load(CONSOLE)
    assert ld.rounds == 2 and ld.done and ld.seconds == 121
    assert ld.stress == {"vm": 220, "mremap": 30}
    assert ld.trinity == 9000 and ld.trinity_rounds == 2
    assert (ld.stamp_passes, ld.stamp_checks, ld.stamp_mismatches) == (70, 140000, 0)
    assert (ld.flip_writes, ld.flip_changes) == (190, 98)
    assert all(s == "pass" for s, _ in rows(ld).values())


def test_shmlock_mismatch_or_missing_round_fails():
    ld = harden.parse_load(CONSOLE)
    assert (ld.shm_passes, ld.shm_locks, ld.shm_mismatches) == (22, 17000, 0)
    ld = harden.parse_load(CONSOLE.replace("HARDEN-SHMLOCK 10 8000 0",
                                           "HARDEN-SHMLOCK 10 8000 1"))
    assert rows(ld)["shm-lock"][0] == "fail"
    ld = harden.parse_load(CONSOLE.replace("HARDEN-SHMLOCK 10 8000 0\n", ""))
    assert rows(ld)["shm-lock"][0] == "fail"


def test_mismatch_fails_data_integrity():
    ld = harden.parse_load(CONSOLE.replace("HARDEN-STAMP 30 60000 0",
                                           "HARDEN-STAMP 30 60000 2"))
    assert rows(ld)["data-integrity"][0] == "fail"


def test_stress_ng_failure_fails():
    ld = harden.parse_load(CONSOLE.replace("HARDEN-DONE",
                                           "HARDEN-FAIL stress-ng exit 2 (round 2)\nHARDEN-DONE"))
    assert rows(ld)["stress-ng"][0] == "fail"


def test_missing_round_output_fails():
    # trinity reported in one round of two: the other round's load is unproven
    ld = harden.parse_load(CONSOLE.replace("HARDEN-TRINITY 4000\n", ""))
    assert rows(ld)["trinity"][0] == "fail"
    ld = harden.parse_load(CONSOLE.replace("HARDEN-STAMP 30 60000 0\n", ""))
    assert rows(ld)["data-integrity"][0] == "fail"


def test_unfinished_or_short_load_fails():
    ld = harden.parse_load(CONSOLE.replace("HARDEN-DONE seconds=121 rounds=2\n", ""))
    assert rows(ld)["load-time"][0] == "fail"
    ld = harden.parse_load(CONSOLE)
    assert rows(ld, want=600)["load-time"][0] == "fail"


def test_no_flips_fails():
    ld = harden.parse_load(CONSOLE.replace("HARDEN-FLIPS 100 48", "HARDEN-FLIPS 0 0")
                           .replace("HARDEN-FLIPS 90 50", "HARDEN-FLIPS 0 0"))
    assert rows(ld)["switch-flips"][0] == "fail"


def test_setup_failure_is_its_own_row():
    ld = harden.parse_load(CONSOLE.replace("LAB-EXIT", "HARDEN-FAIL no swap device\nLAB-EXIT"))
    assert rows(ld)["setup"][0] == "fail"


def _rounds(total, round_s, elapsed):
    """The round lengths guest/harden.sh's main loop picks for SECONDS and
    ROUND_SECONDS when its rounds take elapsed[i] seconds each."""
    import subprocess
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "guest" / "harden.sh").read_text()
    loop = text[text.index("\nt0=$(now)\n") + 1:]
    loop = loop[:loop.index("\ndone\n") + 6]
    stubs = ("T=0\nnow() { echo $T; }\n"
             f"ELAPSED='{' '.join(map(str, elapsed))}'\n"
             "one_round() { echo \"round $1 $2\"; set -- $ELAPSED; "
             "T=$((T + $1)); shift; ELAPSED=\"$*\"; }\n")
    p = subprocess.run(["sh", "-c", stubs + f"total={total}\nround={round_s}\n" + loop],
                       capture_output=True, text=True, timeout=10)
    return [int(line.split()[2]) for line in p.stdout.splitlines()]


# Every round of the load is a whole one: after a first round that ran 111 s
# of a 120 s budget, the second still gets its 60 s (a 9 s round signalled
# trinity while it was starting, and the short harden boot ran into its
# timeout), and the load stops once the budget is spent.
def test_the_load_runs_whole_rounds():
    assert _rounds(120, 60, [111, 62]) == [60, 60]
    assert _rounds(120, 60, [61, 61]) == [60, 60]
    assert _rounds(120, 60, [130]) == [60]


def test_the_load_boots_the_patched_debug_kernel_with_its_disks(monkeypatch, tmp_path):
    """run_load() hands run.boot() one BootSpec: the patched kernel of the
    variant, the harden plan, 2 GB of swap and XFS, a timeout past the load."""
    from lab.commands import harden
    from lab.core.tally import Tally
    from lab.guest import run
    seen = []

    def boot(spec, echo=None):
        seen.append(spec)
        c = tmp_path / "console.log"
        c.write_text("LAB-READY: 6.12\nLAB-EXIT: 0\n")
        return run.Boot(c, 0, True, False, 1.0, plan=spec.plan)

    monkeypatch.setattr(harden.run, "boot", boot)
    monkeypatch.setattr(harden.build, "image_path", lambda *a: tmp_path / "Image")
    harden.run_load(Tally(), "arm64", "nosplit", 60, 30)
    (spec,) = seen
    assert isinstance(spec, run.BootSpec) and spec.arch == "arm64"
    assert spec.kernel == tmp_path / "Image" and "/lab/harden.sh 60 30" in spec.plan
    assert (spec.swap_mb, spec.xfs_mb, spec.timeout) == (2048, 2048, 2 * 60 + 1800)
    assert spec.env["LAB_VARIANT"] == "nosplit" and spec.name.endswith("harden-60s")
