# SPDX-License-Identifier: GPL-2.0-only
"""A scratch copy of what 'lab report --history' reads and writes in the
lab's checkout, for the host tests that run it with config.REPO set to
the copy: the README, docs/testing.md, docs/known-costs.md, docs/results,
the lab's check code and the boot leaves' code (check_records_block()
hashes them)."""
import shutil

from lab.commands import committests, debianboot, mutation
from lab.core import config
from lab.kernel import check

BOOT_CODE = (*debianboot.CODE, *committests.CODE, *mutation.CODE, *mutation.MUTATION_FILES)
DOCS = ("README.md", "docs/testing.md", "docs/known-costs.md", *check.CHECK_CODE,
        *sorted(set(BOOT_CODE)))


def report_repo(root):
    """Fill @root with the copy; returns its docs/results."""
    results = root / "docs" / "results"
    shutil.copytree(config.REPO / "docs" / "results", results)
    for rel in DOCS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(config.REPO / rel, root / rel)
    return results
