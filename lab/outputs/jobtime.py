# SPDX-License-Identifier: GPL-2.0-only
"""Job time: how long the newest stored 'lab bench' main job and --full
run took, from the manifests of the measurements in docs/results/ (their
job, elapsed_s and compiled, written by the bench), for the README
('lab report --history' writes the block; a host test checks it)."""

import json
from pathlib import Path

from ..core.util import mmss
from . import blocks, testsummary

BEGIN = "<!-- bench-time: made by 'lab report --history' from docs/results/*/manifest.json; do not edit -->"
END = "<!-- /bench-time -->"


def stored(results_dir):
    """{job: (written, directory name, manifest)} of the newest stored
    bench of each job ("main", "full") that passed and recorded its time,
    on the lab's own kernels (not 'lab bench --kernel-config debian')."""
    newest = {}
    for m in sorted(Path(results_dir).glob("*/manifest.json")):
        try:
            data = json.loads(m.read_text())
        except json.JSONDecodeError:
            continue
        job = data.get("job")
        if job not in ("main", "full") or data.get("exit_status") != 0 \
                or "elapsed_s" not in data or data.get("variant", "default") != "default":
            continue
        key = (data.get("written", ""), m.parent.name)
        if job not in newest or key > newest[job][:2]:
            newest[job] = key + (data,)
    return newest


def sentence(job, entry):
    written, name, data = entry
    cmd = "lab bench" if job == "main" else "lab bench --full"
    arches = " and ".join(data.get("arches", []))
    return (f"`{cmd}` ({arches}, commit {data.get('lab_commit', '?')[:7]}, "
            f"{written[:10]}): {mmss(data['elapsed_s'])} on the project's machine"
            f"{testsummary.warmth(data.get('compiled'))} "
            f"([results/{name}](docs/results/{name}/report.md))")


def readme_block(results_dir):
    found = stored(results_dir)
    lines = [sentence(job, found[job]) for job in ("main", "full") if job in found]
    missing = [f"`lab bench{' --full' if job == 'full' else ''}`"
               for job in ("main", "full") if job not in found]
    text = "Stored bench times: " + ("; ".join(lines) + "." if lines else "none yet.")
    if missing and lines:
        text += f" No stored run of {' or '.join(missing)} yet."
    return f"{BEGIN}\n{text}\n{END}"


def replace_block(text, block):
    return blocks.replace(text, BEGIN, END, block, "bench-time")
