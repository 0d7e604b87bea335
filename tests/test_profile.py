# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of lab/commands/profile.py: block counts -> functions -> diff."""

from lab.commands import profile

STARTS = [0x1000, 0x1100, 0x1200]
NAMES = ["alpha", "beta", "gamma"]


def test_parse_blocks_adds_up_retranslated_blocks():
    # the same block translated twice has two counters in the plugin's file
    text = "1000 4 10 1 1\n1000 4 5 1 0\n1104 3 2 0 0\n"
    assert profile.parse_blocks(text) == {0x1000: [60, 15, 15, 10],
                                          0x1104: [6, 2, 0, 0]}


def test_parse_blocks_reads_lines_without_the_asid_column_as_none():
    assert profile.parse_blocks("1000 4 10 1\n") == {0x1000: [40, 10, 10, 0]}


def test_by_function_counts_calls_only_at_the_first_instruction():
    blocks = {0x1000: [60, 15, 0, 0], 0x1010: [20, 5, 5, 5], 0x1104: [6, 2, 0, 0],
              0x1200: [7, 1, 1, 0]}
    funcs = profile.by_function(blocks, STARTS, NAMES)
    assert funcs == {"alpha": [80, 15, 5, 5], "beta": [6, 0, 0, 0],
                     "gamma": [7, 1, 1, 0]}


def test_by_function_names_addresses_below_every_symbol():
    assert profile.by_function({0x10: [3, 1, 0, 0]}, STARTS, NAMES) == {"?": [3, 0, 0, 0]}


def test_diff_table_orders_by_absolute_delta_and_keeps_totals():
    base = {"alpha": [100, 10, 0], "beta": [50, 5, 0], "same": [7, 1, 0]}
    other = {"alpha": [90, 10, 0], "beta": [80, 5, 0], "new": [5, 1, 0],
             "same": [7, 1, 0]}
    rows, totals = profile.diff_table(base, other, top=2)
    assert [r[0] for r in rows] == ["beta", "alpha"]
    assert rows[0] == ("beta", 50, 80, 30, 5, 5)
    assert totals == (157, 182)
    text = profile.format_table(rows, totals, "stock", "patched")
    assert "+25" in text and "(+15.92%)" in text


def test_mechanism_table_lists_only_functions_some_kernel_has():
    stock = {"try_to_unmap_one": [500, 40, 0, 0], "x": [10, 1, 3, 0]}
    on = {"try_to_unmap_one": [300, 3, 0, 0], "__contpte_try_unfold": [9, 0, 0, 0],
          "x": [10, 1, 1, 0]}
    text = profile.mechanism_table([("stock", stock), ("on", on)])
    lines = text.splitlines()
    assert [ln.split()[0] for ln in lines[1:3]] == ["try_to_unmap_one",
                                                    "__contpte_try_unfold"]
    assert lines[1].split()[1:] == ["40", "3"]
    assert "flush_tlb_mm_range" not in text
    assert lines[-2].split()[-2:] == ["3", "1"]      # TLB maintenance
    assert lines[-1].split()[-2:] == ["510", "319"]  # all instructions


def test_mechanism_table_counts_whole_asid_flushes_when_asked():
    off = {"try_to_unmap_one": [500, 40, 512, 0], "x": [10, 1, 0, 0]}
    on = {"try_to_unmap_one": [300, 3, 4, 2], "x": [10, 1, 1, 1]}
    text = profile.mechanism_table([("off", off), ("on", on)], asid=True)
    line = next(ln for ln in text.splitlines() if "ASIDE1" in ln)
    assert line.split()[-2:] == ["0", "3"]
    assert "ASIDE1" not in profile.mechanism_table([("off", off), ("on", on)])


# The most-instructions table ranks by the first patched mode and gives
# every column, 0 where a kernel lacks the function.
def test_most_table_ranks_by_the_first_patched_mode():
    stock = {"swap_writepage": [640, 16, 0, 0], "try_to_unmap_one": [500, 40, 0, 0]}
    on = {"swap_writepage": [640, 16, 0, 0], "try_to_unmap_one": [100, 3, 0, 0],
          "unmap_anon_batch_to_swap": [90, 3, 0, 0], "x": [1, 1, 0, 0]}
    off = {"swap_writepage": [640, 16, 0, 0], "try_to_unmap_one": [510, 40, 0, 0]}
    text = profile.most_table([("stock", stock), ("on", on), ("off", off)], 3)
    lines = text.splitlines()
    assert lines[0].split()[0] == "function" and len(lines) == 4
    assert [ln.split()[0] for ln in lines[1:]] == ["swap_writepage", "try_to_unmap_one",
                                                  "unmap_anon_batch_to_swap"]
    assert lines[2].split()[1:] == ["500", "100", "510"]
    assert lines[3].split()[1:] == ["0", "90", "0"]
