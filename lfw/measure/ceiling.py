"""The machine's ceilings, each a member of every group's rotation (:mod:`lfw.measure.rotation`), so a ratio to
them is paired by round.

:class:`CeilingSweep`: how fast one core reads, decodes and transforms these files without a DataLoader;
``ceiling = per_core_rate x min(max(workers, 1), usable_cores)`` and ``efficiency = images_per_s / ceiling``.
:class:`ParallelCapacity`: how many cores the machine gives right now, ``capacity = N x t_1 / t_N`` of a fixed
SHA-256 workload in one forked process against ``N = usable_cores`` (docs/gating.md, wall clock)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence

import torch

from lfw.measure.loader_pass import PassResult
from lfw.results import keys as K

BLOCK = bytes(1 << 20)  # 1 MiB of zeros: hashing it is pure CPU, the same work everywhere
UNITS = 48  # blocks per process per measurement: tens of milliseconds on a current core


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


def timed_in_processes(processes: int, units: int = UNITS) -> float:
    """Wall seconds for ``processes`` forked children, started together, to each hash ``units`` blocks."""
    t0 = time.perf_counter()
    children = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:  # the child: the work, then out without running the parent's exit handlers
            try:
                for _ in range(units):
                    hashlib.sha256(BLOCK).digest()
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return time.perf_counter() - t0


class ParallelCapacity:
    """A rotation member: each ``measure()`` gives the round's parallel capacity in ``extra``."""

    def __init__(self, processes: int, units: int = UNITS) -> None:
        self.processes = max(1, processes)
        self.units = units

    def measure(self) -> PassResult:
        one = timed_in_processes(1, self.units)
        many = timed_in_processes(self.processes, self.units)
        capacity = self.processes * one / many if many > 0 else float(self.processes)
        return PassResult(images=self.processes * self.units, batches=0, wall_s=many, ttfb_s=0.0,
                          extra={K.PARALLEL_CAPACITY: capacity})

    def close(self) -> None:
        pass
