# SPDX-License-Identifier: GPL-2.0-only
from .cli import main

raise SystemExit(main())
