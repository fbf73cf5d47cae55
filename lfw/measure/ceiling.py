"""The machine's ceilings, each a member of every group's rotation (:mod:`lfw.measure.rotation`), so a ratio to
them is paired by round.

:class:`CeilingSweep`: how fast one core reads, decodes and transforms these files without a DataLoader (the
single-core rate every limit multiplies: :func:`lfw.suite.record.work_limit`). :class:`ParallelCapacity`: how
many cores the machine gives right now, ``capacity = N x t_1 / t_N`` of a fixed workload that no code under test
runs, in threads started before the clock and released together, at ``N = usable_cores`` (and at the physical
cores where a core runs two threads): docs/methodology.md, "The machine"."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from functools import cache

import torch

from lfw.measure.cpus import Quota
from lfw.measure.loader_pass import PassResult
from lfw.results import keys as K

# The capacity's fixed workload: PBKDF2-HMAC-SHA256 of a constant, one call that holds no lock of the interpreter
# (hashlib releases the GIL around it) and touches no memory, in threads of this process started and waiting before
# the clock, so the probe times neither a fork nor a page copied on write, however large the process.
PROBE = "threads released together, PBKDF2-SHA256"  # machine_info's capacity_probe: what this module measures
WORK_S = 0.010  # a thread's work, about: a hundred times a wake-up's latency, ~1% of a typical rotation round
QUOTA_PERIODS = 3  # under a CPU quota below N cores: the N threads' work spans about this many quota periods


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
def work_iterations(seconds: float = WORK_S) -> int:
    """PBKDF2 iterations that take about ``seconds`` on one core here: found once per process (a fixed workload
    within a run, so every round's capacity is a ratio of the same work)."""
    iterations = 1024
    while True:
        t0 = time.perf_counter()
        _work(iterations)
        took = time.perf_counter() - t0
        if took >= seconds / 4 or iterations >= 2**26:
            return max(1, round(iterations * seconds / max(took, 1e-9)))
        iterations *= 2


def _work(iterations: int) -> None:
    hashlib.pbkdf2_hmac("sha256", b"lfw-bench", b"parallel-capacity", iterations)


def timed_together(threads: int, iterations: int) -> float:
    """Seconds from the first of ``threads`` threads starting its work to the last one ending it: the threads are
    started and wait at a barrier before any clock runs, then each does ``iterations`` of the workload."""
    starts, ends = [0.0] * threads, [0.0] * threads
    barrier = threading.Barrier(threads)

    def run(i: int) -> None:
        barrier.wait()
        starts[i] = time.perf_counter()
        _work(iterations)
        ends[i] = time.perf_counter()

    workers = [threading.Thread(target=run, args=(i,), name=f"lfw-capacity-{i}") for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return max(ends) - min(starts)


def capacity(threads: int, one: float, many: float) -> float:
    """Cores given: ``threads x t_1 / t_N`` (``threads`` where the N-thread time is not positive)."""
    return threads * one / many if many > 0 else float(threads)


class ParallelCapacity:
    """A rotation member: each ``measure()`` gives the round's parallel capacity in ``extra`` (``threads x t_1 /
    t_N`` of the fixed workload at N = the usable cores, no more than a CPU ``quota``) and, where ``physical`` is
    fewer (a core runs two threads), the same at N = ``physical``. Under a quota below N cores each thread works
    for :data:`QUOTA_PERIODS` of the quota's periods' worth, so the N threads span several of them (a group is
    throttled a period at a time). Its ``wall_s`` is the whole probe's."""

    def __init__(self, threads: int, physical: int | None = None, quota: Quota | None = None) -> None:
        self.threads = max(1, threads)
        self.physical = physical if physical is not None and 1 <= physical < self.threads else None
        self.quota = quota
        self.work_s = WORK_S
        if quota is not None and quota.cores < self.threads:
            self.work_s = max(WORK_S, QUOTA_PERIODS * quota.period_s * quota.cores / self.threads)

    def measure(self) -> PassResult:
        iterations = work_iterations(self.work_s)
        t0 = time.perf_counter()
        one = timed_together(1, iterations)
        extra = {K.PARALLEL_CAPACITY: self._given(self.threads, one, timed_together(self.threads, iterations))}
        if self.physical is not None:
            extra[K.PHYSICAL_CAPACITY] = self._given(self.physical, one, timed_together(self.physical, iterations))
        return PassResult(images=self.threads, batches=0, wall_s=time.perf_counter() - t0, ttfb_s=0.0, extra=extra)

    def _given(self, threads: int, one: float, many: float) -> float:
        measured = capacity(threads, one, many)
        return min(measured, self.quota.cores) if self.quota is not None else measured

    def close(self) -> None:
        pass
