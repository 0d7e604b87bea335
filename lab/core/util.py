# SPDX-License-Identifier: GPL-2.0-only
"""Small helpers shared by the lab modules: running commands and messages."""

import os
import shlex
import signal
import subprocess
import sys
import threading
import time

# The processes spawn() started and that may still run: what stop_children()
# ends when the lab itself is stopped (a bench's boots and builds run in
# threads, where no KeyboardInterrupt reaches subprocess.run()).  Once it
# is set, _stopping makes spawn() refuse, so that a thread whose child was
# ended does not start the next one.
_children = set()
_children_lock = threading.Lock()
_stopping = threading.Event()


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
            child = spawn(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT,
                          text=True)
            stdout, stderr = reap(child)
    else:
        pipe = subprocess.PIPE if capture else None
        child = spawn(cmd, cwd=cwd, env=env, text=True, stdout=pipe, stderr=pipe)
        stdout, stderr = reap(child)
    p = subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)
    if check and p.returncode != 0:
        where = f" (log: {log})" if log else ""
        detail = ""
        if capture and p.stderr:
            detail = "\n" + p.stderr.strip()
        raise LabError(f"command failed with exit {p.returncode}: "
                       f"{' '.join(str(c) for c in cmd)}{where}{detail}")
    return p


def reap(child, grace=5.0):
    """child.communicate(), and on any exception (Ctrl-C or SIGTERM in the
    main thread) the child ended and reaped before the exception goes on:
    SIGTERM first, so that a make ends the compilers and sub-makes it
    started (SIGKILL would leave them running), SIGKILL after @grace
    seconds."""
    try:
        return child.communicate()
    except BaseException:
        _signal(child, signal.SIGTERM)
        _wait_or_kill(child, grace)
        raise


def _signal(child, sig):
    """Send @sig to a child, or to its whole process group when spawn()
    started it as the leader of one (start_new_session=True): a shell
    started that way, such as 'lab fresh''s chroot, does not pass SIGTERM
    on to the commands it runs, so they get it from the group.  The group
    is the one recorded at spawn(), never looked up again, so that a pid
    reused after the child was reaped cannot name another group."""
    group = getattr(child, "lab_group", None)
    if group is None:
        child.send_signal(sig)      # does nothing once the child is reaped
        return
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass


def _group_alive(child):
    """Whether any process of the group spawn() started @child to lead is
    left (the leader itself may have ended long before the others)."""
    try:
        os.killpg(child.lab_group, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_or_kill(child, timeout):
    """Wait up to @timeout seconds for a child told to end, and for the
    rest of its group when it leads one; SIGKILL what is left by then (the
    whole group) and reap the child."""
    end = time.monotonic() + timeout
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    if getattr(child, "lab_group", None) is not None:
        while _group_alive(child) and time.monotonic() < end:
            time.sleep(0.05)
        if _group_alive(child):
            _signal(child, signal.SIGKILL)
    if child.poll() is None:
        child.kill()
    child.wait()


def spawn(cmd, **kwargs):
    """subprocess.Popen(cmd, **kwargs), remembered until it has ended, so
    that stop_children() can end it.  A child started as the leader of a
    process group of its own (start_new_session=True or process_group=0)
    is signalled with its whole group (see _signal()).  Raises LabError
    once stop_children() has run: a stopped lab starts nothing new."""
    with _children_lock:
        if _stopping.is_set():
            raise LabError(f"the lab is stopping: {cmd[0]} not started")
        p = subprocess.Popen(cmd, **kwargs)
        leads = kwargs.get("start_new_session") or kwargs.get("process_group") == 0
        p.lab_group = p.pid if leads else None
        for old in [c for c in _children if c.poll() is not None]:
            _children.discard(old)
        _children.add(p)
    return p


def stop_children(grace=5.0):
    """End every process spawn() started that still runs, and make spawn()
    refuse from now on: SIGTERM (make then stops its compilers, QEMU its
    guest), SIGKILL to those still running after @grace seconds.  The
    command line calls it on its way out, so that a lab stopped by Ctrl-C
    or SIGTERM leaves no QEMU or make running.  Returns how many processes
    it ended."""
    with _children_lock:
        _stopping.set()
        live = [c for c in _children if c.poll() is None]
    for c in live:
        _signal(c, signal.SIGTERM)
    end = time.monotonic() + grace
    for c in live:
        _wait_or_kill(c, max(0.0, end - time.monotonic()))
    with _children_lock:
        _children.difference_update(live)
    return len(live)


def out(cmd, cwd=None):
    """Run a command and return its stripped stdout."""
    return run(cmd, cwd=cwd, capture=True, quiet=True).stdout.strip()


class Timer:
    def __init__(self):
        self.t0 = time.monotonic()

    def __str__(self):
        return mmss(time.monotonic() - self.t0)


def mmss(seconds):
    """A duration as the lab prints it: 3m07s."""
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s"


def ccache_stats():
    """ccache's counters (--print-stats: cache_miss, files_in_cache, ...),
    {} without ccache."""
    try:
        p = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True)
    except OSError:
        return {}
    stats = {}
    for line in p.stdout.splitlines():
        key, _, value = line.partition("\t")
        if value.strip().isdigit():
            stats[key] = int(value)
    return stats


def ccache_misses(stats=None):
    """ccache's count of compilations it could not answer from its cache
    (cache_miss of --print-stats, or of @stats read already), 0 without
    ccache."""
    return (ccache_stats() if stats is None else stats).get("cache_miss", 0)
