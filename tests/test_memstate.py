# SPDX-License-Identifier: GPL-2.0-only
"""The leak check of a test boot (lab/guest/memstate.py): what a program
leaves behind, judged against the same program on stock."""

import subprocess

from lab.core import config
from lab.guest import memstate


def line(name, avail=1_500_000, pt=100, swap=0, free=None, anonhuge=0,
         buddy="10,9,8,7,6,5,4,3,2,40,100"):
    free = avail - 100_000 if free is None else free
    return (f"# lab: mem {name} free={free} avail={avail} anonhuge={anonhuge} pt={pt} "
            f"swap={swap} buddy={buddy}\n")


def console(*programs, start=None):
    """A console of a plan whose programs each leave the memory line given
    as a dict of line() arguments."""
    text = "KTAP version 1\n" + line("<start>", **(start or {}))
    for n, (name, mem) in enumerate(programs, 1):
        text += f"# lab: start {name}: /lab/tests/{name}\n{line(name, **mem)}ok {n} {name}\n"
    return text


STOCK = console(("a", {"avail": 1_499_000}), ("b", {"avail": 1_500_000, "pt": 102}),
                ("c", {"avail": 1_499_500}))


def rows_of(patched, stock=STOCK):
    return memstate.judge("arm64/default/patched", stock, patched)


def test_parse_reads_every_counter_and_the_orders():
    (name, counters, buddy), = memstate.parse(line("cow", swap=512))
    assert name == "cow"
    assert counters == {"free": 1_400_000, "avail": 1_500_000, "anonhuge": 0, "pt": 100,
                        "swap": 512}
    assert buddy == [10, 9, 8, 7, 6, 5, 4, 3, 2, 40, 100]


def test_the_same_memory_as_stock_passes():
    rows = rows_of(STOCK)
    assert [r[0] for r in rows] == ["pass"], rows
    assert rows[0][1] == "arm64/default/patched/<left behind>"


def test_a_program_that_keeps_swap_fails_by_name():
    """Swap entries that never come back: 4 MB of swap still in use after
    program b, where stock left none."""
    patched = console(("a", {"avail": 1_499_000}),
                      ("b", {"avail": 1_500_000, "pt": 102, "swap": 4096}),
                      ("c", {"avail": 1_499_500, "swap": 4096}))
    rows = rows_of(patched)
    failed = {r[1] for r in rows if r[0] == "fail"}
    assert failed == {"arm64/default/patched/b/<left behind>",
                      "arm64/default/patched/<boot>/<left behind>"}, rows
    assert "swap +4,096 kB" in next(r[2] for r in rows if "/b/" in r[1])


def test_page_tables_and_memory_that_never_come_back_fail():
    patched = console(("a", {"avail": 1_499_000}),
                      ("b", {"avail": 1_500_000, "pt": 102}),
                      ("c", {"avail": 1_470_000, "pt": 240}))
    rows = rows_of(patched)
    detail = next(r[2] for r in rows if r[1].endswith("/c/<left behind>"))
    assert "avail +30,000 kB" in detail and "pt +138 pages" in detail, rows


def test_many_small_leaks_fail_the_whole_boot():
    """Each program under the tolerance, the sum of them over it."""
    stock = console(*((f"p{i}", {}) for i in range(10)))
    patched = console(*((f"p{i}", {"avail": 1_500_000 - 1000 * (i + 1)})
                        for i in range(10)))
    rows = rows_of(patched, stock)
    assert [r[1] for r in rows if r[0] == "fail"] == [
        "arm64/default/patched/<boot>/<left behind>"], rows


def test_the_tolerance_is_the_stock_boots_largest_change():
    stock = console(("a", {"avail": 1_490_000}), ("b", {"avail": 1_500_000}))
    # twice it: each of the two boots moves by up to that much
    assert memstate.tolerances(memstate.left_behind(memstate.parse(stock)))["avail"] == 20_000
    assert memstate.tolerances({})["pt"] == memstate.FLOOR["pt"]


def test_a_boot_without_memory_lines_fails():
    """A check that could not run is not a pass: lab_memstate missing on
    either kernel fails the check."""
    bare = "KTAP version 1\n# lab: start a: /lab/tests/a\nok 1 a\n"
    for stock, patched, which in ((STOCK, bare, "patched"), (bare, STOCK, "stock")):
        rows = rows_of(patched, stock)
        assert [r[:2] for r in rows] == [("fail", "arm64/default/patched/<memstate>")]
        assert which in rows[0][2]


def memstate_run(tmp_path, swapoff_exit=0):
    """lab_plan and two lab_run lines of lib.sh, run by bash over a fake /proc
    in a lab guest (LAB_ARCH set), with swapoff and swapon stand-ins on PATH
    that log their device; swapoff exits swapoff_exit."""
    proc = tmp_path / "proc"
    (proc / "sys/vm").mkdir(parents=True)
    (proc / "sys/vm/drop_caches").write_text("")
    (proc / "meminfo").write_text("MemTotal: 2000000 kB\nMemFree: 1234 kB\n"
                                  "MemAvailable: 5678 kB\nAnonHugePages: 2048 kB\n")
    (proc / "vmstat").write_text("nr_free_pages 10\nnr_page_table_pages 77\n")
    (proc / "swaps").write_text("Filename Type Size Used Priority\n"
                                "/dev/vdb partition 1048572 300 -2\n"
                                "/dev/zram0 partition 1048572 12 5\n")
    (proc / "buddyinfo").write_text(
        "Node 0, zone      DMA      1      2      3      4      5      6      7      8"
        "      9     10     11\n"
        "Node 0, zone    DMA32      1      1      1      1      1      1      1      1"
        "      1      1      1\n")
    (tmp_path / "tmp").mkdir()
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "cycled"
    # swapon of a device leaves nothing of it in use
    for cmd, body in (("swapoff", f'echo "off $1" >> {log}; exit {swapoff_exit}'),
                      ("swapon", f'echo "on $1" >> {log}; sed -i "s|^$1 \\(\\S*\\) '
                                 f'\\(\\S*\\) \\S*|$1 \\1 \\2 0|" {proc}/swaps')):
        (bin_ / cmd).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / cmd).chmod(0o755)
    script = (f". {config.GUEST / 'lib.sh'}\n"
              "lab_plan 2\nlab_run first 60 true\nlab_run second 60 true\n")
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env={"PATH": f"{bin_}:/usr/bin:/bin", "LAB_SYSROOT": str(tmp_path),
                            "LAB_ARCH": "x86_64"})
    return p.stdout, (log.read_text().split("\n") if log.exists() else []), proc


def test_lab_run_prints_the_memory_after_each_program(tmp_path):
    """lib.sh's lab_memstate: a line before the first program and one after
    each, which parse() reads back; every swap device was turned off and on
    before the swap in use was read."""
    out, cycled, proc = memstate_run(tmp_path)
    states = memstate.parse(out)
    assert [s[0] for s in states] == ["<start>", "first", "second"], out
    assert states[0][1] == {"free": 1234, "avail": 5678, "anonhuge": 2048, "pt": 77,
                            "held": 312, "swap": 0}
    assert states[0][2] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert cycled[:4] == ["off /dev/vdb", "on /dev/vdb", "off /dev/zram0", "on /dev/zram0"]
    assert (proc / "sys/vm/drop_caches").read_text().strip() == "3"
    assert "could not" not in out
    # the line of each program comes before its result line
    lines = out.splitlines()
    assert lines.index("ok 1 first") > lines.index(next(x for x in lines
                                                         if x.startswith("# lab: mem first ")))


def test_a_swapoff_that_fails_fails_the_boot(tmp_path):
    """A swap entry whose count leaked keeps swapoff from ending: a swapoff
    that fails is a 'could not' line, a set-up failure of the boot
    (testboot.boot_problems()), and the swap it could not free stays in use."""
    from lab.guest.testboot import boot_problems
    out, cycled, _ = memstate_run(tmp_path, swapoff_exit=1)
    assert "# lab: could not swapoff and swapon /dev/vdb after <start> (312 kB in use)" in out
    assert "on /dev/vdb" not in cycled
    assert memstate.parse(out)[0][1]["swap"] == 312

    class B:
        ready, timed_out, exit_code, plan, console = True, False, 0, "", "c.log"

        def text(self):
            return "LAB-READY: 6.12\n" + out + "LAB-EXIT: 0\n"
    assert [w for w, _ in boot_problems(B())] == ["setup"]


def test_no_swap_device_is_touched_outside_a_lab_guest(tmp_path, monkeypatch):
    """lib.sh sourced without LAB_ARCH (a host) turns no swap off."""
    out, cycled, _ = memstate_run(tmp_path)
    log = tmp_path / "cycled"
    log.unlink()
    script = f". {config.GUEST / 'lib.sh'}\nlab_memstate x\n"
    subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                   env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
                        "LAB_SYSROOT": str(tmp_path)})
    assert not log.exists()


def test_what_stock_gave_back_is_no_credit_for_patched():
    """Stock gave page tables back where patched kept some, both within the
    noise: patched is compared with nothing left behind, not with stock's
    gain (a short plan of a cold run: +4 against -11)."""
    stock = console(("a", {"pt": 89}))
    assert [r[0] for r in rows_of(console(("a", {"pt": 104})), stock)] == ["pass"]
    assert [r[0] for r in rows_of(console(("a", {"pt": 100 + 65})), stock)][0] == "fail"


def test_a_line_that_kernel_output_cut_in_two_is_read_whole():
    """The serial console is shared: a kernel message can land in the middle
    of the memory line, whose rest follows on the next line.  Read whole,
    the line is the stock one; read as zeros it would be a 1.5 GB leak."""
    cut = STOCK.replace("# lab: mem b free=1400000 ",
                        "# lab: mem b free=1400000 [   13.1] random: crng init done\n")
    assert cut != STOCK
    assert memstate.parse(cut) == memstate.parse(STOCK)
    assert [r[0] for r in rows_of(cut)] == ["pass"]


def test_a_damaged_or_missing_line_fails_the_check_by_name():
    """A line that lacks a counter is not read as 0, and a program that
    reported without a readable line after it fails the check: what it
    left behind is not known."""
    damaged = STOCK.replace(" pt=102 ", " ")
    rows = rows_of(damaged)
    assert [r[:2] for r in rows] == [("fail", "arm64/default/patched/<memstate>")]
    assert "patched: b" in rows[0][2]
    gone = "".join(l + "\n" for l in STOCK.splitlines() if not l.startswith("# lab: mem c "))
    rows = rows_of(STOCK, gone)
    assert rows[0][0] == "fail" and "stock: c" in rows[0][2]


def test_the_table_of_a_reused_stock_boot_is_saved_with_the_logs(tmp_path, monkeypatch):
    """save() names the table after the boot, in the logs directory, also
    for a stock boot whose console is a copy in the stock cache (whose
    entries the cache counts by their names)."""
    monkeypatch.setattr(config, "WORK", tmp_path)
    path = memstate.save("arm64-default-stock-tests", STOCK)
    assert path == tmp_path / "logs" / "memstate-arm64-default-stock-tests.json"
    assert [r["program"] for r in __import__("json").loads(path.read_text())] == [
        "<start>", "a", "b", "c"]
