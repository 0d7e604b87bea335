# SPDX-License-Identifier: GPL-2.0-only
"""Blocks: the parts of README.md the lab makes, each between a BEGIN and an
END marker line, replaced whole (testsummary.py, headline.py)."""

import re


def pattern(begin, end):
    """The regular expression of a block, markers included."""
    return re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)


def replace(text, begin, end, block, what):
    """text with its begin..end block replaced by block; ValueError naming
    what when text has no such block."""
    pat = pattern(begin, end)
    if not pat.search(text):
        raise ValueError(f"no {what} block (its BEGIN and END markers)")
    return pat.sub(lambda m: block, text, count=1)


def outside(text, *markers):
    """text without its blocks, markers given as (begin, end) pairs."""
    for begin, end in markers:
        text = pattern(begin, end).sub("", text)
    return text
