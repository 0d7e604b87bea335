# SPDX-License-Identifier: GPL-2.0-only
"""The README's bench times come from stored manifests (lab/outputs/jobtime.py)."""

import json

from lab.core import config
from lab.outputs import jobtime


def manifest(d, **kw):
    d.mkdir(parents=True)
    data = dict(job="main", exit_status=0, elapsed_s=754, compiled=0, written="2026-11-29 09:00:00",
                lab_commit="abcdef1234", arches=["x86_64", "arm64"], stock=False)
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
    assert "`lab bench` warm (x86_64 and arm64, commit abcdef1, 2026-11-29): 12m34s" in block
    assert "warm: every compilation from ccache" in block
    assert "No stored run of `lab bench` cold (a new machine) yet" in block
    assert "`lab bench --full`" in block and "121m40s" in block and "5,123 compilations" in block
    assert "b-main-failed" not in block and "c-named" not in block
    assert "e-main-debian" not in block
    assert "none yet" in jobtime.readme_block(tmp_path / "nothing")


def test_cold_is_a_new_machine_and_both_times_are_given(tmp_path):
    """Cold: compilations, ccache empty and no kernel built when the bench
    started (its manifest's start); a run that compiled some of it beside
    a filled ccache or built kernels is neither cold nor warm."""
    empty = {"ccache_files": 0, "kernels_built": []}
    manifest(tmp_path / "a-warm", written="2026-11-29 09:00:00")
    manifest(tmp_path / "b-partial", compiled=40, written="2026-11-29 10:00:00",
             start={"ccache_files": 30000, "kernels_built": []})
    manifest(tmp_path / "c-built", compiled=40, written="2026-11-29 11:00:00",
             start={"ccache_files": 0, "kernels_built": ["x86_64/stock"]})
    block = jobtime.readme_block(tmp_path)
    assert "a-warm" in block and "b-partial" not in block and "c-built" not in block
    assert "No stored run of `lab bench` cold" in block
    manifest(tmp_path / "d-cold", compiled=5200, elapsed_s=2400,
             written="2026-11-29 08:00:00", start=empty)
    block = jobtime.readme_block(tmp_path)
    assert "`lab bench` cold (x86_64 and arm64, commit abcdef1, 2026-11-29): 40m00s" in block
    assert "5,200 compilations" in block and "d-cold" in block and "a-warm" in block
    assert "No stored run of `lab bench` cold" not in block
    # no manifest start (older benches): never cold
    assert not jobtime.is_cold({"compiled": 5200})
    # only a partial run stored: it is given, as before
    for d in ("a-warm", "d-cold"):
        (tmp_path / d / "manifest.json").unlink()
    assert "b-partial" in jobtime.readme_block(tmp_path) or \
        "c-built" in jobtime.readme_block(tmp_path)


def test_a_warm_time_says_how_many_boots_it_did_not_run(tmp_path):
    manifest(tmp_path / "a-main", written="2026-11-29 09:00:00")
    (tmp_path / "a-main" / "boots.json").write_text(json.dumps(
        [{"name": "x86_64-bench-patched-r0", "reused": ""},
         {"name": "x86_64-bench-stock-r0", "reused": "/w/stock-cache/x.json"}]))
    block = jobtime.readme_block(tmp_path)
    assert "1 of its 2 boots the stored boots of the same stock kernels" in block


def test_a_bench_with_stock_is_timed_apart(tmp_path):
    """'lab bench --stock' builds and boots two more kernels: its time is
    given as its own, and a manifest from before the option (no "stock":
    every bench booted stock then) counts as one with --stock."""
    empty = {"ccache_files": 0, "kernels_built": []}
    manifest(tmp_path / "a-cold-stock", compiled=4377, elapsed_s=2929, start=empty,
             stock=True, written="2026-11-30 03:56:00")
    manifest(tmp_path / "b-warm-old", written="2026-11-30 04:43:00")
    data = json.loads((tmp_path / "b-warm-old" / "manifest.json").read_text())
    del data["stock"]
    (tmp_path / "b-warm-old" / "manifest.json").write_text(json.dumps(data))
    block = jobtime.readme_block(tmp_path)
    assert "`lab bench --stock` cold (x86_64 and arm64" in block and "48m49s" in block
    assert "`lab bench --stock` warm (x86_64 and arm64" in block and "b-warm-old" in block
    assert "No stored run of `lab bench` cold (a new machine), `lab bench` warm or " \
        "`lab bench --full` yet" in block
    manifest(tmp_path / "c-cold", compiled=2100, elapsed_s=1900, start=empty,
             written="2026-11-30 16:00:00")
    block = jobtime.readme_block(tmp_path)
    assert "`lab bench` cold (x86_64 and arm64, commit abcdef1, 2026-11-30): 31m40s" in block
    assert "48m49s" in block
