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


is_cold = testsummary.is_cold


def kind(data):
    """The bench time a manifest gives: its job, " --stock" when it booted
    the stock kernels too (a manifest from before the option: every bench
    did), and " cold" or " warm" for the main job (warm: every compilation
    from ccache; a main job between the two, some of it compiled, is
    neither)."""
    job = data.get("job")
    if job not in ("main", "full"):
        return job
    job += " --stock" if data.get("stock", True) else ""
    if not job.startswith("main"):
        return job
    if is_cold(data):
        return job + " cold"
    return job + " warm" if data.get("compiled") == 0 else job


KINDS = ("main cold", "main warm", "main", "main --stock cold", "main --stock warm",
         "main --stock", "full", "full --stock")


def stored(results_dir):
    """{kind(): (written, directory name, manifest)} of the newest stored
    bench of each kind that passed and recorded its time, on the lab's own
    kernels (not 'lab bench --kernel-config debian')."""
    newest = {}
    for m in sorted(Path(results_dir).glob("*/manifest.json")):
        try:
            data = json.loads(m.read_text())
        except json.JSONDecodeError:
            continue
        job = kind(data)
        if job not in KINDS or data.get("exit_status") != 0 \
                or "elapsed_s" not in data or data.get("variant", "default") != "default":
            continue
        key = (data.get("written", ""), m.parent.name)
        if job not in newest or key > newest[job][:2]:
            newest[job] = key + (dict(data, boots=_boots(m.parent)),)
    return newest


def _boots(d):
    """(boots, boots reused from the stored stock boots) of a results
    directory's boots.json, or None without one."""
    try:
        boots = json.loads((d / "boots.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return len(boots), sum(1 for b in boots if b.get("reused"))


def command(kind_):
    """How the README names a kind(): the command, then "cold" or "warm"."""
    words = kind_.split(" ")
    flags = [" --full"] if words[0] == "full" else []
    flags += [" " + w for w in words[1:] if w.startswith("--")]
    warmth = [w for w in words[1:] if not w.startswith("--")]
    return f"`lab bench{''.join(flags)}`" + (f" {warmth[0]}" if warmth else "")


def sentence(job, entry):
    written, name, data = entry
    arches = " and ".join(data.get("arches", []))
    if job.endswith(" cold"):
        how = (", cold: a new machine, ccache empty and no kernel built, "
               f"{data['compiled']:,} compilations")
    else:
        how = testsummary.warmth(data.get("compiled"))
    boots = data.get("boots")
    if boots and boots[1]:
        how += (f", {boots[1]} of its {boots[0]} boots the stored boots of the "
                "same stock kernels, image and plan (not run again)")
    return (f"{command(job)} ({arches}, commit {data.get('lab_commit', '?')[:7]}, "
            f"{written[:10]}): {mmss(data['elapsed_s'])} on the project's machine"
            f"{how} ([results/{name}](docs/results/{name}/report.md))")


def readme_block(results_dir):
    """The README's sentence: the newest cold and warm main job and --full
    run, without and with --stock; a main job neither cold nor warm only
    when neither is stored."""
    found = stored(results_dir)
    kinds = [k for k in KINDS if k in found
             and (k not in ("main", "main --stock")
                  or not ({k + " cold", k + " warm"} & found.keys()))]
    lines = [sentence(k, found[k]) for k in kinds]
    missing = [command(k) + (" (a new machine)" if k == "main cold" else "")
               for k in ("main cold", "main warm", "full") if k not in found]
    text = "Stored bench times: " + ("; ".join(lines) + "." if lines else "none yet.")
    if missing and lines:
        listed = ", ".join(missing[:-1]) + " or " + missing[-1] if len(missing) > 1 \
            else missing[0]
        text += f" No stored run of {listed} yet."
    return f"{BEGIN}\n{text}\n{END}"


def replace_block(text, block):
    return blocks.replace(text, BEGIN, END, block, "bench-time")
