"""The measurement primitive: one pass over K batches from a fresh DataLoader iterator, the clock started before
``iter(loader)`` (docs/methodology.md, "One measurement primitive"). With a CUDA device each batch is copied
host-to-device and the device synchronized before the clock stops. :meth:`LoaderPass.setup` and
:meth:`LoaderPass.finish` keep the previous pass's shutdown out of the clock, so
``benchmark.pedantic(runner.run, setup=runner.setup)`` times exactly one pass per round."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import psutil
import torch
from torch.utils.data import DataLoader

from lfw.errors import LFWError, one_line
from lfw.measure.memory import TreeSampler, TreeSnapshot, tree_snapshot
from lfw.measure.stages import StageClock, StageTotals
from lfw.measure.torch_compat import (
    drop_persistent_workers,
    iterator_prefetch_factor,
    requests_outstanding,
    shutdown_workers,
    worker_pids,
    worker_start_method,
)
from lfw.results import keys as K

DEFAULT_MEMORY_INTERVAL_S = 2.0  # a page walk per torch process per interval: its cost is the ``overhead`` group's
STEADY_MIN_BATCHES = 20  # after the start-up wave: with fewer, a prefetched batch or two decide the rate


@dataclass(frozen=True)
class Steady:
    """The steady-state rate of one pass: images/s over the batches after the start-up wave (each loading process's
    first batch), or None with ``reason``; ``batches`` is the window's length."""

    images_per_s: float | None
    batches: int
    reason: str | None = None


@dataclass
class MemoryStats:
    """Process-tree memory over one pass (MiB): before ``iter()``, at the start, at the end, and in between.

    ``start`` is the snapshot at the first batch when the pass asked for it (``mark_start``), else ``before``;
    ``samples`` were taken while the clock ran, ``end`` after it stopped while the workers still exist.
    ``start_marks`` counts the start marks taken (None where not counted, and then not saved)."""

    before: TreeSnapshot
    start: TreeSnapshot
    end: TreeSnapshot
    samples: list[TreeSnapshot]
    worker_pids: list[int]
    sampler_cpu_s: float = 0.0
    start_marks: int | None = None

    def peak(self, metric: str) -> float | None:
        """The largest value sampled *during* the pass; None when no sample fell inside it."""
        return max((getattr(s, metric) for s in self.samples), default=None)

    def worker_uss(self, snap: TreeSnapshot) -> list[float]:
        return [snap.child_uss[p] for p in self.worker_pids if p in snap.child_uss]

    def as_extra_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {}
        for metric in K.TREE_METRICS:
            start, end = getattr(self.start, metric), getattr(self.end, metric)
            values: dict[K.Point, float | None] = {"before": getattr(self.before, metric), "start": start, "end": end,
                                                   "peak": self.peak(metric), "growth": end - start}
            info.update({K.tree(metric, k): round(v, 2) for k, v in values.items() if v is not None})
        info.update(self.added())
        info[K.MEMORY_SAMPLES] = len(self.samples)
        if self.start_marks is not None:
            info[K.MEMORY_START_MARKS] = self.start_marks
        info[K.SAMPLER_CPU_S] = round(self.sampler_cpu_s, 4)
        if end_w := self.worker_uss(self.end):
            info[K.WORKER_USS_END_MIB] = round(float(np.mean(end_w)), 2)
        # workers seen at the start mark and at the end, paired by pid
        if both := [p for p in self.worker_pids if p in self.start.child_uss and p in self.end.child_uss]:
            growth = [self.end.child_uss[p] - self.start.child_uss[p] for p in both]
            info[K.WORKER_USS_START_MIB] = round(float(np.mean([self.start.child_uss[p] for p in both])), 2)
            info[K.WORKER_USS_GROWTH_MIB] = round(float(np.mean(growth)), 2)
            info[K.WORKER_USS_MAX_GROWTH_MIB] = round(float(np.max(growth)), 2)
        return info

    def added(self) -> dict[str, float]:
        """What the pass added, apart from its host: the tree's peak PSS (samples and end) and ``/dev/shm`` over before,
        and the host (the main process before the pass); a figure with nothing to read is left out."""
        info: dict[str, float] = {}
        if (peak := self.peak("pss")) is not None:  # the end snapshot too: spawned workers may still be growing
            info[K.PSS_PEAK_ADDED_MIB] = round(max(peak, self.end.pss) - self.before.pss, 2)
        shm = [s.shm for s in self.samples if s.shm is not None]
        if shm and self.before.shm is not None:
            info[K.SHM_PEAK_ADDED_MIB] = round(max(shm) - self.before.shm, 2)
        if self.before.main_pss is not None and self.before.main_uss is not None:
            info[K.HOST_PSS_BEFORE_MIB] = round(self.before.main_pss, 2)
            info[K.HOST_USS_BEFORE_MIB] = round(self.before.main_uss, 2)
        return info

    def timeline(self) -> dict[str, list[float]]:
        """Tree RSS/PSS/USS and mean worker USS over the pass; the "before" snapshot is placed at t = 0."""
        snaps = [replace(self.before, t=0.0), *sorted([*self.samples, self.end], key=lambda s: s.t)]
        series = {k: [round(getattr(s, k), 3) for s in snaps] for k in ("t", "rss", "pss", "uss")}
        series["worker_uss"] = [round(float(np.mean(w)), 3) if (w := self.worker_uss(s)) else 0.0 for s in snaps]
        return series


@dataclass(kw_only=True)
class PassResult:
    """What one pass measured, built by keyword. Times in seconds; waits are per batch after the first."""

    images: int
    batches: int
    wall_s: float
    ttfb_s: float
    waits_s: list[float] = field(default_factory=list)
    memory: MemoryStats | None = None
    steps_s: list[float] = field(default_factory=list)  # per-batch time spent in the ``step`` callback
    events: list[tuple[float, float, float, float]] = field(default_factory=list)  # ask, got, step start, step end
    t0: float = 0.0  # perf_counter() at the pass start: puts worker-side stamps on the events' clock
    started_unix: float = 0.0  # time.time() at the pass start: real timestamps for memory timelines (mprof)
    main_cpu_s: float | None = None  # CPU seconds of the main process (all its threads) while the clock ran
    workers_cpu_s: float | None = None  # CPU seconds of the DataLoader workers while the clock ran
    extra: dict[str, float] = field(default_factory=dict)  # what a member measured beside the pass (an endpoint's)
    stages: StageTotals | None = None  # CPU seconds per stage, when the dataset times its stages
    arrivals_s: list[float] = field(default_factory=list)  # each batch's arrival, seconds after the pass start
    batch_images: list[int] = field(default_factory=list)  # images in each batch, in arrival order
    start_wave: int = 1  # batches of the start-up wave: one per loading process
    # What the live iterator did with the loader's knobs, read back from it (torch_compat), not from the settings;
    # None where not read (a result built outside LoaderPass.run) or, as commented, where there is nothing to read:
    workers_seen: int | None = None  # worker processes serving the pass's iterator, counted after the last batch
    worker_pids: list[int] | None = None  # their process ids, in worker order (persistent: the same every epoch)
    worker_start_method: str | None = None  # how they were started: fork, spawn, forkserver; None without workers
    prefetched_batches: int | None = None  # batches iter() asked the workers for (prefetch_factor x workers)
    prefetch_factor_seen: int | None = None  # batches per worker the iterator keeps asked for; None without workers
    pinning_available: bool | None = None  # an accelerator could pin (without one torch turns pin_memory off)
    batch_pinned: bool | None = None  # first batch in pinned memory; read only where the loader pins (see _asks_pin)

    @property
    def cpu_s(self) -> float | None:
        """CPU seconds of the main process and workers on the pass, the memory sampler's own left out."""
        if self.main_cpu_s is None or self.workers_cpu_s is None:
            return None
        sampler = self.memory.sampler_cpu_s if self.memory is not None else 0.0
        return max(0.0, self.main_cpu_s - sampler) + self.workers_cpu_s

    def cpu_utilization(self, cores: int) -> float | None:
        """Share of ``cores`` busy during the pass: CPU seconds over wall seconds x cores."""
        cpu = self.cpu_s
        return cpu / (self.wall_s * cores) if cpu is not None and self.wall_s > 0 and cores > 0 else None

    @property
    def data_wait_fraction(self) -> float:
        """Share of the pass spent waiting for data (first batch included): 1 - compute / wall."""
        return 1.0 - sum(self.steps_s) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def images_per_s(self) -> float:
        return self.images / self.wall_s if self.wall_s > 0 else 0.0

    def steady(self, min_batches: int = STEADY_MIN_BATCHES) -> Steady:
        """Images/s from the arrival of the start-up wave's last batch to that of the pass's last batch; None, with the
        reason, when fewer than ``min_batches`` follow the wave or arrivals were not recorded."""
        wave = max(1, self.start_wave)
        after = self.batches - wave
        if len(self.arrivals_s) != self.batches or len(self.batch_images) != self.batches:
            return Steady(None, max(after, 0), "batch arrival times not recorded")
        if after < min_batches:
            return Steady(None, max(after, 0), f"{max(after, 0)} batches after the start-up wave of {wave}; a steady "
                                               f"rate needs {min_batches}")
        seconds = self.arrivals_s[-1] - self.arrivals_s[wave - 1]
        if seconds <= 0:
            return Steady(None, after, "the batches after the start-up wave arrived at once")
        return Steady(sum(self.batch_images[wave:]) / seconds, after)


def wait_percentiles_ms(waits_s: Sequence[float]) -> dict[str, float]:
    """p50, p95 and p99 of per-batch waits (seconds) in ms; zeros without waits."""
    values = np.percentile(np.asarray(waits_s) * 1e3, [50, 95, 99]) if waits_s else [0.0] * 3
    return {k: round(float(v), 3) for k, v in zip((K.WAIT_P50_MS, K.WAIT_P95_MS, K.WAIT_P99_MS), values, strict=True)}


def sleep_step(step_s: float) -> Callable[[Any], None]:
    """Emulated compute for ``step=``: hold the main loop for ``step_s`` seconds without using a core."""
    def step(_batch: Any) -> None:
        if step_s > 0:
            time.sleep(step_s)
    return step


def batch_images(first: Any) -> int:
    """Images in a batch whose first field is ``first``: a tensor's first dimension, or the length of a list of
    per-image tensors; anything else is a one-line :class:`LFWError` (not a pass of 0 images)."""
    if isinstance(first, torch.Tensor) and first.ndim:
        return int(first.shape[0])
    if isinstance(first, list | tuple) and first and all(isinstance(x, torch.Tensor) for x in first):
        return len(first)
    raise LFWError(f"cannot count the images of a batch whose first field is {type(first).__name__}: give the loader "
                   "a collate_fn whose batch starts with its images, as a tensor or a list of per-image tensors")


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used; 0 for one that has already gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, list | tuple):
        return [_to_device(b, device) for b in batch]
    return batch.to(device, non_blocking=True) if isinstance(batch, torch.Tensor) else batch


class LoaderPass:
    """Repeated measured passes over the first ``batches`` batches of ``loader``.

    Args:
        loader: the DataLoader to measure.
        batches: batches per pass; capped at the loader's length (a pass never wraps into a second epoch).
        device: ``"cuda"`` to include the host-to-device copy and synchronize before the clock stops.
        memory_interval_s: background sampling interval for process-tree memory; ``None`` disables memory
            measurement. Snapshots before and at the end of the pass are always taken outside the clock.
        mark_start: also snapshot when the first batch arrives, so growth is measured from there.
        step: called with each batch inside the timed pass, as a training step would be; its durations and the
            per-batch event times are recorded.
        stages: the dataset's :class:`~lfw.measure.stages.StageClock`: zeroed before each pass, read after it, the
            main thread's unclaimed CPU inside ``next()`` added as ``receive``."""

    def __init__(self, loader: DataLoader, batches: int | None = None, *, device: str | None = None,
                 memory_interval_s: float | None = DEFAULT_MEMORY_INTERVAL_S, mark_start: bool = False,
                 step: Callable[[Any], None] | None = None, stages: StageClock | None = None) -> None:
        if batches is not None and batches <= 0:
            raise LFWError(f"batches to check must be a positive integer, got {batches}")
        self.loader = loader
        self.batches = min(batches or len(loader), len(loader))
        self.device = torch.device(device) if device else None
        self._cuda = self.device is not None and self.device.type == "cuda"
        self._can_pin = torch.cuda.is_available()  # without an accelerator torch turns pin_memory off
        # Asked of the first batch only where the loader pins: its pin thread has started CUDA already, whereas
        # is_pinned() on an unpinned batch can start a CUDA context inside the pass (and in every later fork).
        self._asks_pin = self._can_pin and bool(getattr(loader, "pin_memory", False))
        if self._cuda and not torch.cuda.is_available():
            raise LFWError("device 'cuda' asked for, but CUDA is not available; leave the device out")
        self.memory_interval_s = memory_interval_s
        self.mark_start = mark_start
        self.step = step
        self.stages = stages
        self.results: list[PassResult] = []
        self.shutdown_errors: list[str] = []
        self._iterator: Iterator[Any] | None = None
        self._exhausted = True
        self._sampler: TreeSampler | None = None
        self._before: TreeSnapshot | None = None
        self._worker_pids: list[int] = []

    def setup(self) -> None:
        """Untimed: :meth:`finish` the previous pass, then take the "before" memory snapshot of the next one."""
        self.finish()
        if self.memory_interval_s and self._before is None:
            self._before = tree_snapshot(psutil.Process())

    def finish(self) -> None:
        """Untimed: complete the last pass's memory record, then stop its workers or, if they persist, finish its epoch
        (so no idle worker of this configuration runs while another is measured)."""
        self._finish_memory()
        if self._iterator is not None:
            if self.loader.persistent_workers and not self._exhausted:
                for _ in self._iterator:
                    pass
            self._drop_iterator()  # non-persistent workers shut down here, outside the timed pass
            self._exhausted = True

    def run(self) -> PassResult:
        """One timed pass from a fresh iterator, appended to :attr:`results`; its memory fields are completed by the
        next :meth:`setup` or :meth:`close`, after the clock stopped."""
        if self._iterator is not None or self._sampler is not None or (self.memory_interval_s and not self._before):
            self.setup()
        sampler = TreeSampler(self.memory_interval_s) if self.memory_interval_s else None
        waits: list[float] = []
        steps: list[float] = []
        events: list[tuple[float, float, float, float]] = []
        copies: list[tuple[Any, Any]] = []  # CUDA events around each batch's host-to-device copy
        arrivals: list[float] = []
        sizes: list[int] = []
        batches, ttfb = 0, 0.0
        prefetched: int | None = None
        pinned: bool | None = None
        # Persistent workers exist before the pass and carry CPU time from earlier epochs; new ones start at 0.
        workers_cpu0 = {pid: _process_cpu(pid) for pid in worker_pids(self.loader)}
        if self.stages is not None:
            self.stages.reset()
        next_cpu = 0.0  # main-thread CPU inside next(): the receive stage once the stages it ran are taken out
        cpu0 = time.process_time()
        started_unix = time.time()
        t0 = time.perf_counter()
        if sampler:
            sampler.start(t0)
        try:
            iterator = iter(self.loader)
            self._iterator, self._exhausted = iterator, False
            prefetched = requests_outstanding(iterator)  # what iter() primed, before any batch came back
            while batches < self.batches:
                t_ask, c_ask = time.perf_counter(), time.thread_time()
                batch = next(iterator)
                t_got = time.perf_counter()
                next_cpu += time.thread_time() - c_ask
                first = batch[0] if isinstance(batch, list | tuple) else batch  # the images
                if batches == 0 and self._asks_pin and isinstance(first, torch.Tensor):
                    pinned = bool(first.is_pinned())  # before the copy: the host batch the loader made
                if self.device is not None:
                    batch = self._copy(batch, copies)
                if batches == 0:
                    ttfb = t_got - t0
                    if sampler and self.mark_start:
                        sampler.mark()
                else:
                    waits.append(t_got - t_ask)
                arrivals.append(t_got - t0)
                sizes.append(batch_images(first))
                batches += 1
                if self.step is not None:
                    t_step = time.perf_counter()
                    self.step(batch)
                    t_done = time.perf_counter()
                    steps.append(t_done - t_step)
                    events.append((t_ask - t0, t_got - t0, t_step - t0, t_done - t0))
            if self._cuda:
                torch.cuda.synchronize(self.device)
            wall = time.perf_counter() - t0
            main_cpu = time.process_time() - cpu0
            workers_cpu = sum(_process_cpu(pid) - workers_cpu0.get(pid, 0.0) for pid in worker_pids(self.loader,
                                                                                                   iterator))
        except StopIteration:
            raise LFWError("the loader ran out of batches mid-pass; is the dataset empty?") from None
        except RuntimeError as exc:
            if "timed out" in str(exc) and getattr(type(self.loader), "feeder", None) is not None:
                # a peer's feeder says what it saw
                raise LFWError(f"{getattr(self.loader, 'name', 'the peer')}: {one_line(exc)}") from None
            if "timed out" in str(exc):
                raise LFWError(f"a DataLoader worker gave no batch within {self.loader.timeout:g} s "
                               f"(workers={self.loader.num_workers}); a worker is stuck or far too slow") from None
            raise
        finally:
            if sampler:
                sampler.request_stop()
                self._sampler = sampler
        self._exhausted = batches >= len(self.loader)
        if self.stages is not None:
            self.stages.add_receive(next_cpu)
        result = PassResult(images=sum(sizes), batches=batches, wall_s=wall, ttfb_s=ttfb, waits_s=waits,
                            steps_s=steps, events=events, t0=t0, started_unix=started_unix, main_cpu_s=main_cpu,
                            workers_cpu_s=workers_cpu, arrivals_s=arrivals, batch_images=sizes,
                            stages=self.stages.totals() if self.stages is not None else None,
                            start_wave=max(1, int(getattr(self.loader, "num_workers", 0) or 0)),
                            prefetched_batches=prefetched, pinning_available=self._can_pin, batch_pinned=pinned)
        if copies:  # read after the clock stopped: the device is synchronized, every event has happened
            result.extra[K.H2D_MS_PER_BATCH] = sum(a.elapsed_time(b) for a, b in copies) / len(copies)
        self._worker_pids = worker_pids(self.loader, iterator)
        result.workers_seen, result.worker_pids = len(self._worker_pids), list(self._worker_pids)
        result.worker_start_method = worker_start_method(iterator)
        result.prefetch_factor_seen = iterator_prefetch_factor(iterator)
        self.results.append(result)
        return result

    def _copy(self, batch: Any, copies: list[tuple[Any, Any]]) -> Any:
        """``batch`` on the device (non-blocking); on CUDA with events recorded around the copy, on the stream."""
        assert self.device is not None
        if not self._cuda:
            return _to_device(batch, self.device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        batch = _to_device(batch, self.device)
        end.record()
        copies.append((start, end))
        return batch

    def _drop_iterator(self) -> None:
        """Release the iterator and stop its workers now, so an error on their way out (a worker that dies while
        exiting) is recorded in :attr:`shutdown_errors` instead of surfacing from ``__del__``."""
        iterator, self._iterator = self._iterator, None
        if iterator is not None and not self.loader.persistent_workers:
            try:
                shutdown_workers(iterator)
            except RuntimeError as exc:
                self.shutdown_errors.append(one_line(exc))

    def _finish_memory(self) -> None:
        """Attach the memory record to the last result once its sampler has taken the final snapshot."""
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return
        end = sampler.join()
        before, self._before = self._before, None
        if before is None or not self.results:
            return
        workers = self._worker_pids
        start = sampler.marks[0] if sampler.marks and workers else before
        during = [s for s in sampler.samples if s is not end]
        self.results[-1].memory = MemoryStats(before, start, end, during, workers, sampler.cpu_s,
                                              start_marks=len(sampler.marks))

    def close(self, stop_workers: bool = False) -> None:
        """Complete the last result and stop its workers; persistent ones too with ``stop_workers`` (a leak check)."""
        self._finish_memory()
        self._drop_iterator()
        self._before = None
        if stop_workers and self.loader.persistent_workers:
            drop_persistent_workers(self.loader)

    def __enter__(self) -> LoaderPass:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def measure_pass(loader: DataLoader, batches: int | None = None, **kwargs: Any) -> PassResult:
    """Time one pass of any DataLoader with the suite's primitive: set up, measured, torn down (memory record complete,
    non-persistent workers stopped). ``batches`` and ``kwargs`` are :class:`LoaderPass`'s."""
    with LoaderPass(loader, batches, **kwargs) as runner:
        return runner.run()
