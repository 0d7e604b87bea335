"""Host unit tests of suites.known_stock_failure() and its use in
testcmd.judge(): an upstream failure that stock 6.12 shows in some runs
is listed as STOCK-FAIL only when every ERROR line of the program is the
known one."""

from lab import results, suites, testcmd

KNOWN = ("Testing events on anon... ERROR: UFFDIO_COPY error: -2 "
         "(errno=2, @uffd-common.c:617)")


def console(*errors, ok=False):
    lines = ["# lab: start uffd-unit-tests: /lab/selftests/mm/uffd-unit-tests",
             "    Testing sigbus-wp on anon... done"]
    lines += [f"    {e}" for e in errors]
    lines.append("ok 13 uffd-unit-tests" if ok else "not ok 13 uffd-unit-tests # exit 1")
    return "\n".join(lines) + "\n"


def test_parse_keeps_the_programs_error_lines():
    [r] = results.parse(console(KNOWN))
    assert r.status == "fail" and r.errors == (KNOWN,)


def test_the_known_stock_failure_is_recognised():
    assert suites.known_stock_failure("uffd-unit-tests", (KNOWN,))


def test_another_error_or_program_is_not():
    other = "Testing move on anon... ERROR: UFFDIO_MOVE error: -22"
    assert not suites.known_stock_failure("uffd-unit-tests", (KNOWN, other))
    assert not suites.known_stock_failure("uffd-unit-tests", (other,))
    assert not suites.known_stock_failure("uffd-unit-tests", ())
    assert not suites.known_stock_failure("cow", (KNOWN,))


def test_judge_lists_it_as_stock_fail_when_stock_passed_this_run():
    stock = results.parse(console(ok=True))
    patched = results.parse(console(KNOWN))
    rows = testcmd.judge("x86_64", "default", {"stock": stock, "patched": patched})
    [row] = [r for r in rows if "/patched/" in r[1]]
    assert row[0] == "stockfail" and "stock 6.12 was seen failing" in row[2]


def test_judge_still_counts_an_unknown_failure():
    other = "Testing move on anon... ERROR: UFFDIO_MOVE error: -22"
    stock = results.parse(console(ok=True))
    patched = results.parse(console(other))
    rows = testcmd.judge("x86_64", "default", {"stock": stock, "patched": patched})
    [row] = [r for r in rows if "/patched/" in r[1]]
    assert row[0] == "regress"
