"""Host unit tests of the lab's module structure: each module imports on its
own, and 'lab test' and 'lab harden' do not import each other (what both
use lives in tally, testboot and suites)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parent.parent / "lab"
MODULES = sorted(p.stem for p in LAB.glob("*.py") if p.stem != "__main__")


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_alone(name):
    # a fresh interpreter per module, so no other import order hides a cycle
    p = subprocess.run([sys.executable, "-c",
                        f"import importlib; importlib.import_module('lab.{name}')"],
                       cwd=LAB.parent, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def imported(name):
    """Names of the lab modules a lab module imports, anywhere in it
    ('from . import x', 'from .x import y', 'from lab import x', 'import lab.x')."""
    tree = ast.parse((LAB / f"{name}.py").read_text())
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            package = "lab" if n.level == 1 else n.module or ""
            module = n.module if n.level == 1 else None
            if package.split(".")[0] != "lab":
                continue
            if n.level == 0 and "." in package:
                module = package.split(".")[1]
            if module:
                found.add(module.split(".")[0])
            else:
                found.update(a.name for a in n.names)
        elif isinstance(n, ast.Import):
            found.update(a.name.split(".")[1] for a in n.names
                         if a.name.startswith("lab."))
    return found


def test_imported_sees_relative_imports():
    assert {"build", "results", "run"} <= imported("testboot")
    assert "tally" in imported("harden")


def test_harden_and_testcmd_do_not_import_each_other():
    assert "testcmd" not in imported("harden")
    assert "harden" not in imported("testcmd")


def test_fresh_copies_the_machines_ca_certificates(tmp_path, monkeypatch):
    from lab import fresh
    cas = tmp_path / "cas"
    cas.mkdir()
    (cas / "proxy.crt").write_text("cert\n")
    (cas / "notes.txt").write_text("not a certificate\n")
    monkeypatch.setattr(fresh, "LOCAL_CAS", cas)
    root = tmp_path / "root"
    fresh.machine_cas(root)
    dest = root / cas.relative_to("/")
    assert [p.name for p in dest.iterdir()] == ["proxy.crt"]
