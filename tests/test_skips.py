# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests: every SKIP of a test boot is accounted for, by a
declaration in lab/guest/skips.tsv or as a fixture variant that the other
kernel's boot ran; anything else fails."""

import pytest

from lab.commands import test as testcmd
from lab.core.tally import Tally
from lab.guest import results, run, skips

STOCK = """LAB-READY: 6.12
# lab: start reclaim_batch: /lab/tests/reclaim_batch
    1..4
    ok 1 rb.stock.mglru_walk_calls
    ok 2 rb.on.mglru_walk_calls # SKIP variant for the patched kernel
    ok 3 rb.on.gone # SKIP variant for the patched kernel
    ok 4 rb.on.skipped_there # SKIP variant for the patched kernel
ok 1 reclaim_batch
LAB-EXIT: 0
"""
PATCHED = """LAB-READY: 6.12
# lab: start reclaim_batch: /lab/tests/reclaim_batch
    1..3
    ok 1 rb.stock.mglru_walk_calls # SKIP variant for the stock kernel
    ok 2 rb.on.mglru_walk_calls # SKIP no hardware access flag on this CPU: MGLRU does not walk
    ok 3 rb.on.skipped_there # SKIP no reason anyone wrote down
ok 1 reclaim_batch
LAB-EXIT: 0
"""


def rows(arch="arm64"):
    got = testcmd.judge(arch, "default", {"stock": results.parse(STOCK),
                                          "patched": results.parse(PATCHED)})
    return {r[1]: (r[0], r[2]) for r in got}


def test_an_undeclared_skip_of_a_patched_variant_fails():
    """rb.on.mglru_walk_calls may skip for want of a hardware access flag
    on the Cortex-A72 boot only (skips.tsv); on the main boot it fails."""
    got = rows()
    status, detail = got["arm64/default/patched/reclaim_batch/rb.on.mglru_walk_calls"]
    assert status == "fail" and detail.startswith("undeclared skip: no hardware access")


def test_the_same_skip_on_the_boot_it_is_declared_for_is_a_skip():
    msg = "no MTE: the lab's default arm64 machine has none (its debug kernels boot with -M virt,mte=on)"
    assert skips.account("arm64/default/patched/mprotect_batch/mte.private.tags_on_every_pte",
                         msg)[0] == "skip"
    # the nosplit boot runs a debug kernel, which has MTE: there it fails
    assert skips.account("arm64/nosplit/patched-nosplit/mprotect_batch/"
                         "mte.private.tags_on_every_pte", msg)[0] == "fail"


def test_a_skip_the_plan_leaves_out_is_no_longer_declared():
    """The Cortex-A72 boot's plan leaves mglru_walk_calls out
    (suites.BOOT_LEFT_OUT): a SKIP of it there is undeclared."""
    assert skips.account("arm64/default/patched-cortex-a72/reclaim_batch/"
                         "rb.on.mglru_walk_calls",
                         "no hardware access flag on this CPU: x")[0] == "fail"


def test_a_variant_for_the_other_kernel_counts_only_if_that_kernel_ran_it():
    got = rows()
    # run (and passed) on stock: the patched boot's row is no skip
    assert got["arm64/default/patched/reclaim_batch/rb.stock.mglru_walk_calls"][0] == "variant"
    # vanished from the patched boot, or skipped there without a declared reason
    assert got["arm64/default/stock/reclaim_batch/rb.on.gone"][0] == "fail"
    assert "did not run it" in got["arm64/default/stock/reclaim_batch/rb.on.gone"][1]
    assert got["arm64/default/stock/reclaim_batch/rb.on.skipped_there"][0] == "fail"
    assert got["arm64/default/patched/reclaim_batch/rb.on.skipped_there"][0] == "fail"


def test_a_run_with_an_undeclared_skip_ends_non_zero(capsys):
    tally = Tally()
    for status, name, detail, _ in testcmd.judge(
            "arm64", "default", {"stock": results.parse(STOCK),
                                 "patched": results.parse(PATCHED)}):
        tally.add(status, name, detail)
    assert tally.finish(tally.save("test")) == 1
    out = capsys.readouterr().out
    assert "VARIANT" not in out and "fixture variants for the other kernel" in out


def test_an_extra_patched_boot_accounts_for_its_skips(tmp_path):
    text = ("LAB-READY: 6.12\n# lab: start mprotect_batch: x\n    1..3\n"
            "    ok 1 mech.stock.a # SKIP variant for the stock kernel\n"
            "    ok 2 track.shmem.uffd_wp # SKIP uffd-wp of shmem needs PTE markers, "
            "not tested here\n"
            "    ok 3 mech.on.b # SKIP it did not feel like it\nok 1 mprotect_batch\n"
            "LAB-EXIT: 0\n")
    c = tmp_path / "console.log"
    c.write_text(text)
    b = run.Boot(c, 0, True, False, 1.0, plan="lab_run mprotect_batch 600 x\n")
    tally = Tally()
    testcmd.tally_boot(tally, "arm64/default/patched-mttcg", b)
    got = {n.rsplit("/", 1)[1]: s for s, n, _ in tally.rows}
    assert got == {"mech.stock.a": "variant", "track.shmem.uffd_wp": "skip",
                   "mech.on.b": "fail"}


def test_the_declarations_parse_and_a_malformed_line_is_an_error(tmp_path):
    table = skips.load()
    assert len(table) >= 5
    assert all(d.row.split("/")[0] in ("*", "x86_64", "arm64") for d in table)
    bad = tmp_path / "skips.tsv"
    bad.write_text("x86_64/*\tmessage only\n")
    with pytest.raises(ValueError):
        skips.load(bad)


def test_the_summary_lists_skips_by_reason(capsys):
    tally = Tally()
    tally.add("pass", "a")
    for n in range(3):
        tally.add("skip", f"s{n}", "MTE is arm64's")
    tally.add("skip", "t", "x86_64 has no contiguous PTEs: nothing to fold")
    tally.finish(tally.save("test"))
    assert "4 skipped: 3 MTE is arm64's; 1 x86_64 has no contiguous PTEs" in \
        capsys.readouterr().out
