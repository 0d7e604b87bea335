"""Host tests: a lab stopped by SIGTERM or Ctrl-C leaves none of its
children running (QEMU boots and builds run in threads, where no
KeyboardInterrupt reaches them), and says so with exit 130."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from lab.core import util

REPO = Path(__file__).resolve().parent.parent

# A command function as 'lab bench' has one: a boot (guest/run.py's QEMU
# loop) and a make (util.run) in threads of their own, the main thread
# waiting.  Each child writes its pid to a file, then sleeps.
SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from lab import cli
    from lab.core import util
    from lab.guest import run

    d = Path(sys.argv[1])

    def child(name):
        return ["sh", "-c", f"echo $$ > {d}/{name}.pid; exec sleep 600"]

    def command(_args):
        threading.Thread(target=run._run_qemu, daemon=True,
                         args=(child("qemu"), d / "console.log", 600, None)).start()
        threading.Thread(target=util.run, daemon=True, args=(child("make"),),
                         kwargs={"quiet": True}).start()
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
            return [int(p.read_text()) for p in paths]
        time.sleep(0.1)
    raise AssertionError(f"children never started: {paths}")


def stopped_lab(tmp_path, sig):
    p = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = wait_for([tmp_path / "qemu.pid", tmp_path / "make.pid"])
    try:
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    return p.returncode, err, pids


def test_sigterm_stops_the_boots_and_builds_the_lab_started(tmp_path):
    code, err, pids = stopped_lab(tmp_path, signal.SIGTERM)
    # before the handler, SIGTERM ended Python at once (exit -15) and the
    # sleeping children lived on, reparented to init
    assert code == 130 and "lab: interrupted" in err
    assert "stopped 2 process(es)" in err
    assert not [pid for pid in pids if alive(pid)]


def test_ctrl_c_stops_them_too(tmp_path):
    code, err, pids = stopped_lab(tmp_path, signal.SIGINT)
    assert code == 130 and "lab: interrupted" in err
    assert not [pid for pid in pids if alive(pid)]


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace():
    p = util.spawn(["sh", "-c", "trap '' TERM; while :; do sleep 1; done"])
    time.sleep(0.3)             # let the shell set its trap
    t0 = time.monotonic()
    assert util.stop_children(grace=0.5) == 1
    assert p.returncode == -signal.SIGKILL
    assert time.monotonic() - t0 < 5


def test_ended_children_are_not_stopped_again():
    p = util.spawn(["true"])
    p.wait()
    assert util.stop_children(grace=0.5) == 0
