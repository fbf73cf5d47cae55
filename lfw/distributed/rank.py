"""What one rank measures: its DataLoader over its DistributedSampler shard, epoch by epoch, one LoaderPass each,
with an all-reduce per step standing in for DDP's gradient synchronization. Every step synchronizes, so the
epoch's wall time cannot tell the straggler; its load time (the epoch minus the time in the collective) can.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import Dataset
from torch.utils.data.distributed import DistributedSampler

from lfw.measure import LoaderConfig, LoaderPass, PassResult


def collective_step(device: torch.device) -> Any:
    """A training step that only synchronizes: all-reduce one value, as DDP all-reduces gradients."""
    token = torch.zeros(1, device=device)

    def step(_batch: Any) -> None:
        dist.all_reduce(token)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return step


@dataclass
class RankEpochs:
    """One rank's epochs: their passes and the sampler order each visited."""

    rank: int
    results: list[PassResult] = field(default_factory=list)
    orders: list[list[int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Plain numbers per epoch, small enough to gather to rank 0."""
        rs = self.results
        return {"rank": self.rank, "images": [r.images for r in rs], "wall_s": [r.wall_s for r in rs],
                "ttfb_s": [r.ttfb_s for r in rs], "collective_s": [sum(r.steps_s) for r in rs],
                "load_s": [r.wall_s - sum(r.steps_s) for r in rs], "waits_s": [r.waits_s for r in rs]}


def measure_rank(dataset: Dataset, config: LoaderConfig, epochs: int, *, rank: int, world_size: int,
                 seed: int = 0, set_epoch: bool = True, device: torch.device | None = None) -> RankEpochs:
    """``epochs`` passes over this rank's shard; ``set_epoch=False`` reproduces the classic omission."""
    sampler: DistributedSampler[int] = DistributedSampler(dataset, num_replicas=world_size, rank=rank,
                                                          shuffle=True, seed=seed, drop_last=False)
    loader = config.build(dataset, sampler=sampler)
    device = device or torch.device("cpu")
    runner = LoaderPass(loader, len(loader), memory_interval_s=None, step=collective_step(device),
                        device=str(device) if device.type == "cuda" else None)
    measured = RankEpochs(rank)
    try:
        for epoch in range(epochs):
            if set_epoch:
                sampler.set_epoch(epoch)
            measured.orders.append(list(iter(sampler)))
            measured.results.append(runner.run())
            runner.finish()
    finally:
        runner.close(stop_workers=True)
    return measured
