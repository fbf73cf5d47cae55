"""The machine's ceilings, each a member of every group's rotation (:mod:`lfw.measure.rotation`), so a ratio to
them is paired by round: :class:`CeilingSweep`, how fast one core reads, decodes and transforms these files without
a DataLoader (the rate every limit multiplies: :func:`lfw.suite.case_record.work_limit`); :class:`ParallelCapacity`, how
many cores the machine gives right now (docs/methodology.md, "The machine")."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import threading
import time
from collections.abc import Sequence
from functools import cache

import torch

from lfw.measure.cpus import CpuFacts, Quota
from lfw.measure.loader_pass import PassResult
from lfw.results import keys as K

# machine_info's capacity_probe: a workload that holds no interpreter lock and touches no memory (docs/methodology.md)
PROBE = "pinned threads released together, each over its own CPU alone, PBKDF2-SHA256 in a window"
WORK_S = 0.010  # the shortest window the N threads work in: a hundred times a wake-up's latency
MAX_WINDOW_S = 0.100  # the longest: beyond it the probe's reading moves no more than the machine does
COST_SHARE = 0.015  # of the time since the probe's previous call (a round of its rotation) that it spends
ALONE_MIN_S = WORK_S / 2  # the shortest window of one CPU alone (before the N threads' window, and after)
CALLS = 10  # calls per window for one thread alone: a call straddling the window's end, or starved, is short
WAKE_LIMIT_S = 0.25  # the longest the window waits for a released thread to begin (a hang guard; ms in practice)
QUOTA_PERIODS = 2  # under a CPU quota below N cores: the N threads' window spans this many of its periods


class CeilingSweep:
    """The single-core rate of ``dataset[i]`` for ``indices``, in this process on one thread (``images_per_s``)."""

    def __init__(self, dataset: object, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = list(indices)

    def measure(self) -> PassResult:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            t0 = time.perf_counter()
            for i in self.indices:
                self.dataset[i]  # type: ignore[index]
            wall = time.perf_counter() - t0
        finally:
            torch.set_num_threads(threads)
        return PassResult(images=len(self.indices), batches=0, wall_s=wall, ttfb_s=0.0)

    def close(self) -> None:
        pass


def spread_indices(images: int, count: int) -> list[int]:
    """``count`` indices evenly spread over ``range(images)`` (all of them if ``count >= images``)."""
    if count >= images:
        return list(range(images))
    step = images / count
    return [int(i * step) for i in range(count)]


@cache
def work_iterations(seconds: float) -> int:
    """PBKDF2 iterations that take about ``seconds`` on one core here: found once per process (a fixed workload
    within a run, so every round's capacity is a ratio of the same work)."""
    iterations = 256
    while True:
        t0 = time.perf_counter()
        _work(iterations)
        took = time.perf_counter() - t0
        if took >= seconds / 4 or iterations >= 2**26:
            return max(1, round(iterations * seconds / max(took, 1e-9)))
        iterations *= 2


def _work(iterations: int) -> None:
    hashlib.pbkdf2_hmac("sha256", b"lfw-bench", b"parallel-capacity", iterations)


def _pin(cpu: int | None) -> None:
    """Pin the calling thread to ``cpu`` (Linux: affinity is per thread); elsewhere, or refused, run unpinned."""
    if cpu is not None:
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setaffinity(0, {cpu})


def rates_together(cpus: Sequence[int | None], iterations: int, window_s: float) -> list[float]:
    """Each thread's rate in a window of ``window_s`` seconds, in calls of ``iterations`` per second: one thread per
    entry of ``cpus`` (pinned to it), released together from a barrier; the window opens when the last has begun
    (or :data:`WAKE_LIMIT_S` after the first), and a call straddling either end counts for its part inside."""
    calls: list[list[tuple[float, float]]] = [[] for _ in cpus]
    began: list[float | None] = [None] * len(cpus)
    barrier = threading.Barrier(len(cpus))

    def opens() -> float | None:  # when every thread has begun, or the wait for the rest gave up; None: not yet
        known = [t for t in began if t is not None]
        if not known:
            return None
        return min(max(known) if len(known) == len(began) else math.inf, min(known) + WAKE_LIMIT_S)

    def run(i: int) -> None:
        _pin(cpus[i])
        barrier.wait()
        began[i] = time.perf_counter()
        mine = calls[i]
        while True:
            start = time.perf_counter()
            opened = opens()
            if opened is not None and start >= opened + window_s:
                break
            _work(iterations)
            mine.append((start, time.perf_counter()))

    threads = [threading.Thread(target=run, args=(i,), name=f"lfw-capacity-{i}") for i in range(len(cpus))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    begin = opens() or 0.0
    end = begin + window_s
    return [sum(max(0.0, min(b, end) - max(a, begin)) / (b - a) for a, b in mine if b > a) / window_s
            for mine in calls]


def capacity(alone: Sequence[float], many: Sequence[float]) -> float:
    """Cores given: each of the N threads' rate together over its own CPU's rate alone (``alone[i]``: the thread
    of ``many[i]`` alone on the same CPU), summed, no more than N; a CPU whose thread did nothing alone counts as
    one core. ValueError when the lengths differ."""
    if len(alone) != len(many):
        raise ValueError(f"{len(alone)} rates alone for {len(many)} threads: one each")
    return min(sum(m / a if a > 0 else 1.0 for a, m in zip(alone, many, strict=True)), float(len(many)))


class ParallelCapacity:
    """A rotation member: each ``measure()`` gives the round's parallel capacity in ``extra``
    (:func:`rates_together` on ``cpus``, each over one thread's alone on the same CPU before and after, averaged:
    :func:`capacity`), no more than a CPU ``quota``; and the same on ``physical`` where those are fewer. The window
    (``window_s`` fixed, else :data:`COST_SHARE` of the time since the previous call) and its floors:
    docs/methodology.md, "The machine". Its ``wall_s`` is the whole probe's."""

    def __init__(self, cpus: Sequence[int | None], physical: Sequence[int | None] | None = None,
                 quota: Quota | None = None, window_s: float | None = None) -> None:
        self.cpus = list(cpus) or [None]
        self.physical = list(physical) if physical and len(physical) < len(self.cpus) else None
        self.quota = quota
        self.fixed = window_s
        self.floor = WORK_S
        if quota is not None and quota.cores < len(self.cpus):
            self.floor = max(WORK_S, QUOTA_PERIODS * quota.period_s)
        self.window_s = max(self.floor, window_s or 0.0)  # the N threads' window of the latest call
        self._last_end: float | None = None

    @classmethod
    def of(cls, facts: CpuFacts, threads: int, window_s: float | None = None) -> ParallelCapacity:
        """The probe of ``threads`` threads on this machine's CPUs (:meth:`CpuFacts.spread`), and at its physical
        cores where a core runs two threads."""
        physical = facts.spread(facts.physical_cores) if facts.smt and facts.physical_cores else None
        return cls(facts.spread(threads), physical, facts.quota, window_s)

    def _window(self, now: float) -> float:
        if self.fixed is not None or self._last_end is None:
            return max(self.floor, self.fixed or 0.0)
        # The N threads', the physical cores', and each CPU's two quarters alone.
        windows = 1 + (self.physical is not None) + len(self._alone_cpus) / 2
        return max(self.floor, min(MAX_WINDOW_S, COST_SHARE * (now - self._last_end) / windows))

    @property
    def _alone_cpus(self) -> list[int | None]:
        """The CPUs measured alone: every thread's of the N, then the physical cores' that are not among them."""
        return self.cpus + [c for c in self.physical or [] if c not in self.cpus]

    def measure(self) -> PassResult:
        t0 = time.perf_counter()
        window = self.window_s = self._window(t0)
        iterations, alone_s, cpus = work_iterations(WORK_S / CALLS), max(ALONE_MIN_S, window / 4), self._alone_cpus
        before = [rates_together([cpu], iterations, alone_s)[0] for cpu in cpus]
        many = rates_together(self.cpus, iterations, window)
        physical = rates_together(self.physical, iterations, window) if self.physical is not None else None
        after = [rates_together([cpu], iterations, alone_s)[0] for cpu in reversed(cpus)][::-1]
        alone = [(b + a) / 2 for b, a in zip(before, after, strict=True)]  # before and after: a drift cancels
        extra = {K.PARALLEL_CAPACITY: self._given(alone[:len(self.cpus)], many)}
        if physical is not None and self.physical is not None:
            extra[K.PHYSICAL_CAPACITY] = self._given([alone[cpus.index(c)] for c in self.physical], physical)
        self._last_end = time.perf_counter()
        return PassResult(images=len(self.cpus), batches=0, wall_s=self._last_end - t0, ttfb_s=0.0, extra=extra)

    def _given(self, alone: Sequence[float], many: Sequence[float]) -> float:
        measured = capacity(alone, many)
        return min(measured, self.quota.cores) if self.quota is not None else measured

    def close(self) -> None:
        pass
