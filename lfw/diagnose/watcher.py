"""Is *my* training waiting for data? One line around the loader of the loop a user actually runs.

    from lfw.diagnose import watch

    w = watch(loader)              # the only change to the training script
    for images, labels in w:       # each pass over ``w`` is an epoch of ``loader``
        ...                        # the user's step, unchanged
    w.summary()                    # {"data_bound_share": 0.62, "steps": 120, "wait_ms_p50": ..., ...}

Contract:

- iterating a :class:`Watch` iterates the loader and yields exactly its batches (same objects, same order);
- per step it records the wait in ``next()``, the step (the loop body) and its own bookkeeping, on the host clock
  or, with CUDA, on the GPU's (:mod:`lfw.diagnose.watch_clock`: events by default when a CUDA context exists,
  ``cuda="sync"`` to synchronize, ``cuda="off"`` for the host clock). The wall time of an epoch runs from
  ``iter(loader)`` (worker start-up included) to the end of its last step, which is the moment the loop asks for
  a batch that is not there, breaks, or raises; the final ``next()`` that ends an epoch (where the loader shuts
  its workers down) is not in the wall time. The watcher holds each batch until the loop asks for the next one
  and releases it inside that wait, where a timer around ``next()`` puts the release of its shared memory, not
  in the step (``docs/diagnose.md``, "The batch it holds"): one batch more than the loop holds stays alive;
- the loader's dataset is instrumented when it can be (:mod:`lfw.diagnose.watch_instrument`), giving each
  batch's load time inside the worker that loaded it; the loader is put back as it was when the epoch ends;
- when an epoch ends, the verdict line (:meth:`Watch.verdict`) is printed to stderr unless ``quiet=True``;
- :meth:`Watch.summary` (the keys of :mod:`lfw.diagnose.watch_summary`, a contract: tools outside the project
  read them), :meth:`Watch.record` (one case in the suite's saved-run schema, :func:`lfw.results.case_record`),
  :meth:`Watch.save` and :meth:`Watch.chart` (the timeline chart of :mod:`lfw.diagnose.timeline`) work at any
  time, also mid-loop, over the steps seen so far.
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
from torch.utils.data import DataLoader

from lfw.diagnose.events import BatchRecord, LoadStamp, split_stamp
from lfw.diagnose.watch_clock import EVENTS, SYNC, CudaMode, Event, EventClock, cuda_event, resolve_mode
from lfw.diagnose.watch_instrument import instrument
from lfw.diagnose.watch_summary import Steps, record_of, summarize, verdict_line
from lfw.measure.machine import machine_info
from lfw.measure.resources import usable_cores
from lfw.results import write_run

T = TypeVar("T")


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
            or ``"off"`` (:mod:`lfw.diagnose.watch_clock`).
        instrument: stamp the workers' load time per batch when the loader allows it.
        run: a saved run whose decoders group the advice quotes (``"auto"``: the newest under ``.benchmarks``,
            if any; ``None``: none).
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
        self._open: weakref.ref[Any] | None = None
        self.make_event: Callable[[], Event] = cuda_event  # replaceable: tests attribute with fake events

    def __iter__(self) -> Iterator[T]:
        gen = self._epoch()
        self._open = weakref.ref(gen)
        return gen

    def __len__(self) -> int:
        return len(self.loader)

    def _epoch(self) -> Iterator[T]:
        log = self._log
        mode = resolve_mode(self.cuda)
        self.clock = mode
        if mode == EVENTS and self._events is None:
            self._events = EventClock(self.make_event)
        events = self._events if mode == EVENTS else None
        sync = mode == SYNC
        patch = instrument(self.loader, self.instrument) if isinstance(self.loader, DataLoader) else None
        self.instrumented = patch.reason if patch is not None else "not a DataLoader"
        clock = time.perf_counter
        k = len(log.ask)
        log.epoch_starts.append(k)
        t_epoch = clock()
        log.epoch_t0.append(t_epoch)
        first = True
        kept: list[Any] = []
        ended = closed = False
        try:
            iterator = iter(self.loader)  # worker start-up: in the first batch's wait
            while True:
                if sync:
                    torch.cuda.synchronize()
                t_ask = t_epoch if first else clock()
                first = False
                if k > len(log.end):  # the previous step ends here
                    log.end.append(t_ask)
                    if events is not None:
                        events.asked(k - 1)
                del kept[:-1]  # the batch before the loop's current one, released inside the wait (docstring)
                try:
                    batch = next(iterator)
                except StopIteration:
                    ended = True
                    return
                t_got = clock()
                if events is not None:
                    events.handed_over(k)
                batch, stamp = split_stamp(batch)
                log.ask.append(t_ask)
                log.got.append(t_got)
                log.stamps.append(stamp)
                k += 1
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
            if patch is not None:
                patch.restore()
            if (ended or closed) and not self.quiet and log.ask:
                print(self.verdict(), file=sys.stderr, flush=True)

    # --- results -------------------------------------------------------------------------------------------------
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
        """The figures of the steps so far (:func:`lfw.diagnose.watch_summary.summarize`)."""
        return summarize(self.steps(), self.records(), self._context())

    def verdict(self) -> str:
        """The one-line verdict of the steps so far."""
        return verdict_line(self.summary())

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
                "batch_size": getattr(loader, "batch_size", None),
                "instrumented": self.instrumented, "cores": usable_cores(), "run": self.run,
                "cuda_used": self.clock in (EVENTS, SYNC) or (torch.cuda.is_available()
                                                             and torch.cuda.is_initialized())}


def watch(loader: Any, *, quiet: bool = False, cuda: CudaMode = "auto", instrument: bool = True,
          run: str | Path | None = "auto") -> Watch[Any]:
    """Wrap ``loader`` for a training loop: ``for batch in watch(loader): ...`` (see :class:`Watch`)."""
    return Watch(loader, quiet=quiet, cuda=cuda, instrument=instrument, run=run)
