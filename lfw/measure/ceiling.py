"""The physical ceiling: how fast one core reads, decodes and transforms these files without a DataLoader.

``ceiling = per_core_rate x min(max(workers, 1), usable_cores)`` is what perfect parallel loading would reach;
``efficiency = images_per_s / ceiling`` is the share of it a configuration gets. Efficiency survives a move to
another machine better than absolute throughput, because both sides of the ratio move with the CPU. The sweep
is a member of each group's rotation (:mod:`lfw.measure.rotation`), so round r's ceiling was measured among
round r's passes and efficiency is a paired ratio, not a rate over a number from another moment.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from lfw.measure.loader_pass import PassResult


class CeilingSweep:
    """The single-core rate of ``dataset[i]`` (read + decode + transform) in this process on one thread.

    ``indices`` are spread over the images the passes read, so the ceiling is measured on the same mix of
    files. Its result is a :class:`PassResult` with no batches: ``images_per_s`` is the ceiling.
    """

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
