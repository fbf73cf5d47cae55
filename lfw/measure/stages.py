"""Where a pipeline's CPU goes: thread CPU time per stage, summed over every loading process of a pass.

A :class:`StageClock` belongs to a dataset (its ``stage_clock`` attribute): the dataset times ``read``,
``decode`` and ``transform`` with it, :class:`TimedCollate` times ``collate`` and :class:`~lfw.measure.LoaderPass`
times ``receive``; what each stage holds, and the gap no stage claims, are in docs/decoders.md. Times are
``time.thread_time()``, so a stage that waits is charged only for the CPU it used and the stages can be compared
with the process tree's measured CPU (:attr:`~lfw.measure.PassResult.cpu_s`).

The totals live in a small shared-memory array (``multiprocessing.RawArray``) with one row per loading process
(the main process's main thread, its other threads, DataLoader worker ``i``), so forked and spawned workers add
to the same figures the main process reads after the pass. Each process adds under one lock of its own (decode
threads inside a process add concurrently), made anew in a forked child. A process that is neither the main
process nor a DataLoader worker (a torchdata map process) adds to the main process's rows without that
process's lock: its figures are not the breakdown's.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch.utils.data import Subset, default_collate, get_worker_info

from lfw.errors import LFWError

READ, DECODE, TRANSFORM, COLLATE, RECEIVE = "read", "decode", "transform", "collate", "receive"
STAGES = (READ, DECODE, TRANSFORM, COLLATE, RECEIVE)
_IMAGES = len(STAGES)  # the column that counts images (added by the stage that meets each image first)
_COLUMNS = len(STAGES) + 1
MAIN_THREAD, MAIN_OTHER = 0, 1  # rows of the main process; worker i adds to row 2 + i
MAX_WORKERS = 64

now = time.thread_time  # the clock every stage is read with
_lock = threading.Lock()  # this process's: guards every clock's adds from its threads


def _new_lock_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # the parent's may have been held by a thread that does not exist here


os.register_at_fork(after_in_child=_new_lock_after_fork)


@dataclass(frozen=True)
class StageTotals:
    """CPU seconds per stage over one pass, split by where they were spent, and the images they covered."""

    main: dict[str, float] = field(default_factory=dict)  # main process, all its threads
    workers: dict[str, float] = field(default_factory=dict)  # every DataLoader worker
    images: int = 0

    def per_image_ms(self) -> dict[str, float]:
        """Stage -> ms of CPU per image, main and workers together (every stage of :data:`STAGES`)."""
        n = max(self.images, 1)
        return {s: 1e3 * (self.main.get(s, 0.0) + self.workers.get(s, 0.0)) / n for s in STAGES}


class StageClock:
    """Stage CPU times of one dataset, added by every process that loads from it (see the module docstring).

    ``add(stage, since)`` adds ``now() - since`` to ``stage`` in the calling process's row; ``images`` counts
    the items met. Picklable: a spawned worker receives the same shared array (while the DataLoader spawns it);
    any other pickle or copy gets a clock of its own, zeroed.
    """

    def __init__(self, max_workers: int = MAX_WORKERS) -> None:
        if max_workers < 0:
            raise LFWError(f"max_workers must be 0 or more, got {max_workers}")
        self.rows = max_workers + 2
        self._array = multiprocessing.RawArray("d", self.rows * _COLUMNS)

    def __getstate__(self) -> dict[str, Any]:
        spawning = multiprocessing.context.get_spawning_popen() is not None  # a worker being started
        return {"rows": self.rows, "_array": self._array if spawning else None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.rows, self._array = state["rows"], state["_array"]
        if self._array is None:  # pickled for anything but starting a process: a clock of its own, zeroed
            self._array = multiprocessing.RawArray("d", self.rows * _COLUMNS)

    def _row(self) -> int:
        info = get_worker_info()
        if info is not None:
            if info.id + 2 >= self.rows:
                raise LFWError(f"worker {info.id} has no row in this stage clock (made for {self.rows - 2} "
                               "workers); make the dataset with a larger max_workers")
            return 2 + info.id
        return MAIN_THREAD if threading.current_thread() is threading.main_thread() else MAIN_OTHER

    def add(self, stage: str, since: float, images: int = 0) -> float:
        """Add the CPU time since ``since`` (a :func:`now` reading) to ``stage``; returns ``now()`` for chaining."""
        t = now()
        base = self._row() * _COLUMNS
        column = STAGES.index(stage)
        with _lock:
            self._array[base + column] += t - since
            if images:
                self._array[base + _IMAGES] += images
        return t

    def add_main_seconds(self, stage: str, seconds: float) -> None:
        """Add ``seconds`` to ``stage`` of the main thread's row (the pass's own ``receive`` time)."""
        with _lock:
            self._array[MAIN_THREAD * _COLUMNS + STAGES.index(stage)] += seconds

    def main_thread_seconds(self) -> float:
        """CPU seconds the main thread has spent in timed stages since the last :meth:`reset`."""
        return sum(self._array[MAIN_THREAD * _COLUMNS: MAIN_THREAD * _COLUMNS + _IMAGES])

    def reset(self) -> None:
        """Zero every row (before a pass; no worker may be loading from this dataset then)."""
        with _lock:
            for i in range(len(self._array)):
                self._array[i] = 0.0

    def totals(self) -> StageTotals:
        """The stage seconds since the last :meth:`reset`, main process and workers apart."""
        rows = [list(self._array[r * _COLUMNS:(r + 1) * _COLUMNS]) for r in range(self.rows)]
        main = {s: rows[MAIN_THREAD][i] + rows[MAIN_OTHER][i] for i, s in enumerate(STAGES)}
        workers = {s: sum(r[i] for r in rows[2:]) for i, s in enumerate(STAGES)}
        return StageTotals(main, workers, round(sum(r[_IMAGES] for r in rows)))


def stage_clock_of(dataset: Any) -> StageClock | None:
    """The stage clock a dataset (or the dataset under a ``Subset``) times itself with; None if it has none."""
    while isinstance(dataset, Subset):
        dataset = dataset.dataset
    clock = getattr(dataset, "stage_clock", None)
    return clock if isinstance(clock, StageClock) else None


class TimedCollate:
    """``collate_fn`` that times ``collate`` (in the process that collates: a worker, or the main process)."""

    def __init__(self, clock: StageClock, collate: Callable[[list[Any]], Any] = default_collate) -> None:
        self.clock = clock
        self.collate = collate

    def __call__(self, items: list[Any]) -> Any:
        t = now()
        batch = self.collate(items)
        self.clock.add(COLLATE, t)
        return batch
