"""Is *my* training waiting for data? ``for batch in watch(loader): ...`` around the loop a user actually runs.

Contract (docs/diagnose.md, "Your own training loop", with an example): iterating a :class:`Watch` iterates the
loader and yields exactly its batches (same objects, same order); per step it records the wait in ``next()``, the
step (the loop body) and its own bookkeeping, on the host clock or, with CUDA, on the GPU's (:class:`EventClock`).
An epoch's wall time runs from ``iter(loader)`` to the end of its last step (the final ``next()`` is not in it).
Each batch is held until the loop asks for the next one and released inside that wait ("The batch it holds"). The
loader is instrumented for the epoch when it can be (:func:`instrument_loader`) and put back when it ends; when an
epoch ends the verdict line goes to stderr unless ``quiet=True``. :meth:`Watch.summary` (keys:
:mod:`lfw.diagnose.watch_summary`), ``record``, ``save`` and ``chart`` work at any time, over the steps so far.
"""

from __future__ import annotations

import functools
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args

import torch
from torch.utils.data import DataLoader, IterableDataset

from lfw.diagnose.events import BatchRecord, LoadStamp, StampCollate, Stamped, fetch_started, split_stamp
from lfw.diagnose.watch_summary import Steps, record_of, summarize_steps, watch_verdict
from lfw.errors import LFWError, check_choice
from lfw.measure.machine import machine_info
from lfw.measure.resources import usable_cores
from lfw.results import write_run

T = TypeVar("T")

CudaMode = Literal["auto", "events", "sync", "off"]
HOST, EVENTS, SYNC = "host clock", "CUDA events", "CUDA synchronize"
DRAIN_EVERY = 64  # steps between non-blocking read-backs of finished events
_ATTR = "__getitems__"  # the fetch a dataset's instance attribute replaces (instrument_loader)


class Event(Protocol):
    def record(self) -> Any: ...
    def query(self) -> bool: ...
    def elapsed_time(self, end_event: Any) -> float: ...


def resolve_mode(cuda: str) -> str:
    """The clock a ``cuda=`` choice means here: :data:`EVENTS` (``"auto"`` with an initialized CUDA context),
    :data:`SYNC` (``torch.cuda.synchronize()`` before each ``next()``: the loop loses its host/GPU overlap) or
    :data:`HOST` (``"off"``, and ``"auto"`` without CUDA)."""
    check_choice("cuda clock", cuda, get_args(CudaMode))
    if cuda == "off":
        return HOST
    if cuda == "auto":
        return EVENTS if torch.cuda.is_available() and torch.cuda.is_initialized() else HOST
    if not torch.cuda.is_available():
        raise LFWError(f"cuda={cuda!r} needs a CUDA device; this machine has none (use cuda='off')")
    return EVENTS if cuda == "events" else SYNC


cuda_event: Callable[[], Event] = functools.partial(torch.cuda.Event, enable_timing=True)


class EventClock:
    """GPU-side wait and step per step from two CUDA events a step: ``S_k`` is recorded when batch k is handed over,
    ``E_k`` when the loop asks for the next one. The GPU reaches ``E_k`` when step k's work is done and ``S_{k+1}``
    no earlier than the host recorded it, so ``elapsed(E_k, S_{k+1})`` is the GPU's idle time waiting for batch k+1
    and ``elapsed(S_k, E_k)`` the step on the GPU's clock. No synchronize per step: finished events are read back
    every :data:`DRAIN_EVERY` steps with ``query()``, the rest at the end. Any event type with ``record()``,
    ``query()`` and ``elapsed_time`` (ms) serves (tests)."""

    def __init__(self, make_event: Callable[[], Event] = cuda_event) -> None:
        self.make_event = make_event
        self.waits: dict[int, float] = {}  # step -> GPU idle before it (s); step 0 is left to the host
        self.steps: dict[int, float] = {}  # step -> its time on the GPU (s)
        self._starts: dict[int, Event] = {}
        self._ends: dict[int, Event] = {}
        self._pending: deque[int] = deque()

    def handed_over(self, step: int) -> None:
        """The batch of ``step`` reached the loop (record ``S_step``)."""
        self._starts[step] = self.make_event()
        self._starts[step].record()

    def asked(self, step: int) -> None:
        """The loop asks for the batch after ``step`` (record ``E_step``); drains finished events now and then."""
        self._ends[step] = self.make_event()
        self._ends[step].record()
        self._pending.append(step)
        if len(self._pending) % DRAIN_EVERY == 0:
            self.drain(block=False)

    def drain(self, block: bool) -> None:
        """Read back every step whose events (and the next step's start) have completed; all when ``block``."""
        if block and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        while self._pending:
            k = self._pending[0]
            start, end, nxt = self._starts.get(k), self._ends[k], self._starts.get(k + 1)
            if not block and (nxt is None or not (nxt.query() and end.query())):
                return  # unfinished, or the next batch has not arrived: its wait is not known yet
            if start is not None:
                self.steps[k] = start.elapsed_time(end) / 1e3
            if nxt is not None:
                self.waits[k + 1] = max(0.0, end.elapsed_time(nxt) / 1e3)
            self._pending.popleft()
            self._starts.pop(k, None)
            self._ends.pop(k, None)


def why_not(loader: DataLoader) -> str:
    """Why this loader's loads cannot be stamped; empty when they can."""
    dataset = loader.dataset
    if isinstance(dataset, IterableDataset):
        return "an iterable dataset"
    if loader.batch_sampler is None:
        return "no automatic batching (batch_size=None)"
    if loader.persistent_workers:
        return "persistent workers (they would keep the stamping collate)"
    if not hasattr(dataset, "__dict__"):
        return f"{type(dataset).__name__} takes no attributes"
    return ""


def instrument_loader(loader: DataLoader, undo: ExitStack, enabled: bool = True) -> str:
    """Stamp every batch ``loader`` makes until ``undo`` closes (which puts the loader's collate and the dataset's
    attributes back as they were), without rebuilding it; returns why not (:func:`why_not`), empty when it does.
    The dataset gets an instance ``__getitems__`` (:func:`~lfw.diagnose.events.fetch_started` over the class's own,
    looked up by PyTorch's map fetcher at every batch, in whichever process loads) and ``loader.collate_fn`` wraps
    the batch in a :class:`~lfw.diagnose.events.Stamped`, which survives the worker queue and the pin-memory thread.
    Both are read when an iterator is made, so this must come before ``iter(loader)``."""
    reason = "instrumentation off" if not enabled else why_not(loader)
    if reason:
        return reason
    dataset = loader.dataset
    undo.callback(setattr, loader, "collate_fn", loader.collate_fn)
    if _ATTR in vars(dataset):
        undo.callback(setattr, dataset, _ATTR, vars(dataset)[_ATTR])
    else:
        undo.callback(vars(dataset).pop, _ATTR, None)
    own = getattr(type(dataset), _ATTR, None)
    setattr(dataset, _ATTR, functools.partial(fetch_started, dataset,
                                              fetch=functools.partial(own, dataset) if callable(own) else None))
    loader.collate_fn = StampCollate(loader.collate_fn, Stamped)  # the user's collate, then a Stamped
    return ""


@dataclass
class _Log:
    """Per step, host clock (perf_counter seconds): asked, got, handed over, step ended; plus stamps."""

    ask: list[float] = field(default_factory=list)
    got: list[float] = field(default_factory=list)
    handed: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    stamps: list[LoadStamp | None] = field(default_factory=list)
    epoch_starts: list[int] = field(default_factory=list)  # index of each epoch's first step
    epoch_t0: list[float] = field(default_factory=list)  # perf_counter before iter(loader), per epoch


class Watch(Generic[T]):
    """A training loop's view of its loader: what each step waited and computed (module docstring).

    Args:
        loader: the DataLoader the loop iterates (any iterable of batches works; only a DataLoader is instrumented).
        quiet: print no verdict line when an epoch ends.
        cuda: ``"auto"`` (CUDA events when a CUDA context exists, else the host clock), ``"events"``, ``"sync"``
            or ``"off"`` (:func:`resolve_mode`).
        instrument: stamp the workers' load time per batch when the loader allows it.
        run: a saved run whose decoders group the advice quotes (``"auto"``: the newest under ``.benchmarks``,
            else the 2-core baseline; ``None``: none).
    """

    def __init__(self, loader: Any, *, quiet: bool = False, cuda: CudaMode = "auto", instrument: bool = True,
                 run: str | Path | None = "auto") -> None:
        self.loader = loader
        self.quiet = quiet
        self.cuda = cuda
        self.instrument = instrument
        self.run = run
        self.clock = resolve_mode(cuda) if cuda in ("off", "sync", "events") else ""  # "auto": per epoch
        self.instrumented = ""  # why not, once an epoch has started; "" while instrumented
        self._log = _Log()
        self._events: EventClock | None = None
        self.make_event: Callable[[], Event] = cuda_event  # replaceable: tests attribute with fake events

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[T]:
        log = self._log
        self.clock = mode = resolve_mode(self.cuda)
        if mode == EVENTS and self._events is None:
            self._events = EventClock(self.make_event)
        events = self._events if mode == EVENTS else None
        undo = ExitStack()
        self.instrumented = (instrument_loader(self.loader, undo, self.instrument)
                             if isinstance(self.loader, DataLoader) else "not a DataLoader")
        clock = time.perf_counter
        log.epoch_starts.append(len(log.ask))
        t_epoch = clock()
        log.epoch_t0.append(t_epoch)
        kept: list[Any] = []
        ended = closed = False
        try:
            iterator = iter(self.loader)  # worker start-up: in the first batch's wait
            while True:
                if mode == SYNC:
                    torch.cuda.synchronize()
                t_ask = clock() if len(log.ask) > log.epoch_starts[-1] else t_epoch  # the first includes iter(loader)
                if len(log.ask) > len(log.end):  # the previous step ends here
                    log.end.append(t_ask)
                    if events is not None:
                        events.asked(len(log.end) - 1)
                del kept[:-1]  # the batch before the loop's current one, released inside the wait (docstring)
                try:
                    batch = next(iterator)
                except StopIteration:
                    ended = True
                    return
                log.got.append(clock())
                if events is not None:
                    events.handed_over(len(log.ask))
                batch, stamp = split_stamp(batch)
                log.ask.append(t_ask)
                log.stamps.append(stamp)
                kept.append(batch)
                log.handed.append(clock())
                yield batch
        except GeneratorExit:  # the loop broke out, or its body raised: this step ended now
            closed = True
            raise
        finally:
            if len(log.end) < len(log.ask):  # a break or an error in the loop body: the step ended now
                log.end.append(clock())
                if events is not None:
                    events.asked(len(log.end) - 1)
            undo.close()
            if (ended or closed) and not self.quiet and log.ask:
                print(self.verdict(), file=sys.stderr, flush=True)

    def steps(self) -> Steps:
        """The per-step figures so far (finished steps only), on the clock this watcher used."""
        log = self._log
        n = len(log.end)
        waits = [log.got[i] - log.ask[i] for i in range(n)]
        overhead = [log.handed[i] - log.got[i] for i in range(n)]
        steps = [log.end[i] - log.handed[i] for i in range(n)]
        first = set(log.epoch_starts)
        if self._events is not None and self.clock == EVENTS:
            self._events.drain(block=True)
            for i in range(n):
                if i not in first and i in self._events.waits:
                    waits[i] = self._events.waits[i]
                if i in self._events.steps:
                    steps[i] = self._events.steps[i]
                overhead[i] = 0.0  # on the GPU's clock the watcher's bookkeeping lies inside the wait or the step
        return Steps(waits=waits, steps=steps, overhead=overhead, epoch_starts=sorted(first & set(range(n))),
                     clock=self.clock or resolve_mode(self.cuda))

    def records(self) -> list[BatchRecord]:
        """Per-step records on one clock (seconds since the first epoch started), load times where stamped."""
        log = self._log
        t0 = log.epoch_t0[0] if log.epoch_t0 else 0.0
        return [BatchRecord.stamped(i, log.stamps[i], t0, (t - t0 for t in times))
                for i, times in enumerate(zip(log.ask, log.got, log.handed, log.end, strict=False))]

    def summary(self) -> dict[str, Any]:
        """The figures of the steps so far (:func:`lfw.diagnose.watch_summary.summarize_steps`)."""
        return summarize_steps(self.steps(), self.records(), self._context())

    def verdict(self) -> str:
        """The one-line verdict of the steps so far."""
        return watch_verdict(self.summary())

    def record(self, name: str = "loop") -> dict[str, Any]:
        """One case in the suite's saved-run schema: rounds are the steps' wall times, figures in extra_info."""
        return record_of(self.summary(), self.steps(), name)

    def save(self, path: str | Path, name: str = "loop") -> Path:
        """Write :meth:`record` as a saved run (pytest-benchmark's JSON, read by ``python -m lfw.report``)."""
        return write_run(Path(path), [self.record(name)], machine=machine_info(), commit={},
                         datetime=datetime.now(timezone.utc).isoformat())

    def chart(self, path: str | Path, title: str = "watched training loop") -> Path:
        """The timeline chart of the steps so far (a row per worker when stamped, waits and steps)."""
        from lfw.diagnose.timeline import Panel, draw_timeline

        s = self.summary()
        label = f"watched: {s['steps']} steps, data-bound {s['data_bound_share']:.0%} ({s['clock']})"
        return draw_timeline([Panel(label, self.records(), s["workers"], None)], Path(path), title)

    def _context(self) -> dict[str, Any]:
        loader = self.loader
        return {"workers": int(getattr(loader, "num_workers", 0) or 0),
                "prefetch_factor": getattr(loader, "prefetch_factor", None) or 2,
                "pin_memory": bool(getattr(loader, "pin_memory", False)),
                "instrumented": self.instrumented, "cores": usable_cores(), "run": self.run,
                "cuda_used": self.clock in (EVENTS, SYNC) or (torch.cuda.is_available()
                                                             and torch.cuda.is_initialized())}


def watch(loader: Any, *, quiet: bool = False, cuda: CudaMode = "auto", instrument: bool = True,
          run: str | Path | None = "auto") -> Watch[Any]:
    """Wrap ``loader`` for a training loop: ``for batch in watch(loader): ...`` (see :class:`Watch`)."""
    return Watch(loader, quiet=quiet, cuda=cuda, instrument=instrument, run=run)
