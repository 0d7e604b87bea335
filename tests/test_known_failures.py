# SPDX-License-Identifier: GPL-2.0-only
"""Host unit tests of how upstream failures are judged: only this run's stock
boot failing the same case with the same failure lines excuses a patched
failure (no list of failures stock was once seen to show); uffd-unit-tests
runs case by case
(guest/lib.sh lab_run_cases), so a case that exits the program does not
take the cases after it along; and a whole-program leaf that fails on stock
too still fails when patched prints a failure line stock did not."""

import subprocess

from lab.commands import test as testcmd
from lab.core import config
from lab.guest import results, suites

KNOWN = ("Testing events on anon... ERROR: UFFDIO_COPY error: -2 "
         "(errno=2, @uffd-common.c:617)")
OTHER = "Testing move on anon... ERROR: UFFDIO_MOVE error: -22 (errno=22, @uffd-common.c:1)"

# A stand-in for uffd-unit-tests: -l lists the cases, -f runs those whose
# names contain the filter; ERROR_IN names a case in which it exits (err()).
FAKE = r"""#!/bin/sh
if [ "$1" = -l ]; then printf 'move\nmove-pmd\nevents\npoison\n'; exit 0; fi
cat "$LAB_ASLR_KNOB" >> "$LAB_ASLR_KNOB.seen"
for t in move move-pmd events poison; do
	case $t in *"$2"*) ;; *) continue ;; esac
	for m in anon shmem; do
		printf "Testing $t on $m... "
		if [ "$t on $m" = "$ERROR_IN" ]; then
			echo "$ERROR_LINE" >&2
			exit 1
		fi
		if [ "$t on $m" = "$FAIL_IN" ]; then
			echo "failed [reason: wrong data]"
			continue
		fi
		echo done
	done
done
"""


def run_cases(tmp_path, word="", **env):
    prog = tmp_path / "uffd-unit-tests"
    prog.write_text(FAKE)
    prog.chmod(0o755)
    script = (f". {config.GUEST / 'lib.sh'}\n"
              f"lab_no_aslr lab_run_cases uffd-unit-tests 60 {prog} {word}\n")
    # the guest runs lib.sh with busybox sh; bash has its pipefail too.
    # The runs turn address space randomisation off and back on: here in a
    # file of the test's own, not the host's.
    knob = tmp_path / "randomize_va_space"
    knob.write_text("2\n")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "ERROR_LINE": "",
                            "LAB_ASLR_KNOB": str(knob), "LAB_SYSROOT": str(tmp_path),
                            **env})
    assert knob.read_text().strip() == "2"
    assert set((tmp_path / "randomize_va_space.seen").read_text().split()) == {"0"}
    return p.stdout


def leaves(text):
    return {r.name: r for r in results.parse(text)}


def test_every_case_is_a_leaf(tmp_path):
    out = run_cases(tmp_path)
    got = leaves(out)
    assert sorted(got) == sorted(f"uffd-unit-tests/{t} on {m}"
                                 for t in ("move", "move-pmd", "events", "poison")
                                 for m in ("anon", "shmem"))
    assert all(r.status == "pass" for r in got.values())
    assert "\nok 1 uffd-unit-tests\n" in out


def test_a_case_that_exits_the_program_fails_and_the_later_cases_still_run(tmp_path):
    out = run_cases(tmp_path, ERROR_IN="events on anon", ERROR_LINE=KNOWN.split("... ")[1])
    got = leaves(out)
    assert got["uffd-unit-tests/events on anon"].status == "fail"
    assert got["uffd-unit-tests/events on anon"].errors == ("# " + KNOWN,)
    # the cases after it, in runs of their own
    assert got["uffd-unit-tests/poison on shmem"].status == "pass"
    # events on shmem was in the run that exited: missing, not passed
    assert "uffd-unit-tests/events on shmem" not in got
    assert "not ok 1 uffd-unit-tests" in out


def test_a_failed_case_line_is_a_failed_leaf(tmp_path):
    got = leaves(run_cases(tmp_path, FAIL_IN="move-pmd on shmem"))
    r = got["uffd-unit-tests/move-pmd on shmem"]
    assert r.status == "fail" and "failed [reason: wrong data]" in r.errors[0]
    # the run of 'move' also ran move-pmd: its lines are dropped there
    assert "uffd-unit-tests/move-pmd on shmem #2" not in got


def judged(stock_text, patched_text):
    rows = testcmd.judge("x86_64", "default", {"stock": results.parse(stock_text),
                                               "patched": results.parse(patched_text)})
    return {r[1].split("/patched/", 1)[1]: r for r in rows if "/patched/" in r[1]}


def test_no_failure_is_excused_by_name_when_this_runs_stock_passed(tmp_path):
    """The 'events on anon' UFFDIO_COPY -2 failure that stock was once seen
    to print excuses nothing when this run's stock passed the case: it is a
    regression (re-run on both kernels, retry_regressions())."""
    stock = run_cases(tmp_path)
    patched = run_cases(tmp_path, ERROR_IN="events on anon",
                        ERROR_LINE=KNOWN.split("... ")[1], FAIL_IN="move on anon")
    rows = judged(stock, patched)
    assert rows["uffd-unit-tests/events on anon"][0] == "regress"
    assert rows["uffd-unit-tests/move on anon"][0] == "regress"
    # the case the failure took along passed on stock: it is not a pass
    assert rows["uffd-unit-tests/events on shmem"][0] == "regress"
    assert "missing on patched" in rows["uffd-unit-tests/events on shmem"][2]


def test_this_runs_stock_failing_the_same_way_excuses_it(tmp_path):
    err = KNOWN.split("... ")[1]
    stock = run_cases(tmp_path, ERROR_IN="events on anon", ERROR_LINE=err)
    patched = run_cases(tmp_path, ERROR_IN="events on anon", ERROR_LINE=err)
    assert judged(stock, patched)["uffd-unit-tests/events on anon"][0] == "stockfail"
    # the same case failing with another message is not excused
    other = OTHER.split("... ")[1]
    patched = run_cases(tmp_path, ERROR_IN="events on anon", ERROR_LINE=other)
    assert judged(stock, patched)["uffd-unit-tests/events on anon"][0] == "regress"


KHUGEPAGED = """# lab: start khugepaged: /lab/selftests/mm/khugepaged
    Collapse fully populated PTE table.... \x1b[32mOK\x1b[0m
{lines}not ok 4 khugepaged # exit 1
"""


def test_a_whole_program_leaf_fails_on_a_failure_line_stock_did_not_print():
    stock = KHUGEPAGED.format(lines="    Swapout one page.... \x1b[31mFail\x1b[0m\n")
    same = KHUGEPAGED.format(lines="    Swapout one page.... \x1b[31mFail\x1b[0m\n")
    more = KHUGEPAGED.format(lines="    Swapout one page.... \x1b[31mFail\x1b[0m\n"
                                   "    Collapse PTE table with 7 swap entries.... "
                                   "\x1b[31mFail\x1b[0m\n")
    assert judged(stock, same)["khugepaged"][0] == "stockfail"
    row = judged(stock, more)["khugepaged"]
    assert row[0] == "regress" and "swap entries" in row[2]


def test_a_word_runs_only_the_cases_with_it_in_their_names(tmp_path):
    got = leaves(run_cases(tmp_path, word="move"))
    assert sorted(got) == sorted(f"uffd-unit-tests/{t} on {m}" for t in ("move", "move-pmd")
                                 for m in ("anon", "shmem"))


def test_lab_run_puts_back_the_knobs_a_program_left_changed(tmp_path):
    """6.12's kselftest harness skips a fixture's teardown after a failed
    ASSERT in the test: lab_run puts the settings back for the programs
    after it, and says which."""
    thp = tmp_path / "sys/kernel/mm/transparent_hugepage"
    (thp / "hugepages-64kB").mkdir(parents=True)
    (thp / "enabled").write_text("always [madvise] never\n")
    (thp / "hugepages-64kB/enabled").write_text("always inherit madvise [never]\n")
    sw = tmp_path / "sys/kernel/mm/foliobatch"
    sw.mkdir(parents=True)
    (sw / "mprotect_batch").write_text("1\n")
    (tmp_path / "tmp").mkdir()
    leaves_changed = tmp_path / "leaves-changed"
    leaves_changed.write_text(f"#!/bin/sh\necho always > {thp}/hugepages-64kB/enabled\n"
                              f"echo 0 > {sw}/mprotect_batch\nexit 1\n")
    leaves_changed.chmod(0o755)
    script = (f". {config.GUEST / 'lib.sh'}\n"
              f"lab_run first 60 {leaves_changed}\nlab_run second 60 true\n")
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "LAB_SYSROOT": str(tmp_path)})
    assert (thp / "hugepages-64kB/enabled").read_text().strip() == "never"
    assert (sw / "mprotect_batch").read_text().strip() == "1"
    assert (thp / "enabled").read_text().strip() == "always [madvise] never"
    put_back = [line for line in p.stdout.splitlines() if "put back" in line]
    assert put_back == [
        f"# lab: first left {thp}/hugepages-64kB/enabled at 'always', was 'never': put back",
        f"# lab: first left {sw}/mprotect_batch at '0', was '1': put back"], p.stdout
    assert "not ok 1 first # exit 1" in p.stdout and "ok 2 second" in p.stdout


def _kprobe_plan(tmp_path, events):
    tr = tmp_path / "sys/kernel/tracing"
    (tr / "events/lab").mkdir(parents=True)
    (tr / "events/lab/enable").write_text("1\n")
    (tmp_path / "tmp").mkdir()
    if events is None:      # a kernel that refuses: writes to it fail
        (tr / "kprobe_events").symlink_to("/proc/version")
    else:
        (tr / "kprobe_events").write_text(events)
    script = (f". {config.GUEST / 'lib.sh'}\n"
              "lab_run first 60 true\nlab_run second 60 true\n")
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "LAB_SYSROOT": str(tmp_path)})
    return tr, p.stdout


def test_lab_run_removes_the_kprobes_a_program_left(tmp_path):
    """An armed kprobe traps on every call of its function in every program
    after the one that set it: lab_run disables and removes them all."""
    tr, out = _kprobe_plan(tmp_path, "p:lab/rb_cpg contpte_ptep_get\n"
                                     "p:lab/rb_i0 contpte_ptep_get+4\n")
    assert (tr / "kprobe_events").read_text() == ""
    assert (tr / "events/lab/enable").read_text().strip() == "0"
    assert "could not" not in out and "ok 2 second" in out, out


def test_kprobes_that_cannot_be_removed_are_a_setup_failure(tmp_path):
    from lab.guest.testboot import boot_problems
    _, out = _kprobe_plan(tmp_path, None)
    assert "# lab: could not remove the kprobe events first left" in out, out

    class Boot:
        ready, timed_out, exit_code, plan, console = True, False, 0, "", "c.log"

        def text(self):
            return out
    assert any(what == "setup" for what, _ in boot_problems(Boot())), out
