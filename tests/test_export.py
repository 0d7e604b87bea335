# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of 'lab export --debian': the options found in the
patches, the queue's layout and the lines for Debian's files.  The quilt
run against the real source is the row export/debian-quilt of 'lab test'."""

import pytest

from lab import cli
from lab.core import config
from lab.core.util import LabError
from lab.kernel import export, source

KCONFIG_PATCH = """\
+config ARCH_SUPPORTS_PT_RECLAIM
+\tdef_bool n
+
+config PT_RECLAIM
+\tbool "Free empty user PTE pages on MADV_DONTNEED"
+\tdefault y
+menuconfig FOO_MENU
+\tbool "A menu"
 config NOT_ADDED
 \tbool "context line, not added"
"""


def test_added_options_are_the_prompted_ones():
    assert export.added_options([KCONFIG_PATCH]) == ["CONFIG_PT_RECLAIM",
                                                     "CONFIG_FOO_MENU"]


def test_every_option_the_series_adds_has_debian_config_lines():
    added = export.added_options(f.read_text() for f in source.series_files())
    assert "CONFIG_PT_RECLAIM" in added
    assert set(added) <= set(export.DEBIAN_CONFIG)


OWN = "Subject: [PATCH] x\n\nWhy.\n\nUpstream: none (the lab's own)\n---\n"


@pytest.fixture
def series(tmp_path, monkeypatch):
    patches = tmp_path / "patches"
    patches.mkdir()
    for name, text in (("0001-a.patch", OWN + "a\n"), ("0002-b.patch", OWN + KCONFIG_PATCH)):
        (patches / name).write_text(text)
    (patches / "series").write_text("0001-a.patch\n0002-b.patch\n")
    monkeypatch.setattr(config, "PATCHES", patches)
    monkeypatch.setattr(config, "SERIES", patches / "series")
    return patches


def test_write_lays_out_the_queue(series, tmp_path, monkeypatch):
    monkeypatch.setattr(export, "DEBIAN_CONFIG",
                        dict(export.DEBIAN_CONFIG, CONFIG_FOO_MENU=("y", ("amd64",))))
    dest = tmp_path / "out"
    written = export.write(dest)
    queue = dest / "debian/patches/features/all/foliobatch"
    assert [p.name for p in written] == ["0001-a.patch", "0002-b.patch"]
    assert (queue / "0002-b.patch").read_text() == \
        "Subject: [PATCH] x\nOrigin: vendor, foliobatch\nForwarded: no (the lab's own)" \
        "\n\nWhy.\n\nUpstream: none (the lab's own)\n---\n" + KCONFIG_PATCH
    assert (dest / "series-lines").read_text() == \
        "features/all/foliobatch/0001-a.patch\nfeatures/all/foliobatch/0002-b.patch\n"
    lines = (dest / "config-lines").read_text().splitlines()
    assert lines.count("CONFIG_PT_RECLAIM=y") == 2
    assert "# debian/config/arm64/config" in lines


def test_an_option_without_debian_lines_is_an_error(series, tmp_path):
    with pytest.raises(LabError, match="CONFIG_FOO_MENU"):
        export.write(tmp_path / "out")


def test_lab_export_needs_a_directory(capsys):
    with pytest.raises(SystemExit):
        cli.main(["export"])
