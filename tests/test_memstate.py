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
                      ("c", {"avail": 1_470_000, "pt": 140}))
    rows = rows_of(patched)
    detail = next(r[2] for r in rows if r[1].endswith("/c/<left behind>"))
    assert "avail +30,000 kB" in detail and "pt +38 pages" in detail, rows


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
    assert memstate.tolerances(memstate.left_behind(memstate.parse(stock)))["avail"] == 10_000
    assert memstate.tolerances({})["pt"] == memstate.FLOOR["pt"]


def test_a_boot_without_memory_lines_fails():
    """A check that could not run is not a pass: lab_memstate missing on
    either kernel fails the check."""
    bare = "KTAP version 1\n# lab: start a: /lab/tests/a\nok 1 a\n"
    for stock, patched, which in ((STOCK, bare, "patched"), (bare, STOCK, "stock")):
        rows = rows_of(patched, stock)
        assert [r[:2] for r in rows] == [("fail", "arm64/default/patched/<memstate>")]
        assert which in rows[0][2]


def test_lab_run_prints_the_memory_after_each_program(tmp_path):
    """lib.sh's lab_memstate, run by bash over a fake /proc: a line before the
    first program and one after each, which parse() reads back."""
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
    script = (f". {config.GUEST / 'lib.sh'}\n"
              "lab_plan 2\nlab_run first 60 true\nlab_run second 60 true\n")
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "LAB_SYSROOT": str(tmp_path)})
    states = memstate.parse(p.stdout)
    assert [s[0] for s in states] == ["<start>", "first", "second"], p.stdout
    assert states[1][1] == {"free": 1234, "avail": 5678, "anonhuge": 2048, "pt": 77,
                            "swap": 312}
    assert states[1][2] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert (proc / "sys/vm/drop_caches").read_text().strip() == "3"
    # the line of each program comes before its result line
    out = p.stdout.splitlines()
    assert out.index("ok 1 first") > out.index(next(x for x in out
                                                     if x.startswith("# lab: mem first ")))
