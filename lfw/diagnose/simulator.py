"""A discrete-event simulator of the DataLoader pipeline: N workers, the prefetch queue, one training loop.

It follows PyTorch's multiprocessing iterator (``torch/utils/data/dataloader.py``), not a fixed tick:

- each worker loads whole batches, one at a time, from its own first-in-first-out task queue;
- ``prefetch_factor x workers`` tasks are handed out round-robin at the start, then one each time the main loop
  receives a batch (``_try_put_index``);
- batches reach the main loop in index order (``in_order=True``); with ``in_order=False`` the earliest finished
  one, and a task goes to a worker with fewer than ``prefetch_factor`` tasks;
- the main loop spends ``transfer_s`` on a batch, then ``step_s``; with ``prefetcher=True`` the copy of batch
  k+1 overlaps step k; ``workers=0`` loads in the main loop, load + transfer + step one after the other.

Load times are ``load_s`` or, with ``load_cv > 0``, seeded lognormal or gamma draws with that coefficient of
variation; ``desync_s`` staggers the workers' first start, ``startup_s`` delays them all.
"""

from __future__ import annotations

import heapq
import itertools
import math
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from lfw.diagnose.events import MAIN_PROCESS, BatchRecord
from lfw.errors import LFWError, check_choice

DISTRIBUTIONS = ("lognormal", "gamma")
SEEDS = 5  # simulations averaged when load times vary (seed_mean)


def check_loader(workers: int, prefetch_factor: int) -> None:
    """One-line errors for a negative worker count or a prefetch factor under 1."""
    if workers < 0:
        raise LFWError(f"workers must be 0 (load in the main loop) or more, got {workers}")
    if prefetch_factor < 1:
        raise LFWError(f"prefetch_factor must be a positive integer, got {prefetch_factor}")


@dataclass(frozen=True)
class PipelineModel:
    """What the simulator needs to know about a loader and a training loop. Times in seconds."""

    workers: int
    load_s: float
    step_s: float
    prefetch_factor: int = 2
    transfer_s: float = 0.0
    prefetcher: bool = False
    in_order: bool = True
    load_cv: float = 0.0
    distribution: str = "lognormal"
    desync_s: float = 0.0
    startup_s: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_loader(self.workers, self.prefetch_factor)
        if not self.load_s > 0:
            raise LFWError(f"load time must be positive, got {self.load_s * 1e3:g} ms")
        if self.step_s < 0:
            raise LFWError(f"step time must be 0 or more, got {self.step_s * 1e3:g} ms")
        if self.transfer_s < 0 or self.load_cv < 0 or self.desync_s < 0 or self.startup_s < 0:
            raise LFWError("transfer time, load variation, desynchronization and start-up must be 0 or more")
        check_choice("load-time distribution", self.distribution, DISTRIBUTIONS)
        if self.prefetcher and self.workers == 0:
            raise LFWError("a prefetcher overlaps the copy with the step while workers load; "
                           "it needs at least 1 worker")

    @property
    def capacity(self) -> int:
        """Most batches outstanding (handed to workers, not yet received by the main loop)."""
        return self.prefetch_factor * self.workers

    def steady_batches_per_s(self) -> float:
        """``min(workers / load_s, 1 / consumer)``: what the simulator converges to after start-up, without variance."""
        if self.workers == 0:
            return 1.0 / (self.load_s + self.transfer_s + self.step_s)
        consumer = _consumer_s(self.step_s, self.transfer_s, self.prefetcher)
        supply = self.workers / self.load_s
        return min(supply, 1.0 / consumer) if consumer > 0 else supply

    def stalls_ended(self) -> PipelineModel:
        """This model at the fewest workers that end the stalls (:func:`workers_to_end_stalls`), without variance."""
        needed = workers_to_end_stalls(self.load_s, self.step_s, self.transfer_s, self.prefetcher)
        return replace(self, workers=needed, load_cv=0.0)


@dataclass
class SimResult:
    """Outcome of one simulation: completed steps, the rate, per-batch records and the raw event log."""

    model: PipelineModel
    horizon_s: float  # the time the run covers: the horizon asked for, or when the last batch finished
    completed: int  # training steps finished by horizon_s
    records: list[BatchRecord]
    log: list[tuple[float, str, int, int]] = field(default_factory=list)  # (time, event, batch, worker)

    @property
    def batches_per_s(self) -> float:
        return self.completed / self.horizon_s if self.horizon_s > 0 else 0.0

    def _steady(self) -> tuple[list[BatchRecord], float]:
        """The steps finished by the horizon, in order, and the time from the first one's end to the last one's."""
        done = sorted((r for r in self.records if r.step_end <= self.horizon_s), key=lambda r: r.step_end)
        return done, done[-1].step_end - done[0].step_end if len(done) > 1 else 0.0

    @property
    def steady_batches_per_s(self) -> float:
        """Rate after the first step: start-up (worker launch, the first loads) left out."""
        done, window = self._steady()
        return (len(done) - 1) / window if window > 0 else 0.0

    @property
    def steady_data_wait_fraction(self) -> float:
        """Share of the time after the first step that the loop spent not computing."""
        done, window = self._steady()
        return 1.0 - sum(r.step_end - r.step_start for r in done[1:]) / window if window > 0 else 0.0

    @property
    def data_wait_fraction(self) -> float:
        """Share of the covered time the training loop was not computing (as LoaderPass defines it)."""
        compute = sum((self.horizon_s if math.isnan(r.step_end) else min(r.step_end, self.horizon_s)) - r.step_start
                      for r in self.records if not math.isnan(r.step_start) and r.step_start < self.horizon_s)
        return 1.0 - compute / self.horizon_s if self.horizon_s > 0 else 0.0


def _consumer_s(step_s: float, transfer_s: float, prefetcher: bool) -> float:
    """The main loop's time per batch: the copy, then the step; the longer of the two when a prefetcher overlaps."""
    return max(step_s, transfer_s) if prefetcher else step_s + transfer_s


def workers_to_end_stalls(load_s: float, step_s: float, transfer_s: float = 0.0, prefetcher: bool = False) -> int:
    """Smallest N with ``N / load_s >= 1 / consumer``: enough workers to keep the step fed, the consumer taking
    :func:`_consumer_s` per batch (``transfer_s + step_s``, or the longer of the two with a prefetcher). With neither
    a step nor a copy there is no pace to keep up with; the answer is then 1 and callers say so."""
    consumer = _consumer_s(step_s, transfer_s, prefetcher)
    return max(1, math.ceil(load_s / consumer - 1e-9)) if consumer > 0 else 1


class _Simulation:
    """The event loop. Kept private: :func:`simulate` is the interface."""

    def __init__(self, model: PipelineModel, max_batches: int | None) -> None:
        self.m = model
        self.max_batches = max_batches
        self.rng = np.random.default_rng(model.seed)
        self.heap: list[tuple[float, int, str, int, int]] = []
        self.seq = itertools.count()  # ties in time: first pushed, first popped
        self.log: list[tuple[float, str, int, int]] = []
        self.records: dict[int, BatchRecord] = {}
        n = max(model.workers, 1)
        self.tasks: list[deque[int]] = [deque() for _ in range(n)]
        self.worker_busy = [True] * n  # busy until their start-up event
        self.worker_tasks_out = [0] * n  # outstanding tasks per worker (for in_order=False)
        self.rr = 0  # round-robin cursor
        self.sent = 0  # batches handed to workers
        self.ready: dict[int, float] = {}  # loaded, not yet received: batch -> load end
        self.received = 0  # in order, also the batch the main loop receives next
        self.waiting_since: float | None = None  # the main loop is blocked in next() since then
        self.completed = 0
        self.copy_busy = False  # prefetcher: the copy engine
        self.copied: deque[int] = deque()  # prefetcher: batches on the device, not yet stepped
        self.stepping = False

    def push(self, t: float, kind: str, batch: int = -1, worker: int = -1) -> None:
        heapq.heappush(self.heap, (t, next(self.seq), kind, batch, worker))

    def record(self, batch: int, worker: int) -> BatchRecord:
        return self.records.setdefault(batch, BatchRecord(batch, worker))

    def draw_load(self) -> float:
        m = self.m
        if m.load_cv == 0:
            return m.load_s
        if m.distribution == "gamma":
            shape = 1.0 / m.load_cv**2
            return float(self.rng.gamma(shape, m.load_s / shape))
        sigma2 = math.log1p(m.load_cv**2)
        return float(self.rng.lognormal(math.log(m.load_s) - sigma2 / 2, math.sqrt(sigma2)))

    def dispatch(self, t: float) -> None:
        """Hand out one task, as ``_try_put_index`` does when the main loop receives a batch."""
        if self.max_batches is not None and self.sent >= self.max_batches:
            return
        n = self.m.workers
        worker = self.rr % n
        if not self.m.in_order:  # the next worker, in cycle, that holds fewer than prefetch_factor tasks
            for k in range(n):
                if self.worker_tasks_out[(self.rr + k) % n] < self.m.prefetch_factor:
                    worker = (self.rr + k) % n
                    self.rr += k
                    break
        self.rr += 1
        batch = self.sent
        self.sent += 1
        self.worker_tasks_out[worker] += 1
        self.tasks[worker].append(batch)
        self.log.append((t, "dispatch", batch, worker))
        self.record(batch, worker)
        self.try_start(t, worker)

    def try_start(self, t: float, worker: int) -> None:
        if self.worker_busy[worker] or not self.tasks[worker]:
            return
        self.worker_busy[worker] = True
        self.start_load(t, self.tasks[worker].popleft(), worker)

    def start_load(self, t: float, batch: int, worker: int) -> BatchRecord:
        rec = self.record(batch, worker)
        rec.load_start = t
        self.log.append((t, "load_start", batch, worker))
        self.push(t + self.draw_load(), "load_end", batch, worker)
        return rec

    def deliverable(self) -> int | None:
        if self.m.in_order:
            return self.received if self.received in self.ready else None
        return min(self.ready, key=lambda b: (self.ready[b], b)) if self.ready else None

    def ask(self, t: float) -> None:
        """The main loop calls ``next()``; it receives at once if the batch is ready, else it blocks."""
        if self.max_batches is not None and self.received >= self.max_batches:
            return
        self.waiting_since = t
        if self.m.workers == 0:  # the main loop loads the batch itself
            self.start_load(t, self.received, MAIN_PROCESS).ask = t
            return
        self.try_receive(t)

    def try_receive(self, t: float) -> None:
        if self.waiting_since is None:
            return
        batch = self.deliverable()
        if batch is None:
            return
        rec = self.records[batch]
        rec.ask, rec.got = self.waiting_since, t
        self.waiting_since = None
        del self.ready[batch]
        self.received += 1
        self.log.append((t, "got", batch, rec.worker))
        if self.m.workers > 0:
            self.worker_tasks_out[rec.worker] -= 1
            self.dispatch(t)
        if self.m.prefetcher:
            self.copy_busy = True
            self.push(t + self.m.transfer_s, "copied", batch)
        else:
            self.start_step(t + self.m.transfer_s, batch)

    def start_step(self, t: float, batch: int) -> None:
        rec = self.records[batch]
        rec.step_start = t
        self.stepping = True
        self.log.append((t, "step_start", batch, rec.worker))
        self.push(t + self.m.step_s, "step_end", batch)

    def prefetcher_advance(self, t: float) -> None:
        """Start the next step if its batch is on the device; fetch the next batch if the buffer has room."""
        if not self.stepping and self.copied:
            self.start_step(t, self.copied.popleft())
        if not self.copy_busy and self.waiting_since is None and len(self.copied) == 0:
            self.ask(t)

    def run(self, horizon_s: float | None) -> SimResult:
        m = self.m
        for w in range(m.workers):  # none without workers: the main loop loads (ask)
            offset = float(self.rng.uniform(0, m.desync_s)) if m.desync_s > 0 else 0.0
            self.push(m.startup_s + offset, "worker_up", -1, w)
        for _ in range(m.capacity):
            self.dispatch(0.0)
        self.push(0.0, "ask")
        end = 0.0
        while self.heap:
            t, _, kind, batch, worker = heapq.heappop(self.heap)
            if horizon_s is not None and t > horizon_s:
                break
            end = t
            if kind == "worker_up":
                self.worker_busy[worker] = False
                self.try_start(t, worker)
            elif kind == "ask":
                self.ask(t)
            elif kind == "load_end":
                self.records[batch].load_end = t
                self.log.append((t, "load_end", batch, worker))
                self.ready[batch] = t
                if worker != MAIN_PROCESS:
                    self.worker_busy[worker] = False
                    self.try_start(t, worker)
                self.try_receive(t)
            elif kind == "copied":
                self.copy_busy = False
                self.copied.append(batch)
                self.prefetcher_advance(t)
            elif kind == "step_end":
                self.records[batch].step_end = t
                self.log.append((t, "step_end", batch, self.records[batch].worker))
                self.stepping = False
                self.completed += 1
                if self.max_batches is not None and self.completed >= self.max_batches:
                    break
                if m.prefetcher:
                    self.prefetcher_advance(t)
                else:
                    self.ask(t)
        records = [self.records[b] for b in sorted(self.records)]
        return SimResult(m, horizon_s if horizon_s is not None else end, self.completed, records, self.log)


def simulate(model: PipelineModel, horizon_s: float | None = None, max_batches: int | None = None) -> SimResult:
    """Run the pipeline until ``horizon_s`` seconds have passed or ``max_batches`` steps have finished: the steps
    finished within the horizon (one that ends after it does not count), the rate over the covered time, a
    :class:`BatchRecord` per batch and the event log. :class:`LFWError` for neither limit, or one not positive."""
    if horizon_s is None and max_batches is None:
        raise LFWError("give a time horizon, a number of batches, or both")
    if horizon_s is not None and horizon_s <= 0:
        raise LFWError(f"the simulated time must be positive, got {horizon_s:g} s")
    if max_batches is not None and max_batches <= 0:
        raise LFWError(f"batches to simulate must be a positive integer, got {max_batches}")
    return _Simulation(model, max_batches).run(horizon_s)


def seed_mean(model: PipelineModel, batches: int, figure: Callable[[SimResult], float], seeds: int = SEEDS) -> float:
    """``figure`` of a ``batches``-step simulation, the mean over ``seeds`` seeds when load times vary (the same
    seeds for every model: common random numbers), one run when they do not."""
    runs = range(max(seeds, 1)) if model.load_cv > 0 else range(1)
    return statistics.fmean(figure(simulate(replace(model, seed=s), max_batches=batches)) for s in runs)


def pass_data_wait(*, per_core: float, cores: float, workers: int, batch: int, step_s: float, batches: int,
                   ttfb_s: float, prefetch_factor: int = 2) -> float:
    """The data-wait fraction one ``LoaderPass`` of ``batches`` batches should show on this machine, from its own
    rates: each loading process reads a batch at ``per_core`` images/s (one core's rate of the same work, measured
    beside the pass), slowed where the ``cores`` the machine gave are fewer than the processes; the workers start
    after ``ttfb_s`` less one load (the start-up the pass measured); the loop steps ``step_s`` per batch. What the
    measured fraction exceeds this by is the pipeline's own: its hand-over, overlap and serial stages."""
    load = batch / (per_core * min(1.0, cores / max(workers, 1)))
    model = PipelineModel(workers=workers, load_s=load, step_s=step_s, prefetch_factor=prefetch_factor,
                          startup_s=max(0.0, ttfb_s - load) if workers else 0.0)
    return simulate(model, max_batches=batches).data_wait_fraction
