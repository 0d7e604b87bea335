# SPDX-License-Identifier: GPL-2.0-only
"""Harness: the tests an own program lists, read from its C source.

Every own test program (guest/tests/<program>.c) is built with the
kselftest harness, whose -l lists what the program would run.  The host
reads the same list from the source, without a guest: the harness
registers each TEST(), TEST_SIGNAL(), TEST_F(), TEST_F_SIGNAL() and
TEST_F_TIMEOUT() as a test of its fixture ("global" for TEST() and
TEST_SIGNAL()), and each FIXTURE_VARIANT_ADD() as a variant of its
fixture, and runs each test once per variant of its fixture, as the case
FIXTURE[.VARIANT].TEST.  The function-like macros of the lab's own header
(guest/include/lab_test.h: LAB_KERNEL_VARIANTS()) that declare tests or
variants of their parameter are expanded where a program uses them.

The lab's test tables (suites.py) and skip declarations (skips.tsv) name
tests and cases of these programs; the harness's -t NAME runs nothing and
-T NAME leaves nothing out when NAME is no test, and says nothing, so
unlisted() and undeclarable() find such names on the host.
"""

import fnmatch
import re

from ..core import config
from . import skips, suites

HEADER = config.GUEST / "include" / "lab_test.h"

# A C comment, or a string or character literal (kept, so that a comment
# marker inside one is not taken for a comment).
_COMMENT_OR_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
                                 r'/\*.*?\*/|//[^\n]*', re.S)
# A declaration of a test (kind, fixture or name, [name]) or a variant.
DECL_RE = re.compile(r"^\s*(TEST|TEST_SIGNAL|TEST_F|TEST_F_SIGNAL|TEST_F_TIMEOUT|"
                     r"FIXTURE_VARIANT_ADD)\(\s*(\w+)\s*(?:,\s*(\w+))?")
CONDITIONAL_RE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|endif)\b")
MACRO_RE = re.compile(r"^\s*#\s*define\s+(\w+)\((\w+)\)")
USE_RE = re.compile(r"^\s*(\w+)\(\s*(\w+)\s*\)\s*;")


def _code(text):
    """text with its comments blanked (their newlines kept, so that line
    numbers stay), for a line scan that a commented-out test cannot fool."""
    def blank(m):
        s = m.group(0)
        return s if s[0] in "\"'" else "\n" * s.count("\n") + " "
    return _COMMENT_OR_LITERAL.sub(blank, text)


def _declaration(m):
    """(kind, fixture, name) of a DECL_RE match: kind "test" or
    "variant"; a TEST()'s fixture is the harness's "global"."""
    what, first, second = m.groups()
    if what in ("TEST", "TEST_SIGNAL"):
        return ("test", "global", first)
    return ("test" if what != "FIXTURE_VARIANT_ADD" else "variant", first, second)


def wrappers(path=HEADER):
    """{macro: [(kind, name)]} of the one-parameter macros of the lab's
    header that declare tests or variants of the fixture they are given
    (LAB_KERNEL_VARIANTS(fixture): the variants on, off and stock)."""
    out = {}
    lines = _code(path.read_text()).replace("\\\n", "\x00").splitlines()
    for line in lines:
        m = MACRO_RE.match(line)
        if not m:
            continue
        name, param = m.groups()
        body = [_declaration(d) for d in map(DECL_RE.match, line.split("\x00")[1:]) if d]
        made = [(kind, n) for kind, fx, n in body if fx == param]
        if made:
            out[name] = made
    return out


def declarations(program, source=None):
    """[(kind, fixture, name)] of an own program, in source order: its tests
    ("test") and its fixtures' variants ("variant"), those made by the
    header's wrappers() too.  A declaration under #if, #ifdef or #ifndef
    is a ValueError: it would give the arches' builds different lists,
    which a list read on the host could not tell apart."""
    path = source or config.GUEST / "tests" / f"{program}.c"
    macros = wrappers()
    out = []
    depth = 0
    for n, line in enumerate(_code(path.read_text()).splitlines(), 1):
        c = CONDITIONAL_RE.match(line)
        if c:
            depth += -1 if c.group(1) == "endif" else 1
            continue
        m = DECL_RE.match(line)
        found = [_declaration(m)] if m else []
        u = USE_RE.match(line)
        if u and u.group(1) in macros:
            found = [(kind, u.group(2), name) for kind, name in macros[u.group(1)]]
        if found and depth:
            raise ValueError(f"{path}:{n}: {line.strip()} is under a preprocessor "
                             "conditional: the arches' programs would list other tests")
        out += found
    return out


def tests(program):
    """The test names of an own program, as -t and -T take them (a test's
    own name: all its fixture's variants)."""
    return {name for kind, _, name in declarations(program) if kind == "test"}


def cases(program):
    """The cases an own program runs, as its KTAP results name them:
    FIXTURE.VARIANT.TEST for each variant of the test's fixture, or
    FIXTURE.TEST when the fixture has none."""
    decls = declarations(program)
    variants = {}
    for kind, fixture, name in decls:
        if kind == "variant":
            variants.setdefault(fixture, []).append(name)
    return [f"{fixture}.{v}.{name}" if v else f"{fixture}.{name}"
            for kind, fixture, name in decls if kind == "test"
            for v in variants.get(fixture, [""])]


def table_names():
    """(table, program, test name) of every own test that suites' tables
    name: what the plans leave out (ARCH_LEFT_OUT, BOOT_LEFT_OUT) and what
    the numa, mttcg and nosplit boots run (NUMA_TESTS, RACE_TESTS,
    NOSPLIT_TESTS)."""
    for kind in ("ARCH_LEFT_OUT", "BOOT_LEFT_OUT"):
        for key, table in getattr(suites, kind).items():
            for prog, entries in table.items():
                for names, _, _ in entries:
                    yield from ((f"{kind}[{key}]", prog, n) for n in names)
    for kind in ("NUMA_TESTS", "RACE_TESTS", "NOSPLIT_TESTS"):
        for prog, names in getattr(suites, kind).items():
            yield from ((kind, prog, n) for n in names)


def unlisted():
    """'TABLE: program/name' for each name of the tables (table_names(),
    and the programs of OWN_TIMEOUTS and NO_RANGE_TLBI) that is not a test
    its program lists, or whose program is no own program; and for each
    program of NUMA_UPSTREAM and NOSPLIT_UPSTREAM that is no upstream
    one.  (An upstream program's word, the cases of it to run, is checked
    in the guest: lab_run_cases fails the program when no case it lists
    has the word.)"""
    own = set(suites.own_tests())
    bad = []
    for table, prog, name in table_names():
        if prog not in own or name not in tests(prog):
            bad.append(f"{table}: {prog}/{name}")
    named = [("OWN_TIMEOUTS", p) for p in suites.OWN_TIMEOUTS]
    named += [(f"NO_RANGE_TLBI[{a}]", p) for a, (_, progs) in suites.NO_RANGE_TLBI.items()
              for p in progs]
    bad += [f"{table}: {p}: no own program" for table, p in named if p not in own]
    bad += [f"{table}: {p}: no upstream program" for table in ("NUMA_UPSTREAM",
                                                              "NOSPLIT_UPSTREAM")
            for p in getattr(suites, table) if not suites.is_upstream(p)]
    return bad


def undeclarable(table=None):
    """'row glob: why' for each skip declaration (skips.tsv, or table)
    whose row glob cannot match a row of a real test.  The last two parts
    of a row glob are the program and the leaf: the program must be named
    outright, an own or an upstream one; an own program's leaf glob must
    match a case it runs (cases()); an upstream program's leaves are named
    by what it prints in the guest, which the host cannot list, so its
    leaf glob must have a wildcard."""
    bad = []
    for d in skips.load(skips.DECLARED) if table is None else table:
        parts = d.row.split("/")
        prog, leaf = (parts[-2], parts[-1]) if len(parts) >= 2 else ("", d.row)
        if prog in suites.own_tests():
            if not fnmatch.filter(cases(prog), leaf):
                bad.append(f"{d.row}: no case of {prog} matches {leaf}")
        elif not suites.is_upstream(prog):
            bad.append(f"{d.row}: {prog or '(none)'} is no test program")
        elif not any(c in leaf for c in "*?["):
            bad.append(f"{d.row}: an upstream leaf named outright, which the host "
                       "cannot check: declare it with a wildcard")
    return bad
