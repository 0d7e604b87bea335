# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of 'lab test --kcidb': the document made from result
rows is valid KCIDB I/O according to kcidb-io (installed by 'lab deps
--install' into work/pylib), and says what the rows say."""

import hashlib
import json

import pytest

from lab import cli
from lab.core.util import LabError
from lab.outputs import kcidb

ROWS = [
    ("pass", "host/tests.test_deps.test_x", ""),
    ("pass", "export/debian-quilt", "30 patches"),
    ("pass", "x86_64/default/stock/sanity.boots", ""),
    ("pass", "x86_64/default/patched/pt_reclaim.vmpte after 512 rounds", ""),
    ("stockfail", "x86_64/default/patched/uffd-unit-tests.events on anon",
     "fails on stock too"),
    ("flaky", "arm64/default/patched/mremap_test.5MB", "passed when re-run"),
    ("pass", "arm64/default/patched-cortex-a72/reclaim_tlb.on", ""),
    ("pass", "arm64/default/patched-bootparam/switches.values", ""),
    ("fail", "arm64/default/patched/boot", "no LAB-READY"),
    ("pass", "arm64/debug/harden/kernel-reports", "0 reports"),
    ("fail", "arm64/debug/harden-suite-stock/cow/Basic COW", "an own test fails on stock"),
    ("pass", "check/riscv64/defconfig", "directories only"),
    ("skip", "check/riscv64/defconfig/sparse", "sparse rejects -march"),
    ("fail", "check/x86_64/lab-pt-reclaim-off", "1 new warning"),
]


@pytest.fixture
def schema():
    major, minor = kcidb.schema_version()
    return type("Schema", (), {"major": major, "minor": minor})


@pytest.fixture
def patches(tmp_path):
    files = []
    for i, text in enumerate(("one\n", "two\n")):
        f = tmp_path / f"000{i}-x.patch"
        f.write_text(text)
        files.append(f)
    return files


def doc_of(rows, schema, patches):
    return kcidb.to_kcidb(rows, schema.major, schema.minor, series=patches,
                          base="6.12.117-1~deb12u1")


def test_the_document_is_valid_kcidb(schema, patches):
    kcidb.validate(doc_of(ROWS, schema, patches))


def test_an_invalid_document_is_refused(schema, patches):
    doc = doc_of(ROWS, schema, patches)
    doc["tests"][0]["status"] = "PASSED"
    with pytest.raises(LabError, match="not valid KCIDB"):
        kcidb.validate(doc)


def test_patchset_hash_is_the_schemas(patches):
    # 'sha256sum *.patch | cut -c-64 | sha256sum | cut -c-64'
    lines = "".join(hashlib.sha256(f.read_bytes()).hexdigest() + "\n" for f in patches)
    assert kcidb.patchset_hash(patches) == hashlib.sha256(lines.encode()).hexdigest()
    assert kcidb.patchset_hash([]) == ""


def test_rows_map_to_builds_and_tests(schema, patches):
    doc = doc_of(ROWS, schema, patches)
    stock, patched = doc["checkouts"]
    assert stock["patchset_hash"] == "" and len(patched["patchset_hash"]) == 64
    builds = {b["id"]: b for b in doc["builds"]}
    assert set(builds) == {"foliobatch:x86_64-default-stock",
                           "foliobatch:x86_64-default-patched",
                           "foliobatch:arm64-default-patched",
                           "foliobatch:arm64-debug-patched",
                           "foliobatch:arm64-debug-stock",
                           "foliobatch:check-riscv64-defconfig",
                           "foliobatch:check-x86_64-lab-pt-reclaim-off"}
    assert builds["foliobatch:x86_64-default-stock"]["checkout_id"] == stock["id"]
    assert builds["foliobatch:check-x86_64-lab-pt-reclaim-off"]["status"] == "FAIL"
    assert builds["foliobatch:check-riscv64-defconfig"]["status"] == "PASS"
    tests = {t["misc"]["lab_name"]: t for t in doc["tests"]}
    # host rows ran on no kernel; check rows are builds, not tests
    assert not any(n.startswith(("host/", "export/", "check/")) for n in tests)
    assert len(tests) == 9
    t = tests["x86_64/default/patched/uffd-unit-tests.events on anon"]
    assert t["status"] == "FAIL" and t["misc"]["lab_status"] == "STOCKFAIL"
    assert t["path"] == "foliobatch.uffd-unit-tests.events_on_anon"
    assert tests["arm64/default/patched/mremap_test.5MB"]["status"] == "PASS"
    a72 = tests["arm64/default/patched-cortex-a72/reclaim_tlb.on"]
    assert a72["build_id"] == "foliobatch:arm64-default-patched"
    assert "cortex-a72" in a72["environment"]["comment"]
    assert tests["arm64/debug/harden/kernel-reports"]["build_id"] == \
        "foliobatch:arm64-debug-patched"
    # lab harden's suite boots stock too: its rows go to the stock build
    assert tests["arm64/debug/harden-suite-stock/cow/Basic COW"]["build_id"] == \
        "foliobatch:arm64-debug-stock"
    assert len({t["id"] for t in doc["tests"]}) == len(doc["tests"])


def test_write_and_the_command_line(tmp_path, monkeypatch):
    out = tmp_path / "kcidb.json"
    assert kcidb.write(ROWS, out) == (7, 9)
    kcidb.validate(json.loads(out.read_text()))
    seen = []
    from lab.commands import harden, test as testcmd
    from lab.core import config
    from lab.commands import check
    from lab.kernel import export
    monkeypatch.setattr(testcmd, "main", lambda tally, *a, **k: tally.rows.extend(ROWS))
    monkeypatch.setattr(harden, "short_form", lambda *a: None)
    monkeypatch.setattr(check, "ci_form", lambda *a, **k: None)
    monkeypatch.setattr(export, "test_row", lambda tally: None)
    monkeypatch.setattr(kcidb, "write", lambda rows, path: seen.append(path) or (1, 1))
    monkeypatch.setattr(config, "WORK", tmp_path)
    cli.main(["test", "--kcidb", str(out)])
    assert seen == [out]
