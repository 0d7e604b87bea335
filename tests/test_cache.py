# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of the stock-boot cache: its key, its entries, and how
'lab test' reuses a stored stock boot."""

import os

import pytest

from lab.commands import test as testcmd
from lab.core import config
from lab.guest import cache, run

ARGS = {"arch": "x86_64", "variant": "default", "flavour": "stock", "mem_mb": 2048,
        "cpus": 2, "append": "", "timeout": 3600, "qemu": "QEMU emulator version 7.2",
        "qemu_cmd": ["qemu-system-x86_64", "-M", "q35", "-m", "2048"]}
PLAN = ". /lab/lib.sh\nlab_plan 1\nlab_run sanity 600 /lab/tests/sanity\n"


@pytest.fixture
def inputs(tmp_path):
    kernel, image = tmp_path / "bzImage", tmp_path / "base.cpio"
    kernel.write_bytes(b"kernel v1")
    image.write_bytes(b"image v1")
    return {"kernel": kernel, "image": image}


def key(files, plan=PLAN, **args):
    return cache.key(files, plan, dict(ARGS, **args))[0]


def test_same_inputs_same_key(inputs, tmp_path):
    assert key(inputs) == key(inputs)
    # only the bytes count, not where the files are
    moved = tmp_path / "elsewhere"
    moved.write_bytes(inputs["kernel"].read_bytes())
    assert key(dict(inputs, kernel=moved)) == key(inputs)


def test_changed_kernel_bytes_change_the_key(inputs):
    before = key(inputs)
    inputs["kernel"].write_bytes(b"kernel v2")
    assert key(inputs) != before


def test_changed_image_bytes_change_the_key(inputs):
    before = key(inputs)
    inputs["image"].write_bytes(b"image v1 ")
    assert key(inputs) != before


def test_changed_plan_changes_the_key(inputs):
    assert key(inputs, PLAN.replace("600", "601")) != key(inputs)
    assert key(inputs, PLAN + "\n") != key(inputs)


@pytest.mark.parametrize("arg,value", [
    ("qemu_cmd", ["qemu-system-x86_64", "-M", "q35", "-m", "4096"]),
    ("qemu", "QEMU emulator version 8.0"),
    ("mem_mb", 4096), ("cpus", 1), ("append", "foliobatch=all=0"),
    ("arch", "arm64"), ("variant", "debug"), ("timeout", 600),
])
def test_changed_boot_args_change_the_key(inputs, arg, value):
    assert key(inputs, **{arg: value}) != key(inputs)


def test_key_inputs_record_digests_and_paths(inputs):
    k, rec = cache.key(inputs, PLAN, ARGS)
    assert rec["files"]["kernel"] == cache.file_hash(inputs["kernel"])
    assert rec["paths"]["image"] == str(inputs["image"])
    assert rec["args"] == ARGS and len(k) == 64


def fake_boot(tmp_path, text="LAB-READY: 6.12\nok 1 sanity\nLAB-EXIT: 0\n", name="c"):
    console = tmp_path / f"console-{name}.log"
    console.write_text(text)
    return run.Boot(console, 0, True, False, 174.0, ["qemu-system-x86_64", "-m", "2048"])


def test_a_hit_returns_what_was_stored(inputs, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "WORK", tmp_path / "work")
    k, rec = cache.key(inputs, PLAN, ARGS)
    assert cache.load("x86_64-default-stock", k) is None
    b = fake_boot(tmp_path)
    entry = cache.store("x86_64-default-stock", k, rec, b)
    assert entry.parent == tmp_path / "work" / "results" / "stock-cache"
    got_entry, got = cache.load("x86_64-default-stock", k)
    assert got_entry == entry
    assert (got.exit_code, got.ready, got.timed_out, got.wall, got.cmdline) == \
        (b.exit_code, b.ready, b.timed_out, b.wall, b.cmdline)
    # the console is a copy kept with the entry: a later boot that rewrites
    # work/logs/console-*.log does not change it
    b.console.write_text("overwritten by a later boot\n")
    assert got.text() == "LAB-READY: 6.12\nok 1 sanity\nLAB-EXIT: 0\n"
    assert got.console != b.console
    # another key, or another name, is a miss
    assert cache.load("x86_64-default-stock", "0" * 64) is None
    assert cache.load("arm64-default-stock", k) is None


def test_store_keeps_the_newest_entries_of_a_name(inputs, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "WORK", tmp_path / "work")
    keys = []
    for i in range(cache.KEEP + 2):
        inputs["kernel"].write_bytes(b"kernel %d" % i)
        k, rec = cache.key(inputs, PLAN, ARGS)
        entry = cache.store("x86_64-default-stock", k, rec, fake_boot(tmp_path))
        os.utime(entry, ns=(i * 10**9, i * 10**9))    # stored in order
        keys.append(k)
    cache.store("arm64-default-stock", keys[0], rec, fake_boot(tmp_path))
    left = [k for k in keys if cache.load("x86_64-default-stock", k)]
    assert left == keys[-cache.KEEP:]
    assert cache.load("arm64-default-stock", keys[0])   # other names untouched
    d = cache.cache_dir()
    assert len(list(d.glob("x86_64-*.console.log"))) == len(left)


def stock_inputs(monkeypatch, tmp_path, inputs, qemu_cmd):
    """stock_boot() with the kernel and image of the inputs fixture, a work
    directory in tmp_path and qemu_cmd for the QEMU command line."""
    monkeypatch.setattr(config, "WORK", tmp_path / "work")
    monkeypatch.setattr(testcmd.build, "image_path", lambda a, v, f: inputs["kernel"])
    monkeypatch.setattr(testcmd.image, "base_path", lambda a: inputs["image"])
    monkeypatch.setattr(testcmd.run, "qemu_version", lambda a: "QEMU 7.2")
    monkeypatch.setattr(testcmd.run, "qemu_cmd", qemu_cmd)


def test_stock_boot_reuses_a_stored_boot(inputs, tmp_path, monkeypatch, capsys):
    stock_inputs(monkeypatch, tmp_path, inputs, lambda *a, **kw: ["qemu", kw["mem_mb"]])
    boots = []

    def boot_and_parse(arch_name, flavour, variant, plan, tag, **kw):
        boots.append((flavour, plan, kw))
        return fake_boot(tmp_path, name=f"{len(boots)}")

    monkeypatch.setattr(testcmd, "boot_and_parse", boot_and_parse)
    first = testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 1 and boots[0][0] == "stock" and boots[0][2] == testcmd.TEST_BOOT
    again = testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 1
    out = capsys.readouterr().out
    assert "stock results reused from " in out and str(again.console) in out
    assert again.text() == first.text() and again.exit_code == first.exit_code
    testcmd.stock_boot("x86_64", "default", PLAN, use_cache=False)     # --no-cache
    assert len(boots) == 2
    inputs["image"].write_bytes(b"image v2")                           # new guest image
    testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 3


def test_a_failed_stock_boot_is_not_stored(inputs, tmp_path, monkeypatch):
    stock_inputs(monkeypatch, tmp_path, inputs, lambda *a, **kw: ["qemu"])
    boots = []

    def boot_and_parse(*a, **kw):
        boots.append(a)
        return fake_boot(tmp_path, "LAB-READY: 6.12\n[    1.000000] BUG: oops\n")

    monkeypatch.setattr(testcmd, "boot_and_parse", boot_and_parse)
    testcmd.stock_boot("x86_64", "default", PLAN)
    testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 2


def test_the_stock_key_holds_the_test_boots_accelerator(inputs, tmp_path, monkeypatch):
    """Stock and patched test boots run with the same TCG threading, and a
    stored stock boot made with another one is not reused."""
    stock_inputs(monkeypatch, tmp_path, inputs, lambda *a, **kw: ["qemu", kw["accel"]])
    boots = []
    monkeypatch.setattr(testcmd, "boot_and_parse", lambda *a, **kw: (
        boots.append(kw) or fake_boot(tmp_path, name=f"{len(boots)}")))
    testcmd.stock_boot("x86_64", "default", PLAN)
    assert boots[0]["accel"] == testcmd.TEST_ACCEL == "tcg,thread=single"
    testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 1
    monkeypatch.setitem(testcmd.TEST_BOOT, "accel", "tcg")
    testcmd.stock_boot("x86_64", "default", PLAN)
    assert len(boots) == 2 and boots[1]["accel"] == "tcg"


def test_qemu_cmd_passes_the_accelerator_as_given():
    cmd = run.qemu_cmd("x86_64", "K", "I", mem_mb=64, cpus=2, append="",
                       accel="tcg,thread=single")
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=single"
