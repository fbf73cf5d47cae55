"""Does a DistributedSampler cover the dataset once per epoch, and does it reshuffle between epochs?

Pure functions over the indices each rank's sampler yields, gathered to rank 0: no process group needed, so
they are tested directly.

With ``drop_last=False`` a DistributedSampler pads the epoch to a multiple of the world size by repeating
indices, so ``world * ceil(N / world) - N`` duplicates are expected; any other duplicate, or any index
missing from the union, is a coverage failure. A sampler whose epochs all visit the same order is the
symptom of a training loop that never calls ``sampler.set_epoch(epoch)``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Coverage:
    """One epoch's union of all ranks' indices against the dataset."""

    dataset_size: int
    world_size: int
    missing: int
    duplicates: int
    expected_duplicates: int

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.duplicates == self.expected_duplicates

    def text(self) -> str:
        if self.ok:
            return (f"coverage ok: every one of {self.dataset_size:,} images once, "
                    f"{self.duplicates} repeated to pad {self.world_size} equal shards")
        return (f"coverage FAILED: {self.missing} images never loaded, {self.duplicates} duplicates "
                f"(expected {self.expected_duplicates} from padding)")


def epoch_coverage(shards: Sequence[Sequence[int]], dataset_size: int) -> Coverage:
    """Coverage of one epoch from each rank's indices."""
    world = len(shards)
    counts = Counter(i for shard in shards for i in shard)
    covered = sum(1 for i in counts if 0 <= i < dataset_size)
    total = sum(len(shard) for shard in shards)
    padding = world * math.ceil(dataset_size / world) - dataset_size if world else 0
    return Coverage(dataset_size, world, dataset_size - covered, total - len(counts), padding)


def gathered_coverage(orders_by_rank: Sequence[Sequence[Sequence[int]]], dataset_size: int) -> list[Coverage]:
    """Coverage of every epoch from each rank's per-epoch order."""
    return [epoch_coverage([orders[e] for orders in orders_by_rank], dataset_size)
            for e in range(len(orders_by_rank[0]))]


def same_order_every_epoch(orders: Sequence[Sequence[int]]) -> bool:
    """True when a rank visited its indices in the same order in every epoch (more than one epoch needed)."""
    return len(orders) > 1 and all(list(order) == list(orders[0]) for order in orders[1:])
