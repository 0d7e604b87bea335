"""Host unit tests of the lab's module structure: each module imports on its
own, the lab's imports have no cycle, and 'lab test' and 'lab harden' do
not import each other (what both use lives in tally, testboot and
suites)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parent.parent / "lab"


def module_name(path):
    """lab/x.py -> 'lab.x', lab/p/__init__.py -> 'lab.p'."""
    parts = path.relative_to(LAB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {module_name(p): p for p in sorted(LAB.rglob("*.py"))}
MODULES = sorted(n for n in FILES if not n.endswith(".__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_alone(name):
    # a fresh interpreter per module, so no other import order hides a cycle
    p = subprocess.run([sys.executable, "-c",
                        f"import importlib; importlib.import_module({name!r})"],
                       cwd=LAB.parent, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def imported(name):
    """The lab modules a lab module imports, anywhere in it, also inside
    functions ('from . import x', 'from .x import y', 'from .. import x',
    'from lab.x import y', 'import lab.x'), as full names ('lab.x')."""
    path = FILES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom):
            if n.level:
                parts = package.split(".")
                base = parts[:len(parts) - (n.level - 1)]
                target = ".".join(base + ([n.module] if n.module else []))
            else:
                target = n.module or ""
            if target.split(".")[0] != "lab":
                continue
            for a in n.names:
                sub = f"{target}.{a.name}"
                found.add(sub if sub in FILES else target)
        elif isinstance(n, ast.Import):
            found.update(a.name for a in n.names if a.name.split(".")[0] == "lab")
    return found


def import_graph():
    """{module: the lab modules it imports} of every module of lab/."""
    return {name: imported(name) for name in FILES}


def find_cycle(graph):
    """A cycle of the graph as [a, b, ..., a], or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == "open":
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        state[n] = "done"
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_imported_sees_relative_imports():
    assert {"lab.build", "lab.results", "lab.run"} <= imported("lab.testboot")
    assert "lab.tally" in imported("lab.harden")
    assert "lab.source" in imported("lab.build")        # inside a function
    assert "lab.report" in imported("lab.here")         # inside a function


def test_find_cycle_sees_a_circle_through_a_function_import():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_every_import_names_a_lab_module():
    graph = import_graph()
    unknown = sorted(f"{a} -> {b}" for a, deps in graph.items() for b in deps
                     if b not in FILES)
    assert not unknown, unknown


def test_the_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_harden_and_testcmd_do_not_import_each_other():
    assert "lab.testcmd" not in imported("lab.harden")
    assert "lab.harden" not in imported("lab.testcmd")


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
