"""The physical ceiling: how fast one core reads, decodes and transforms these files without a DataLoader.

``ceiling = per_core_rate x min(max(workers, 1), usable_cores)`` is what perfect parallel loading would reach;
``efficiency = images_per_s / ceiling`` is the share of it a configuration gets. Efficiency survives a move to
another machine better than absolute throughput, because both sides of the ratio move with the CPU.
"""

from __future__ import annotations

import os
import time

import torch

from lfw.dataset import LFWDataset


def usable_cores() -> int:
    """Cores this process may run on (affinity and cgroup-pinned sets respected), not the machine's total."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def per_core_rate(dataset: LFWDataset, images: int = 200, repeats: int = 3) -> float:
    """Images per second of ``dataset[i]`` (read + decode + transform) in this process on one thread.

    The fastest of ``repeats`` timed sweeps over the first ``images`` items, after one untimed sweep that warms
    the page cache and the allocator: a ceiling is the best one core was seen to do, and the fastest sweep is
    the one least disturbed by the rest of the machine.
    """
    n = min(images, len(dataset))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for i in range(n):
            dataset[i]
        rates = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for i in range(n):
                dataset[i]
            rates.append(n / (time.perf_counter() - t0))
    finally:
        torch.set_num_threads(threads)
    return max(rates)
