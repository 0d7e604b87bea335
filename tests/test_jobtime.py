# SPDX-License-Identifier: GPL-2.0-only
"""The README's bench times come from stored manifests (lab/outputs/jobtime.py)."""

import json

from lab.core import config
from lab.outputs import jobtime


def manifest(d, **kw):
    d.mkdir(parents=True)
    data = dict(job="main", exit_status=0, elapsed_s=754, compiled=0, written="2026-11-29 09:00:00",
                lab_commit="abcdef1234", arches=["x86_64", "arm64"])
    data.update(kw)
    (d / "manifest.json").write_text(json.dumps(data))


def test_the_readme_block_is_what_the_stored_manifests_give():
    results = config.REPO / "docs" / "results"
    text = (config.REPO / "README.md").read_text()
    assert jobtime.replace_block(text, jobtime.readme_block(results)) == text, \
        "README's bench times are stale: lab report --history"
    head = "\n".join(text.splitlines()[:60])
    assert jobtime.BEGIN in head and "test-summary" in head


def test_only_a_bench_that_passed_and_timed_itself_counts(tmp_path):
    manifest(tmp_path / "a-main", written="2026-11-29 09:00:00")
    manifest(tmp_path / "b-main-failed", exit_status=1, written="2026-11-29 10:00:00")
    manifest(tmp_path / "c-named", job="named", written="2026-11-29 11:00:00")
    manifest(tmp_path / "d-full", job="full", elapsed_s=7300, compiled=5123)
    # the main job on kernels of Debian's config is not the lab's main job
    manifest(tmp_path / "e-main-debian", variant="debian", written="2026-11-29 12:00:00")
    block = jobtime.readme_block(tmp_path)
    assert "`lab bench` (x86_64 and arm64, commit abcdef1, 2026-11-29): 12m34s" in block
    assert "warm: every compilation from ccache" in block
    assert "`lab bench --full`" in block and "121m40s" in block and "5,123 compilations" in block
    assert "b-main-failed" not in block and "c-named" not in block
    assert "e-main-debian" not in block
    assert "none yet" in jobtime.readme_block(tmp_path / "nothing")
