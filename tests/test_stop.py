# SPDX-License-Identifier: GPL-2.0-only
"""Host tests: a lab stopped by SIGTERM or Ctrl-C leaves none of its
children running and starts no new one (QEMU boots and builds run in
threads, where no KeyboardInterrupt reaches them), and says so with exit
130."""

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lab.core import util

REPO = Path(__file__).resolve().parent.parent

# A command function as 'lab bench' and 'lab test' have them: boots
# (guest/run.py's QEMU loop) one after the other in a daemon thread, makes
# (util.run) one after the other in a non-daemon thread that goes on after
# a failed job, the main thread waiting.  Each child writes its pid to
# <name><n>.pid and, with "stubborn" in argv, ignores SIGTERM.
SCRIPT = textwrap.dedent("""
    import signal, sys, threading, time
    from pathlib import Path
    from lab import cli
    from lab.core import util
    from lab.guest import run

    # Ctrl-C as from a terminal: a lab started in the background (as CI
    # may start this test) inherits SIGINT ignored, and Python then keeps
    # it ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)

    d = Path(sys.argv[1])
    trap = "trap '' TERM; " if "stubborn" in sys.argv else ""

    def child(name):
        return ["sh", "-c", f"{trap}echo $$ > {d}/{name}.pid; "
                "while :; do sleep 1; done"]

    # each thread catches the LabError of a refused start, as bench.py's
    # and test.py's threads do: a Traceback on stderr is then guarded()'s
    def boots():
        for i in range(3):
            try:
                run._run_qemu(child(f"qemu{i}"), d / f"console{i}.log", 600, None)
            except util.LabError as e:
                print(e, file=sys.stderr)

    def makes():
        for i in range(3):
            try:
                util.run(child(f"make{i}"), quiet=True, check=False)
            except util.LabError as e:
                print(e, file=sys.stderr)

    def command(_args):
        threading.Thread(target=boots, daemon=True).start()
        threading.Thread(target=makes).start()
        time.sleep(600)
        return 0

    sys.exit(cli.guarded(command, None))
""")


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(paths, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if all(p.exists() and p.read_text().strip() for p in paths):
            return
        time.sleep(0.1)
    raise AssertionError(f"children never started: {paths}")


def pids(d):
    return {p.stem: int(p.read_text()) for p in d.glob("*.pid") if p.read_text().strip()}


def stop_lab(tmp_path, *signals, extra=()):
    """Start SCRIPT, wait for its first boot and make, send @signals half a
    second apart; return (exit code, stderr, {child name: alive after})."""
    return stop_script([SCRIPT, str(tmp_path), *extra], tmp_path,
                       ["qemu0", "make0"], signals)


def stop_script(argv, tmp_path, started, signals):
    """Start python -c *argv, wait until each child in @started has written
    its <name>.pid in tmp_path, send @signals half a second apart; return
    (exit code, stderr, {child name: alive after})."""
    p = subprocess.Popen([sys.executable, "-c", *argv],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        wait_for([tmp_path / f"{name}.pid" for name in started])
        for sig in signals:
            p.send_signal(sig)
            time.sleep(0.5)
        _, err = p.communicate(timeout=30)
        # a process killed just before the lab exited may take a moment to
        # go on a busy host (a kernel build beside the host tests): give
        # it up to 5 s (0.2 s failed once beside a running 'lab test')
        end = time.monotonic() + 5
        while True:
            left = {name: alive(pid) for name, pid in pids(tmp_path).items()}
            if not any(left.values()) or time.monotonic() > end:
                break
            time.sleep(0.1)
    finally:
        p.kill()
        for pid in pids(tmp_path).values():
            if alive(pid):
                subprocess.run(["kill", "-9", str(pid)])
    return p.returncode, err, left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_lab_ends_its_children_and_starts_no_new_one(tmp_path, sig):
    code, err, left = stop_lab(tmp_path, sig)
    # before the SIGTERM handler, Python ended at once (exit -15) and the
    # children lived on, reparented to init
    assert code == 130 and "lab: interrupted" in err
    assert "stopped 2 process(es)" in err
    # the boot and the make that ran were ended; the threads' next boot and
    # makes were refused, not started
    assert left == {"qemu0": False, "make0": False}
    assert "the lab is stopping: sh not started" in err


def test_a_second_signal_does_not_cut_the_clean_up_short(tmp_path):
    # children that ignore SIGTERM get SIGKILL after the grace, even when
    # SIGTERM comes again meanwhile
    code, err, left = stop_lab(tmp_path, signal.SIGTERM, signal.SIGTERM,
                               signal.SIGINT, extra=("stubborn",))
    assert code == 130 and "Traceback" not in err, err
    assert left == {"qemu0": False, "make0": False}, err


def test_a_second_signal_in_the_clean_up_of_the_first_is_ignored(tmp_path):
    # the second signal arrives while the first one's KeyboardInterrupt is
    # on its way, in the command's own clean-up (a bench's report): before
    # the first handler ignored the rest, the second raised there, and
    # signal.signal() in guarded()'s clean-up ran it again (it runs a
    # pending handler first), which then stopped with a Traceback
    script = textwrap.dedent(f"""
        import os, signal, sys
        from lab import cli
        from lab.core import util
        signal.signal(signal.SIGINT, signal.default_int_handler)

        def command(_args):
            util.spawn(["sh", "-c", "echo $$ > {tmp_path}/child.pid; exec sleep 600"])
            while not os.path.exists("{tmp_path}/child.pid"):
                pass
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10 ** 6):
                    pass
            finally:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10 ** 6):
                    pass
                print("report written", file=sys.stderr)
            return 0

        sys.exit(cli.guarded(command, None))
    """)
    p = subprocess.run([sys.executable, "-c", script], cwd=REPO, text=True,
                       capture_output=True, timeout=60)
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    gone = not alive(child)
    if not gone:
        subprocess.run(["kill", "-9", str(child)])
    assert p.returncode == 130 and "Traceback" not in p.stderr, p.stderr
    assert "report written" in p.stderr and "lab: interrupted" in p.stderr, p.stderr
    assert gone


def test_a_signal_as_the_command_returns_still_stops_it(monkeypatch, capsys):
    # a signal that came in just before guarded()'s clean-up: Python runs
    # its handler inside the clean-up's first signal.signal(); the clean-up
    # goes on, ends the children and exits 130
    from lab import cli
    real = signal.signal
    pending = [signal.SIGTERM]

    def signal_with_one_pending(sig, handler):
        if pending:
            cli._stop(pending.pop(), None)
        return real(sig, handler)

    stopped = []
    monkeypatch.setattr(signal, "signal", signal_with_one_pending)
    monkeypatch.setattr(cli, "stop_children", lambda: stopped.append(1) or 0)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    pending.clear()     # guarded()'s own set-up runs first
    assert cli.guarded(lambda: pending.append(signal.SIGTERM) or 0) == 130
    assert stopped and "lab: interrupted" in capsys.readouterr().err
    assert {s: signal.getsignal(s) for s in before} == before


def test_run_kills_and_reaps_its_child_on_ctrl_c(tmp_path):
    # util.run() in the main thread, no cli.guarded(): as subprocess.run()
    # did, the child is gone by the time the KeyboardInterrupt goes on
    script = textwrap.dedent(f"""
        import os, signal
        from lab.core import util
        def stop(*_):
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, stop)
        try:
            util.run(["sh", "-c", "echo $$ > {tmp_path}/c.pid; exec sleep 600"],
                     quiet=True)
        except KeyboardInterrupt:
            pid = open("{tmp_path}/c.pid").read().strip()
            print("child:", "gone" if not os.path.exists("/proc/" + pid) else "left")
    """)
    p = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for([tmp_path / "c.pid"])
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert out.strip() == "child: gone", (out, err)


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    ready = tmp_path / "ready"
    p = util.spawn(["sh", "-c", f"trap '' TERM; echo set > {ready}; "
                    "while :; do sleep 1; done"])
    wait_for([ready])
    t0 = time.monotonic()
    assert util.stop_children(grace=0.5) == 1
    assert p.returncode == -signal.SIGKILL
    assert time.monotonic() - t0 < 5
    with pytest.raises(util.LabError, match="stopping"):
        util.spawn(["true"])


def test_ended_children_are_not_stopped_again():
    p = util.spawn(["true"])
    p.wait()
    assert util.stop_children(grace=0.5) == 0


def test_a_make_in_the_main_thread_stops_its_own_children(tmp_path):
    # 'lab check' and 'lab build' run make in the main thread.  make ends
    # the compilers it started when it gets SIGTERM, not when it is
    # killed: a lab that answered SIGTERM with SIGKILL to make left its
    # sub-make and compilers running.  The "make" here starts a child and
    # ends it on SIGTERM as make does.
    script = textwrap.dedent(f"""
        import signal, sys
        from lab import cli
        from lab.core import util
        signal.signal(signal.SIGINT, signal.default_int_handler)
        make = ("sleep 600 >/dev/null 2>&1 & echo $! > {tmp_path}/compiler.pid; "
                "trap 'kill $!; exit 2' TERM; echo $$ > {tmp_path}/make.pid; wait")
        sys.exit(cli.guarded(lambda _a: util.run(["sh", "-c", make], quiet=True), None))
    """)
    code, err, left = stop_script([script], tmp_path, ["make", "compiler"],
                                  [signal.SIGTERM])
    assert code == 130, err
    assert left == {"make": False, "compiler": False}


@pytest.mark.parametrize("trap", ["", "trap '' TERM; "])
def test_a_shell_in_a_session_of_its_own_goes_with_its_commands(tmp_path, trap):
    # 'lab fresh' runs .ci/run through chroot and bash in a session of its
    # own.  A shell that gets SIGTERM ends at once and leaves the command
    # it was waiting for running; the lab signals the whole group, and
    # kills what is left of it after the grace, though the shell itself
    # was gone at once (trap: a command that ignores SIGTERM).
    script = textwrap.dedent(f"""
        import signal, subprocess, sys
        from lab import cli
        from lab.core import util
        signal.signal(signal.SIGINT, signal.default_int_handler)
        shell = ("({trap}exec sleep 600) >/dev/null 2>&1 & echo $! > {tmp_path}/command.pid; "
                 "echo $$ > {tmp_path}/shell.pid; wait")

        def command(_args):
            util.reap(util.spawn(["sh", "-c", shell], start_new_session=True))
            return 0
        sys.exit(cli.guarded(command, None))
    """)
    code, err, left = stop_script([script], tmp_path, ["shell", "command"],
                                  [signal.SIGTERM])
    assert code == 130, err
    assert left == {"shell": False, "command": False}
