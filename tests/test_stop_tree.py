"""The one way processes are stopped (:func:`lfw.cli.stop.stop_tree`): ask, grace, kill, and say what was forced."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time
from typing import Any

import psutil

from lfw.cli.stop import stop_tree

# A child that ignores SIGTERM and starts a grandchild that does too; it prints the grandchild's pid once both wait.
STUBBORN = """import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"],
    stdout=subprocess.PIPE, text=True)
grandchild.stdout.readline()
print(grandchild.pid, flush=True)
time.sleep(60)"""


def _started(code: str, **kwargs: object) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **kwargs)  # type: ignore[call-overload]
    assert proc.stdout is not None
    with proc.stdout:  # the one line it prints
        return proc, int(proc.stdout.readline())


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_process_that_ends_when_asked_is_not_killed() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stopped = stop_tree([proc], grace_s=10.0)
    assert stopped.asked == (proc.pid,) and stopped.killed == ()
    assert proc.returncode == -15  # reaped through its own handle: its exit status is kept


def test_what_ignores_the_ask_is_killed_with_everything_below_it_and_reported() -> None:
    proc, grandchild = _started(STUBBORN)
    t0 = time.monotonic()
    stopped = stop_tree([proc], grace_s=0.5)
    assert time.monotonic() - t0 < 10, "the grace is bounded: what ignores the ask is killed after it"
    assert stopped.asked == (proc.pid,)
    assert set(stopped.killed) == {proc.pid, grandchild}
    assert proc.returncode == -9 and _gone(grandchild)


def test_a_group_is_stopped_after_its_leader_has_gone() -> None:
    code = STUBBORN.rsplit("\n", 1)[0]  # without its last line: the leader ends once its grandchild waits
    proc, grandchild = _started(code, start_new_session=True)  # the leader ends, its grandchild stays in its group
    proc.wait(timeout=10)
    stopped = stop_tree([proc], grace_s=0.5, ask_all=True, group=True)
    assert grandchild in stopped.killed and _gone(grandchild)


def _sleep(ready: Any) -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.set()
    time.sleep(60)


def test_multiprocessing_workers_and_plain_pids_are_stopped_and_reaped() -> None:
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    worker = context.Process(target=_sleep, args=(ready,))
    worker.start()
    assert ready.wait(timeout=30), "the worker ignores SIGTERM before it is asked to stop"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stopped = stop_tree([worker, other.pid], grace_s=0.5)
    assert set(stopped.asked) == {worker.pid, other.pid}
    assert stopped.killed == (worker.pid,)  # the plain sleeper ended when asked
    assert worker.exitcode == -9
    other.wait(timeout=5)


def test_handles_already_gone_are_nothing_to_do() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert stop_tree([proc], grace_s=0.1) == stop_tree([], grace_s=0.1)
