# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of lab/core/deps.py: every program the lab runs has a package.

The lab runs host programs through util.run()/util.out() and subprocess.
This scans lab/**/*.py for such calls whose command is a list literal (or a
list literal + something, or a local name bound to one) starting with a
string constant, and checks each program against deps.COMMANDS and
deps.ESSENTIAL.  Commands built elsewhere (the QEMU binary and the cross
compiler of config.ARCHES, scripts of the kernel tree) are checked below
by name.
"""

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.core import config, deps

LAB = Path(deps.__file__).resolve().parent.parent     # lab/core/deps.py
RUNNERS = {"run", "out", "call", "check_call", "check_output", "Popen"}


def _first_program(node, lists):
    """The program name of a command expression, or None if not literal."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node = node.left
    if isinstance(node, ast.Name):
        node = lists.get(node.id)
    if isinstance(node, ast.List) and node.elts:
        first = node.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value.rsplit("/", 1)[-1]
    return None


def _is_runner(call):
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return name in RUNNERS


def _bound_lists(stmts):
    """Names bound to a list literal (or one + something) in statements,
    e.g. git = ["git", "-C", tree]."""
    lists = {}
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 \
                    and isinstance(n.targets[0], ast.Name):
                value = n.value
                while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
                    value = value.left
                if isinstance(value, ast.List):
                    lists[n.targets[0].id] = value
    return lists


def programs(path):
    """{program: {line, ...}} of the literal commands a module runs."""
    tree = ast.parse(path.read_text(), str(path))
    # module-level names are seen everywhere, a function's only inside it
    top = _bound_lists(s for s in tree.body if isinstance(s, ast.Assign))
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    found = {}
    for scope in [tree] + funcs:
        lists = top if scope is tree else {**top, **_bound_lists([scope])}
        for n in ast.walk(scope):
            if isinstance(n, ast.Call) and n.args and _is_runner(n):
                prog = _first_program(n.args[0], lists)
                if prog:
                    found.setdefault(prog, set()).add(n.lineno)
    return found


def lab_programs():
    found = {}
    for path in sorted(LAB.rglob("*.py")):
        for prog, lines in programs(path).items():
            found.setdefault(prog, []).extend(f"{path.relative_to(LAB)}:{l}"
                                              for l in sorted(lines))
    return found


def test_scanner_sees_the_lab_commands():
    # a scanner that finds nothing would pass everything
    found = lab_programs()
    for prog in ("git", "make", "gcc", "tar", "apt-get", "apt-cache", "dpkg-deb",
                 "readelf", "mkfs.xfs"):
        assert prog in found, prog


def test_scanner_reads_lists_concatenations_and_names(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import subprocess\n"
                 "def a(x):\n"
                 "    run(['/usr/bin/frob', x])\n"
                 "    out(['twiddle'] + x)\n"
                 "    git = ['git', '-C', x]\n"
                 "    run(git + ['init'])\n"
                 "    subprocess.Popen([x, 'not-a-program'])\n"
                 "    subprocess.run(['gizmo', '--version'], text=True)\n")
    assert set(programs(f)) == {"frob", "twiddle", "git", "gizmo"}


def test_every_program_the_lab_runs_has_a_package():
    unknown = {prog: where for prog, where in lab_programs().items()
               if prog not in deps.COMMANDS and prog not in deps.ESSENTIAL}
    assert not unknown, (
        "programs run by the lab without a Debian package in lab/core/deps.py "
        "(add them to COMMANDS, or to ESSENTIAL if their package is "
        f"Essential): {unknown}")


def test_arch_programs_have_a_package():
    for a in config.ARCHES.values():
        assert a.qemu in deps.COMMANDS, a.qemu
        assert f"{a.cross}gcc" in deps.COMMANDS, f"{a.cross}gcc"


def test_kernel_build_programs_are_listed():
    # what Kbuild, headers_install and the x86 bzImage need beyond make and gcc
    for prog in ("make", "gcc", "bc", "bison", "flex", "perl", "awk", "xz",
                 "cpio", "rsync", "git", "mkfs.xfs", "python3"):
        assert prog in deps.COMMANDS, prog
    for pkg in ("libelf-dev", "libssl-dev", "libc6-dev", "libc6-dev-arm64-cross"):
        assert pkg in deps.PACKAGES, pkg


def test_commands_and_essential_do_not_overlap():
    assert not set(deps.COMMANDS) & set(deps.ESSENTIAL)


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="not a Debian host")
def test_essential_programs_come_from_essential_packages():
    pkgs = sorted(set(deps.ESSENTIAL.values()))
    p = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Essential}\n"] + pkgs,
                       capture_output=True, text=True)
    flags = dict(line.split() for line in p.stdout.splitlines() if " " in line)
    assert all(flags.get(pkg) == "yes" for pkg in pkgs), flags
