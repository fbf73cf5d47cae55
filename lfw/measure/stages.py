"""Where a pipeline's CPU goes: thread CPU time per stage, summed over every loading process of a pass.

A :class:`StageClock` belongs to a dataset (``stage_clock``): the dataset times ``read``, ``decode`` and
``transform``, :class:`TimedCollate` times ``collate``, :class:`~lfw.measure.LoaderPass` times ``receive``
(docs/decoders.md). Times are ``time.thread_time()``. A clock can also count named events (``counts``, fixed when
it is made), such as the decoder or the index kind that really ran in each loading process. The totals live in a
shared ``multiprocessing.RawArray``, one row per loading process (any other process adds to the main rows)."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torch.utils.data import Subset, default_collate, get_worker_info

from lfw.data.index import INDEX_KINDS, index_kind
from lfw.errors import LFWError

READ, DECODE, TRANSFORM, COLLATE, RECEIVE = "read", "decode", "transform", "collate", "receive"
STAGES = (READ, DECODE, TRANSFORM, COLLATE, RECEIVE)
_IMAGES = len(STAGES)  # the column that counts images (added by the stage that meets each image first)
_COUNTS = _IMAGES + 1  # the first column of the clock's named counts
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
    """CPU seconds per stage over one pass, split by where they were spent, the images they covered, and the
    clock's named counts summed over every loading process (only those that moved)."""

    main: dict[str, float] = field(default_factory=dict)  # main process, all its threads
    workers: dict[str, float] = field(default_factory=dict)  # every DataLoader worker
    images: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def per_image_ms(self) -> dict[str, float]:
        """Stage -> ms of CPU per image, main and workers together (every stage of :data:`STAGES`)."""
        n = max(self.images, 1)
        return {s: 1e3 * (self.main.get(s, 0.0) + self.workers.get(s, 0.0)) / n for s in STAGES}


class StageClock:
    """Stage CPU times of one dataset, added by every process that loads from it: ``add(stage, since)``,
    ``images``, ``count(name)``. A spawned worker unpickles the same shared array; any other copy is zeroed."""

    def __init__(self, max_workers: int = MAX_WORKERS, counts: Sequence[str] = ()) -> None:
        if max_workers < 0:
            raise LFWError(f"max_workers must be 0 or more, got {max_workers}")
        self.rows = max_workers + 2
        self.counts = tuple(counts)
        self._array = self._new_array()

    @property
    def columns(self) -> int:
        return _COUNTS + len(self.counts)

    def _new_array(self) -> Any:
        return multiprocessing.RawArray("d", self.rows * self.columns)

    def __getstate__(self) -> dict[str, Any]:
        spawning = multiprocessing.context.get_spawning_popen() is not None  # a worker being started
        return {"rows": self.rows, "counts": self.counts, "_array": self._array if spawning else None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.rows, self.counts, self._array = state["rows"], state["counts"], state["_array"]
        if self._array is None:  # pickled for anything but starting a process: a clock of its own, zeroed
            self._array = self._new_array()

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
        base = self._row() * self.columns
        column = STAGES.index(stage)
        with _lock:
            self._array[base + column] += t - since
            if images:
                self._array[base + _IMAGES] += images
        return t

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the count ``name`` (one of the clock's ``counts``) in the calling process's row."""
        if name not in self.counts:
            raise LFWError(f"this stage clock counts {', '.join(self.counts) or 'nothing'}, not {name!r}")
        base = self._row() * self.columns
        with _lock:
            self._array[base + _COUNTS + self.counts.index(name)] += n

    def add_receive(self, next_cpu_s: float) -> None:
        """Add to the main thread's ``receive`` stage what of ``next_cpu_s`` (its CPU inside ``next()`` since the
        last :meth:`reset`) no timed stage of that thread claimed: the pass's own hand-over time."""
        base = MAIN_THREAD * self.columns
        with _lock:
            self._array[base + STAGES.index(RECEIVE)] += max(0.0, next_cpu_s - sum(self._array[base:base + _IMAGES]))

    def reset(self) -> None:
        """Zero every row (before a pass; no worker may be loading from this dataset then)."""
        with _lock:
            for i in range(len(self._array)):
                self._array[i] = 0.0

    def totals(self) -> StageTotals:
        """The stage seconds since the last :meth:`reset`, main process and workers apart."""
        rows = [list(self._array[r * self.columns:(r + 1) * self.columns]) for r in range(self.rows)]
        main = {s: rows[MAIN_THREAD][i] + rows[MAIN_OTHER][i] for i, s in enumerate(STAGES)}
        workers = {s: sum(r[i] for r in rows[2:]) for i, s in enumerate(STAGES)}
        counts = {name: round(sum(r[_COUNTS + i] for r in rows)) for i, name in enumerate(self.counts)}
        return StageTotals(main, workers, round(sum(r[_IMAGES] for r in rows)),
                           {name: n for name, n in counts.items() if n})


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


def loaded_dataset(fallback: Any) -> Any:
    """The dataset the calling process loads from: a worker's own copy (``get_worker_info``), else ``fallback``;
    through any ``Subset``."""
    info = get_worker_info()
    dataset = info.dataset if info is not None else fallback
    while isinstance(dataset, Subset):
        dataset = dataset.dataset
    return dataset


class IndexCountingCollate:
    """``collate_fn`` that counts once per batch the kind of file index (:data:`lfw.data.index.INDEX_KINDS`) the
    collating process's dataset holds in ``paths`` now (none for an unknown one)."""

    def __init__(self, clock: StageClock, dataset: Any, collate: Callable[[list[Any]], Any] = default_collate) -> None:
        if set(INDEX_KINDS) - set(clock.counts):
            raise LFWError(f"an index-counting clock must count {', '.join(INDEX_KINDS)}")
        self.clock = clock
        self.dataset = dataset
        self.collate = collate

    def __call__(self, items: list[Any]) -> Any:
        if (kind := index_kind(getattr(loaded_dataset(self.dataset), "paths", None))) is not None:
            self.clock.count(kind)
        return self.collate(items)
