# SPDX-License-Identifier: GPL-2.0-only
"""Kernel: fetching, patching, building and checking kernels.

source (the pinned source and the series), build (configs, kernel builds),
check ('lab check': the series in more configs and arches) and export (the
series as a quilt queue for Debian).  Imports core only.
"""
