# SPDX-License-Identifier: GPL-2.0-only
"""Commands: the logic of each lab command that does more than one call.

test ('lab test'), harden, bench, here ('lab bench --bundle'), reportdir
('lab report'), profile, fresh and lavarun ('lab lava --run').  Imports
core, kernel, guest and outputs; cli imports these.
"""
