"""Memory of the whole process tree: the main process and every DataLoader worker (RSS, PSS, USS;
docs/methodology.md, Memory). Reading PSS walks every page table, so sampling runs in a background thread at a
coarse interval (its cost: the ``overhead`` group). :func:`frozen_gc` keeps a forked worker's cyclic GC from
copying inherited objects."""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

MIB = 1024 * 1024
SHM = Path("/dev/shm")


@dataclass(frozen=True)
class TreeSnapshot:
    """Memory of a process tree at one instant (MiB): the tree's RSS, PSS and USS, each child's USS by pid, the root
    process's own PSS and USS, and the machine's ``/dev/shm`` in use (None where there is none)."""

    t: float
    rss: float
    pss: float
    uss: float
    child_uss: dict[int, float] = field(default_factory=dict)
    main_pss: float | None = None
    main_uss: float | None = None
    shm: float | None = None


def shm_used_mib(shm: Path = SHM) -> float | None:
    """MiB of ``/dev/shm`` in use now, machine-wide (batches in flight live there); None without one."""
    try:
        st = os.statvfs(shm)
    except OSError:
        return None
    return (st.f_blocks - st.f_bfree) * st.f_frsize / MIB


def tree_snapshot(root: psutil.Process, t0: float = 0.0) -> TreeSnapshot:
    """Sum RSS, PSS and USS over ``root`` and all its descendants (processes that vanish are skipped)."""
    rss = pss = uss = 0.0
    main_pss = main_uss = None
    child_uss: dict[int, float] = {}
    try:
        children = root.children(recursive=True)
    except psutil.Error:
        children = []
    for proc in [root, *children]:
        try:
            info = proc.memory_full_info()
        except psutil.Error:  # a worker exiting between listing and reading
            continue
        rss += info.rss / MIB
        pss += info.pss / MIB
        uss += info.uss / MIB
        if proc.pid != root.pid:
            child_uss[proc.pid] = info.uss / MIB
        else:
            main_pss, main_uss = info.pss / MIB, info.uss / MIB
    return TreeSnapshot(time.perf_counter() - t0, rss, pss, uss, child_uss, main_pss, main_uss, shm_used_mib())


class TreeSampler:
    """Samples :func:`tree_snapshot` in a background thread every ``interval`` seconds; ``mark()`` asks for one
    extra sample at once without blocking the caller."""

    def __init__(self, interval: float = 0.5, pid: int | None = None) -> None:
        self.interval = interval
        self.root = psutil.Process(pid)
        self.samples: list[TreeSnapshot] = []
        self.cpu_s = 0.0  # the sampling thread's CPU time before the final snapshot: what sampling costs the pass
        self.marks: list[TreeSnapshot] = []
        self._t0 = time.perf_counter()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._mark_requested = False
        self._thread: threading.Thread | None = None

    def start(self, t0: float | None = None) -> None:
        self._t0 = time.perf_counter() if t0 is None else t0
        self._thread = threading.Thread(target=self._loop, name="lfw-memory-sampler", daemon=True)
        self._thread.start()

    def mark(self) -> None:
        self._mark_requested = True
        self._wake.set()

    def request_stop(self) -> None:
        """Ask the thread to take one final snapshot and exit; returns at once (the caller's clock is running)."""
        self._stop.set()
        self._wake.set()

    def join(self) -> TreeSnapshot:
        """Wait for the final snapshot (taken while the workers still exist) and return it."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join()
        if not self.samples:
            self.samples.append(tree_snapshot(self.root, self._t0))
        return self.samples[-1]

    def _loop(self) -> None:
        cpu0 = time.thread_time()
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            # Read both requests before the snapshot: one that arrives during it is served by the next one, so a
            # mark or the final snapshot is never a reading that started before it was asked for.
            stopping = self._stop.is_set()
            marking, self._mark_requested = self._mark_requested, False
            if stopping:
                self.cpu_s = time.thread_time() - cpu0
            snap = tree_snapshot(self.root, self._t0)
            self.samples.append(snap)
            if marking:
                self.marks.append(snap)
            if stopping:
                return


@contextmanager
def frozen_gc(freeze: bool = True) -> Iterator[None]:
    """Collect, then ``gc.freeze()`` every object now alive until the block ends (workers forked inside never
    collect the parent's objects); a no-op if ``freeze`` is off."""
    if not freeze or gc.get_freeze_count():  # already frozen by the caller: theirs to undo, not ours
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
