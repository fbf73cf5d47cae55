"""Stopping processes, one way for every caller (:func:`stop_tree`): a helper child, a step past its budget, a
count's valgrind, the workers a pipeline or a peer left behind. It never raises for a process already gone."""

from __future__ import annotations

import contextlib
import multiprocessing.process
import os
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psutil

Handle = subprocess.Popen[Any] | multiprocessing.process.BaseProcess | psutil.Process | int
POLL_S = 0.02
REAP_S = 5.0  # for a killed process to be gone


@dataclass(frozen=True)
class Stopped:
    """What :func:`stop_tree` did: the processes it asked to end, and those still running after the grace (killed)."""

    asked: tuple[int, ...] = ()
    killed: tuple[int, ...] = ()


def _process(handle: Handle) -> psutil.Process | None:
    """The running process behind ``handle``; None once it is gone (a reaped handle's pid may name another now)."""
    if isinstance(handle, subprocess.Popen) and handle.returncode is not None:
        return None
    if isinstance(handle, multiprocessing.process.BaseProcess) and (handle.pid is None or handle.exitcode is not None):
        return None
    try:
        if isinstance(handle, psutil.Process):
            return handle if handle.is_running() else None
        return psutil.Process(handle if isinstance(handle, int) else handle.pid)
    except psutil.Error:
        return None


def _below(roots: Iterable[psutil.Process], groups: Iterable[int]) -> list[psutil.Process]:
    """Every process below ``roots``, and every process whose process group is one of ``groups``."""
    found: dict[int, psutil.Process] = {}
    for root in roots:
        with contextlib.suppress(psutil.Error):
            found.update((p.pid, p) for p in root.children(recursive=True))
    wanted = set(groups)
    if wanted:
        for process in psutil.process_iter():
            with contextlib.suppress(psutil.Error, OSError):
                if os.getpgid(process.pid) in wanted:
                    found.setdefault(process.pid, process)
    return list(found.values())


def _ended(process: psutil.Process) -> bool:
    """Whether ``process`` has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _signal(processes: Iterable[psutil.Process], kill: bool) -> list[int]:
    sent = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            if not _ended(process):
                (process.kill if kill else process.terminate)()  # psutil checks the pid still names that process
                sent.append(process.pid)
    return sent


def stop_tree(handles: Iterable[Handle], grace_s: float, *, ask_all: bool = False, group: bool = False) -> Stopped:
    """End ``handles`` (a ``Popen``, a ``multiprocessing`` process, a ``psutil.Process`` or a pid) and what they
    started: SIGTERM to each of them (``ask_all``: also to every process below them), up to ``grace_s`` for them to
    end, then SIGKILL to whatever is left of them and of every process below them, looked up before the ask and
    again after the grace (``group``: also in the process group each leads, e.g. one started with
    ``start_new_session=True``, whose members outlive their leader).
    Handles are reaped; the returned :class:`Stopped` says who was asked and who was killed."""
    handles = list(handles)
    roots = [p for p in map(_process, handles) if p is not None]
    groups = [h.pid for h in handles if group and isinstance(h, subprocess.Popen)]
    seen = {p.pid: p for p in [*roots, *_below(roots, groups)]}
    asked = _signal(seen.values() if ask_all else roots, kill=False)
    deadline = time.monotonic() + grace_s
    while asked and time.monotonic() < deadline and not all(map(_ended, roots)):
        time.sleep(POLL_S)
    left = {**seen, **{p.pid: p for p in _below(roots, groups)}}
    killed = _signal(left.values(), kill=True)
    for handle in handles:  # reap them
        with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError, AssertionError):
            if isinstance(handle, subprocess.Popen):
                handle.wait(timeout=REAP_S)
            elif isinstance(handle, multiprocessing.process.BaseProcess):
                handle.join(REAP_S)
    native = {h.pid for h in handles if isinstance(h, subprocess.Popen | multiprocessing.process.BaseProcess)}
    psutil.wait_procs([p for p in left.values() if p.pid not in native], timeout=REAP_S)  # reaps our own children
    return Stopped(tuple(asked), tuple(killed))
