# SPDX-License-Identifier: GPL-2.0-only
"""foliobatch lab: build, boot and test the foliobatch series on Linux 6.12.

Packages by role, each importing only those before it (and its own):
  core      config, util, deps, tally: what everything may import;
  kernel    fetch and patch the source, build and check kernels, export;
  guest     guest images, QEMU boots, plans, console parsing, stored boots;
  outputs   the bench report, KCIDB I/O, LAVA jobs;
  commands  the logic of 'lab test', bench, harden, profile, ...;
  cli       the command line (python3 -m lab), one module per command.
tests/test_modules.py checks the order and that no import closes a circle.
"""
