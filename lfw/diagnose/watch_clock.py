"""Where a watched step's time goes, on the host clock or on the GPU's: the wait for data and the step.

Host clock (``perf_counter``): per step ``wait`` is the time ``next()`` blocked, ``overhead`` the watcher's own
bookkeeping after the batch arrived, ``step`` the loop body (from handing the batch over until the loop asks for
the next one). The three add up to the step's wall time, so the data-bound share is ``sum(wait) / wall``.

CUDA: a step's kernels run after the loop body has returned, so the host's wait may be hidden behind GPU work
still queued. Two ways to attribute it, chosen by ``cuda=``:

- ``"events"``: a CUDA event is recorded on the current stream when the batch is handed over (``S_k``) and when
  the loop asks for the next one (``E_k``). The GPU reaches ``E_k`` when step k's work is done and ``S_{k+1}``
  no earlier than the host recorded it, so ``elapsed(E_k, S_{k+1})`` is the GPU's idle time waiting for batch
  k+1 and ``elapsed(S_k, E_k)`` the step on the GPU's clock. No synchronize per step: finished events are read
  back every :data:`DRAIN_EVERY` steps with ``query()``, the rest once at the end. The first batch's wait is
  the host's (the GPU has nothing to do before it);
- ``"sync"``: ``torch.cuda.synchronize()`` before each ``next()``, so the host's clock sees the GPU finish. It
  removes the overlap of host and GPU that the loop would otherwise have, so the loop runs slower than unwatched;
- ``"off"`` (and ``"auto"`` without an initialized CUDA context): the host clock only.

:class:`EventClock` takes any event type with ``record()``, ``query()`` and ``elapsed_time(other)`` in ms, so its
attribution is tested without a GPU.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Literal, Protocol

import torch

from lfw.errors import LFWError, check_choice

CudaMode = Literal["auto", "events", "sync", "off"]
CUDA_MODES: tuple[str, ...] = ("auto", "events", "sync", "off")
HOST, EVENTS, SYNC = "host clock", "CUDA events", "CUDA synchronize"
DRAIN_EVERY = 64  # steps between non-blocking read-backs of finished events


class Event(Protocol):
    def record(self) -> Any: ...
    def query(self) -> bool: ...
    def elapsed_time(self, end_event: Any) -> float: ...


def resolve_mode(cuda: str) -> str:
    """The clock a ``cuda=`` choice means here: :data:`HOST`, :data:`EVENTS` or :data:`SYNC`."""
    check_choice("cuda clock", cuda, CUDA_MODES)
    if cuda == "off":
        return HOST
    ready = torch.cuda.is_available() and torch.cuda.is_initialized()
    if cuda == "auto":
        return EVENTS if ready else HOST
    if not torch.cuda.is_available():
        raise LFWError(f"cuda={cuda!r} needs a CUDA device; this machine has none (use cuda='off')")
    return EVENTS if cuda == "events" else SYNC


def cuda_event() -> Event:
    return torch.cuda.Event(enable_timing=True)


class EventClock:
    """GPU-side wait and step per step from two events a step (module docstring)."""

    def __init__(self, make_event: Callable[[], Event] = cuda_event) -> None:
        self.make_event = make_event
        self.waits: dict[int, float] = {}  # step -> GPU idle before it (s); step 0 is left to the host
        self.steps: dict[int, float] = {}  # step -> its time on the GPU (s)
        self._starts: dict[int, Event] = {}
        self._ends: dict[int, Event] = {}
        self._pending: deque[int] = deque()

    def handed_over(self, step: int) -> None:
        """The batch of ``step`` reached the loop (record ``S_step``)."""
        self._starts[step] = self._record()

    def asked(self, step: int) -> None:
        """The loop asks for the batch after ``step`` (record ``E_step``); drains finished events now and then."""
        self._ends[step] = self._record()
        self._pending.append(step)
        if len(self._pending) % DRAIN_EVERY == 0:
            self.drain(block=False)

    def _record(self) -> Event:
        event = self.make_event()
        event.record()
        return event

    def drain(self, block: bool) -> None:
        """Read back every step whose events (and the next step's start) have completed; all when ``block``."""
        if block and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        while self._pending:
            k = self._pending[0]
            start, end, nxt = self._starts.get(k), self._ends[k], self._starts.get(k + 1)
            if nxt is None and not block:
                return  # the next batch has not arrived: its wait is not known yet
            if not block and not ((nxt is None or nxt.query()) and end.query()):
                return
            if start is not None:
                self.steps[k] = start.elapsed_time(end) / 1e3
            if nxt is not None:
                self.waits[k + 1] = max(0.0, end.elapsed_time(nxt) / 1e3)
            self._pending.popleft()
            self._starts.pop(k, None)
            self._ends.pop(k, None)
