"""Small helpers shared by the lab modules: running commands and messages."""

import shlex
import subprocess
import sys
import time


class LabError(Exception):
    """An error the user can act on; printed without a traceback."""


def say(msg):
    print(f"lab: {msg}", flush=True)


def warn(msg):
    print(f"lab: WARNING: {msg}", file=sys.stderr, flush=True)


def run(cmd, *, cwd=None, env=None, log=None, check=True, capture=False,
        quiet=False):
    """Run a command, optionally appending its output to a log file.

    Returns the CompletedProcess.  With check=True a non-zero exit raises
    LabError naming the command and the log.
    """
    if not quiet:
        say("$ " + " ".join(shlex.quote(str(c)) for c in cmd))
    if log is not None:
        with open(log, "a") as f:
            f.write(f"\n$ {' '.join(shlex.quote(str(c)) for c in cmd)}\n")
            f.flush()
            p = subprocess.run(cmd, cwd=cwd, env=env, stdout=f,
                               stderr=subprocess.STDOUT, text=True)
    else:
        p = subprocess.run(cmd, cwd=cwd, env=env, text=True,
                           capture_output=capture)
    if check and p.returncode != 0:
        where = f" (log: {log})" if log else ""
        detail = ""
        if capture and p.stderr:
            detail = "\n" + p.stderr.strip()
        raise LabError(f"command failed with exit {p.returncode}: "
                       f"{' '.join(str(c) for c in cmd)}{where}{detail}")
    return p


def out(cmd, cwd=None):
    """Run a command and return its stripped stdout."""
    return run(cmd, cwd=cwd, capture=True, quiet=True).stdout.strip()


class Timer:
    def __init__(self):
        self.t0 = time.monotonic()

    def __str__(self):
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}m{s % 60:02d}s"
