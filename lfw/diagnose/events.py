"""Per-batch timelines shared by the measured loop and the simulator, and the instrumentation that stamps them.

A measured batch carries a :class:`LoadStamp` taken inside the worker with :func:`time.perf_counter`
(``CLOCK_MONOTONIC`` on Linux: one clock for every process, so worker and main-loop times share an axis).
:class:`TimedDataset`'s ``__getitems__`` notes when a batch starts loading; :class:`StampCollate` stamps its end
and appends the stamp as the batch's *last* element, so ``batch[0]`` stays the images LoaderPass counts;
:func:`instrument` stamps any dataset this way (map-style, iterable, or of whole batches).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch.utils.data import Dataset, IterableDataset, default_collate, get_worker_info
from torch.utils.data._utils.pin_memory import pin_memory as pin_batch

from lfw.data.collate import collate_skipping

MAIN_PROCESS = -1  # worker id of batches loaded in the main process (num_workers=0)
_batch_start = math.nan  # per process: when the batch this process is loading was first asked for (_mark_start)


@dataclass(frozen=True)
class LoadStamp:
    """Who loaded a batch and when (absolute ``perf_counter`` seconds, comparable across processes)."""

    worker: int
    start: float
    end: float


@dataclass
class BatchRecord:
    """One batch's life, in seconds since the pass (or simulation) started; NaN where it did not happen:
    ``load_start``/``load_end`` in the worker, ``ask`` when the main loop calls ``next()``, ``got`` when it has the
    batch, ``step_start``/``step_end`` the training step (any host-to-device copy lies between got and step)."""

    index: int
    worker: int
    load_start: float = math.nan
    load_end: float = math.nan
    ask: float = math.nan
    got: float = math.nan
    step_start: float = math.nan
    step_end: float = math.nan

    @property
    def wait(self) -> float:
        """How long the main loop blocked on this batch."""
        return self.got - self.ask

    @property
    def load(self) -> float:
        return self.load_end - self.load_start

    @classmethod
    def stamped(cls, index: int, stamp: LoadStamp | None, t0: float, times: Iterable[float]) -> BatchRecord:
        """A batch's record from its ask, got, step start and step end (``times``, already on the pass's clock) and
        its stamp (absolute ``perf_counter``, put on that clock by subtracting ``t0``)."""
        ask, got, step_start, step_end = times
        rec = cls(index, stamp.worker if stamp else MAIN_PROCESS, ask=ask, got=got, step_start=step_start,
                  step_end=step_end)
        if stamp is not None:
            rec.load_start, rec.load_end = stamp.start - t0, stamp.end - t0
        return rec


class StartedBatch(list[Any]):
    """The samples of one batch plus the moment their loading started (what ``__getitems__`` hands collate)."""

    def __init__(self, samples: Iterable[Any] = (), start: float = math.nan) -> None:
        super().__init__(samples)
        self.start = start


def fetch_started(dataset: Any, indices: Sequence[int], fetch: Callable[[list[int]], Any] | None) -> StartedBatch:
    """Note the start, then fetch ``indices`` with ``fetch`` (a batched ``__getitems__``) or item by item."""
    start = time.perf_counter()
    return StartedBatch(fetch(list(indices)) if fetch is not None else [dataset[i] for i in indices], start)


def with_stamp(batch: Any, stamp: LoadStamp) -> list[Any]:
    """``[*batch, stamp]``: the layout :func:`split_stamp` takes apart (``batch[0]`` stays the images)."""
    return [*(batch if isinstance(batch, list | tuple) else [batch]), stamp]


class Wrapping:
    """A dataset wrapper's common part: the wrapped dataset and its length."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)


class TimedDataset(Wrapping, Dataset):
    """Wraps a map-style dataset so that each batch notes when its loading started, in whichever process (the
    fetcher calls ``__getitems__`` once per batch); a dataset's own ``__getitems__`` is kept."""

    def __getitem__(self, i: int) -> Any:
        return self.dataset[i]

    def __getitems__(self, indices: Sequence[int]) -> StartedBatch:
        fetch = getattr(self.dataset, "__getitems__", None)
        return fetch_started(self.dataset, indices, fetch if callable(fetch) else None)


class StampCollate:
    """``inner``, then the batch joined with its :class:`LoadStamp` by ``join`` (``[*batch, stamp]`` by default),
    which ends now. The start is the :class:`StartedBatch`'s, else the one this process marked (:func:`_mark_start`),
    else now. Picklable (a class, not a closure) so that spawn and forkserver workers can receive it."""

    def __init__(self, inner: Callable[[list[Any]], Any] = default_collate,
                 join: Callable[[Any, LoadStamp], Any] = with_stamp) -> None:
        self.inner = inner
        self.join = join

    def __call__(self, samples: Any) -> Any:
        start = getattr(samples, "start", _batch_start)
        batch = self.inner(list(samples) if isinstance(samples, StartedBatch) else samples)
        end = time.perf_counter()
        worker = getattr(get_worker_info(), "id", MAIN_PROCESS)  # no worker info in the main process
        return self.join(batch, LoadStamp(worker, end if math.isnan(start) else start, end))


class Stamped:
    """A collated batch and the stamp of who loaded it and when; pinned as the batch would be."""

    __slots__ = ("batch", "stamp")

    def __init__(self, batch: Any, stamp: LoadStamp) -> None:
        self.batch, self.stamp = batch, stamp

    def pin_memory(self) -> Stamped:
        return Stamped(pin_batch(self.batch), self.stamp)


def split_stamp(batch: Any) -> tuple[Any, LoadStamp | None]:
    """The batch without its stamp (a :class:`Stamped`'s own, or ``[*batch, stamp]`` without the last element), and
    the stamp (``None`` for an uninstrumented batch, returned as it is)."""
    if isinstance(batch, Stamped):
        return batch.batch, batch.stamp
    if isinstance(batch, list | tuple) and batch and isinstance(batch[-1], LoadStamp):
        return list(batch[:-1]), batch[-1]
    return batch, None


def queue_depth(records: Sequence[BatchRecord], times: np.ndarray) -> np.ndarray:
    """Batches loaded but not yet received by the main loop, at each of ``times`` (the prefetch queue as the
    consumer sees it)."""
    ends = np.array([r.load_end for r in records if not math.isnan(r.load_end)])
    gots = np.array([r.got if not math.isnan(r.got) else math.inf for r in records if not math.isnan(r.load_end)])
    return ((ends <= times[:, None]) & (gots > times[:, None])).sum(axis=1)  # a row per time, a column per batch


def _mark_start() -> None:
    global _batch_start
    _batch_start = time.perf_counter()


class _TimedIterable(Wrapping, IterableDataset):
    """An ``IterableDataset`` whose every ``batch_size``-th item (the first of a batch the iterable fetcher asks
    for) marks a batch's start in the loading process."""

    def __init__(self, dataset: IterableDataset, batch_size: int) -> None:
        super().__init__(dataset)
        self.batch_size = batch_size

    def __iter__(self) -> Iterator[Any]:
        _mark_start()
        for n, item in enumerate(self.dataset, 1):
            yield item
            if n % self.batch_size == 0:  # resumed: the next item, the next batch's first, is asked for now
                _mark_start()


class _TimedWholeBatches(Wrapping, Dataset):
    """A dataset whose items are whole batches (``yields_batches``): asking for an item marks its start."""

    yields_batches = True

    def __getitem__(self, i: int) -> Any:
        _mark_start()
        return self.dataset[i]


class _Stamped(Stamped):
    """A worker's whole batch that becomes a batch only when the main process unpickles it (a slot batch),
    with its stamp: unpickled as ``[*batch, stamp]``."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return with_stamp, (self.batch, self.stamp)


def _whole(batch: Any) -> Any:
    return batch


def _join_whole(batch: Any, stamp: LoadStamp) -> Any:
    """A whole batch with its stamp: a worker's batch that is no list (a slot batch) as a :class:`_Stamped`."""
    if get_worker_info() is not None and not isinstance(batch, list | tuple):
        return _Stamped(batch, stamp)
    return with_stamp(batch, stamp)


def instrument(dataset: Dataset, batch_size: int) -> tuple[Dataset, Callable[[Any], Any]]:
    """The dataset and collate function that stamp every batch with who loaded it and when: a batched fetch
    (``__getitems__``) is kept, an ``IterableDataset`` marks a batch at its first item, a dataset of whole batches
    (``yields_batches``) at the item; items are collated by ``default_collate`` (the skipping one when the
    dataset skips bad files)."""
    inner = collate_skipping if getattr(dataset, "on_error", "raise") == "skip" else default_collate
    if getattr(dataset, "yields_batches", False):
        return _TimedWholeBatches(dataset), StampCollate(_whole, _join_whole)
    if isinstance(dataset, IterableDataset):
        return _TimedIterable(dataset, batch_size), StampCollate(inner)
    return TimedDataset(dataset), StampCollate(inner)
