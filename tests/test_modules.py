# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of the lab's module structure: each module imports on its
own, the lab's imports have no cycle and follow the layers of its
packages, and 'lab test' and 'lab harden' do not import each other (what
both use lives in tally, testboot, verdicts and suites)."""

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
    assert {"lab.kernel.build", "lab.guest.results", "lab.guest.run"} <= \
        imported("lab.guest.testboot")
    assert "lab.core.tally" in imported("lab.commands.harden")
    assert "lab.kernel.source" in imported("lab.kernel.build")        # in a function
    assert "lab.outputs.report" in imported("lab.commands.here")      # in a function
    assert "lab.cli" in imported("lab.__main__")


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


# The layers, bottom first: a module imports from its own package or from
# a package before it, never from one after it.  Outputs (the report, KCIDB
# I/O, LAVA jobs) are what the commands write: they may use kernels and
# guests, and the commands import them, not the other way round.
LAYERS = ("core", "kernel", "guest", "outputs", "commands", "cli")
# lab itself (its docstring) and 'python3 -m lab', above every layer
TOP = ("lab", "lab.__main__")


def layer(name):
    """The layer of a lab module (len(LAYERS) for the top), or None."""
    if name in TOP:
        return len(LAYERS)
    package = name.split(".")[1]
    return LAYERS.index(package) if package in LAYERS else None


def layer_problems(graph):
    """The modules of no layer, and each import that goes up a layer."""
    problems = [f"{a} is in no layer of {LAYERS}" for a in sorted(graph)
                if layer(a) is None]
    for a in sorted(graph):
        for b in sorted(graph[a]):
            la, lb = layer(a), layer(b)
            if None not in (la, lb) and lb > la:
                problems.append(f"{a} ({LAYERS[la]}) imports {b} "
                                f"({LAYERS[lb] if lb < len(LAYERS) else 'top'})")
    return problems


def test_layer_problems_names_the_edge_that_goes_up():
    graph = {"lab.guest.run": {"lab.core.util", "lab.commands.bench"},
             "lab.commands.bench": {"lab.guest.run"}, "lab.core.util": set(),
             "lab.stray": set()}
    assert layer_problems(graph) == [
        "lab.stray is in no layer of " + str(LAYERS),
        "lab.guest.run (guest) imports lab.commands.bench (commands)"]


def test_imports_follow_the_layers():
    problems = layer_problems(import_graph())
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def test_the_command_line_has_every_command_module():
    # one module per command (or pair of commands) under lab/cli/, each
    # adding its parser; options holds what several of them share
    from lab import cli
    modules = {n.rpartition(".")[2] for n in FILES
               if n.startswith("lab.cli.")} - {"options"}
    assert {m.__name__.rpartition(".")[2] for m in cli.COMMANDS} == modules
    assert all(callable(m.add_parser) for m in cli.COMMANDS)


def test_harden_and_testcmd_do_not_import_each_other():
    assert "lab.commands.test" not in imported("lab.commands.harden")
    assert "lab.commands.harden" not in imported("lab.commands.test")


def test_fresh_copies_the_machines_ca_certificates(tmp_path, monkeypatch):
    from lab.commands import fresh
    cas = tmp_path / "cas"
    cas.mkdir()
    (cas / "proxy.crt").write_text("cert\n")
    (cas / "notes.txt").write_text("not a certificate\n")
    monkeypatch.setattr(fresh, "LOCAL_CAS", cas)
    root = tmp_path / "root"
    fresh.machine_cas(root)
    dest = root / cas.relative_to("/")
    assert [p.name for p in dest.iterdir()] == ["proxy.crt"]
