# SPDX-License-Identifier: GPL-2.0-only
"""Outputs: what the lab's results are written as for people and other labs.

report (bench tables, plots and page), kcidb (KCIDB I/O) and lava (LAVA job
definitions).  Imports core, kernel and guest; the commands import these,
never the other way round.
"""
