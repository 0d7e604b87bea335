# SPDX-License-Identifier: GPL-2.0-only
"""Core: the bottom layer, which every other package of the lab may import.

config (pins, paths, per-arch facts), util (running commands, messages),
deps (the host's packages, checked and installed) and tally (the result
rows of 'lab test', 'lab harden' and 'lab check', and their summary).
Core imports nothing else of the lab.
"""
