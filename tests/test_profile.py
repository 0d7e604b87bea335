"""Host unit tests of lab/profile.py: block counts -> functions -> diff."""

from lab import profile

STARTS = [0x1000, 0x1100, 0x1200]
NAMES = ["alpha", "beta", "gamma"]


def test_parse_blocks_adds_up_retranslated_blocks():
    # the same block translated twice has two counters in the plugin's file
    text = "1000 4 10\n1000 4 5\n1104 3 2\n"
    assert profile.parse_blocks(text) == {0x1000: [60, 15], 0x1104: [6, 2]}


def test_by_function_counts_calls_only_at_the_first_instruction():
    blocks = {0x1000: [60, 15], 0x1010: [20, 5], 0x1104: [6, 2], 0x1200: [7, 1]}
    funcs = profile.by_function(blocks, STARTS, NAMES)
    assert funcs == {"alpha": [80, 15], "beta": [6, 0], "gamma": [7, 1]}


def test_by_function_names_addresses_below_every_symbol():
    assert profile.by_function({0x10: [3, 1]}, STARTS, NAMES) == {"?": [3, 0]}


def test_diff_table_orders_by_absolute_delta_and_keeps_totals():
    base = {"alpha": [100, 10], "beta": [50, 5], "same": [7, 1]}
    other = {"alpha": [90, 10], "beta": [80, 5], "new": [5, 1], "same": [7, 1]}
    rows, totals = profile.diff_table(base, other, top=2)
    assert [r[0] for r in rows] == ["beta", "alpha"]
    assert rows[0] == ("beta", 50, 80, 30, 5, 5)
    assert totals == (157, 182)
    text = profile.format_table(rows, totals, "stock", "patched")
    assert "+25" in text and "(+15.92%)" in text
