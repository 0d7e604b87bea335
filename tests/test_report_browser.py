# SPDX-License-Identifier: GPL-2.0-only
"""The bench report as a user sees it: report.html opened in headless
Chromium, its screenshot read back pixel by pixel.

Proves that the page renders its Markdown (no raw "![", "**" or "###"
left in the text a browser shows) and that the plots load in place: the
colour the per-workload figure draws "switch on" with covers a sizeable
area of the screenshot, and none of it with the figures removed (the
control that shows the check can fail).
"""

import re
import shutil
import subprocess

import pytest

from test_bench import rec

from lab.guest import workloads
from lab.outputs import plots, report

WINDOW = (1400, 3200)


def chromium():
    exe = shutil.which("chromium")
    if not exe:
        pytest.fail("chromium not found: 'lab deps --install' installs it")
    return exe


def browse(page, *args):
    """Run headless Chromium on a file; its stdout."""
    p = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                        *args, page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def pixels_of(png, colour):
    """How many pixels of a PNG are within a few levels of an #rrggbb."""
    import matplotlib.image
    import numpy

    img = matplotlib.image.imread(str(png))[:, :, :3] * 255
    want = numpy.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((numpy.abs(img - want).max(axis=2) <= 6).sum())


@pytest.fixture
def bench_dir(tmp_path):
    ws = [workloads.BY_NAME["mremap-64k"], workloads.BY_NAME["mremap-4k"]]
    runs = [rec(w.name, m, i, 1000 - 300 * (m == "on") + i, f, a, mremap_ns=333)
            for a in ("x86_64", "arm64") for w in ws for i in range(3)
            for m, f in (("off", "patched"), ("on", "patched"), ("stock", "stock"))]
    report.write(tmp_path, runs, ws, ["x86_64", "arm64"], lambda s: True)
    return tmp_path


def test_report_page_renders_its_markdown(bench_dir):
    dom = browse(bench_dir / "report.html", "--dump-dom")
    text = re.sub(r"<[^>]+>", " ", dom)
    for raw in ("![", "**", "### ", "# foliobatch"):
        assert raw not in text, f"raw Markdown {raw!r} in the page"
    assert dom.count("<img") == 2 and "<table>" in dom and "<li>" in dom
    # the figures sit where report.md has them: before the first arch's tables
    assert dom.index('src="workloads.png"') < dom.index("<h3>x86_64</h3>")


def test_report_plots_show_in_the_browser(bench_dir):
    on = plots.MODE_COLOURS["on"]
    shot = bench_dir / "shot.png"
    browse(bench_dir / "report.html", f"--screenshot={shot}")
    seen = pixels_of(shot, on)
    # the control: the same page without its figures has none of that colour
    for png in ("workloads.png", "summary.png"):
        (bench_dir / png).unlink()
    bare = bench_dir / "bare.png"
    browse(bench_dir / "report.html", f"--screenshot={bare}")
    assert pixels_of(bare, on) == 0
    assert seen >= 300, f"only {seen} pixels of the plots' {on} in the screenshot"
