# SPDX-License-Identifier: GPL-2.0-only
"""Every source file of the lab says its licence (an SPDX line near its top),
and LICENSE holds the text."""

import subprocess

from lab.core import config

SOURCES = ("lab/", "guest/", "tests/", "bin/", ".ci/")
SUFFIXES = (".py", ".c", ".h", ".sh")


def sources():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          *SOURCES], cwd=config.REPO, capture_output=True, text=True,
                         check=True).stdout.split()
    return [f for f in out if f.endswith(SUFFIXES) or f.startswith(("bin/", ".ci/"))
            or f in ("guest/init", "guest/Makefile")]


def test_every_source_file_has_an_spdx_line():
    files = sources()
    assert len(files) > 100
    missing = [f for f in files
               if "SPDX-License-Identifier: GPL-2.0" not in
               "\n".join((config.REPO / f).read_text().splitlines()[:3])]
    assert missing == []


def test_the_licence_text_is_there():
    text = (config.REPO / "LICENSE").read_text()
    assert "GPL-2.0-only" in text and "GNU GENERAL PUBLIC LICENSE" in text \
        and "Version 2, June 1991" in text
