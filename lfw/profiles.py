"""Benchmark profiles: how much data and how many rounds each run spends.

- ``smoke``: every case once on a tiny tree; what ``make test`` runs with ``--benchmark-disable``.
- ``quick``: every axis, 5 interleaved rounds, a 2,000-image synthetic tree; the default, under 3 minutes on 2
  cores. The cost layer (instruction counts under valgrind, about 80 s) joins it with ``--bench-cost``.
- ``full``: the nightly matrix: full-size 13,233-image LFW, more rounds, longer passes, more workers and epochs,
  and the cost layer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    synthetic_images: int  # size of the synthetic tree when LFW_ROOT is not set
    rounds: int  # timed rounds per case
    images_per_pass: int  # images in one timed pass (batches = images_per_pass // batch_size, at least 2)
    ceiling_images: int  # images per sweep of the single-core ceiling measurement
    full_matrix: bool  # cross products (e.g. every worker count x every transform)
    large_index_size: int  # entries of the replicated index in the copy-on-access case
    leak_epochs: int  # epochs of the leak check
    cost_images: int  # images per preset counted under valgrind (one batch)
    cost_by_default: bool  # the cost layer runs without --bench-cost

    def batches_for(self, batch_size: int, transform: str = "none") -> int:
        """Batches per pass: about ``images_per_pass`` images scaled by the transform's cost, at least two."""
        images = self.images_per_pass * PASS_SCALE.get(transform, 1.0)
        return max(2, round(images / batch_size))


# Cheap presets get longer passes and costly ones shorter, so every pass lasts roughly as long: long enough
# that start-up and the memory sampler are a small share, short enough for the time budget.
PASS_SCALE = {"none": 1.0, "simple": 1.0, "heavy": 0.25, "uint8": 2.0}


PROFILES = {
    "smoke": Profile("smoke", 160, 1, 64, 16, False, 20_000, 3, 4, True),
    "quick": Profile("quick", 2_000, 5, 512, 96, False, 1_000_000, 5, 16, False),
    "full": Profile("full", 13_233, 7, 2_048, 300, True, 2_000_000, 8, 16, True),
}
