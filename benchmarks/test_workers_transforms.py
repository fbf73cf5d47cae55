"""The course exercise's experiment: throughput against num_workers, for every transform preset.

A pass is a fixed number of images from a fresh iterator, worker start-up included (as the exercise times it).
The quick profile crosses every worker count with the cheap ``none`` preset and every preset with 0 and 2
workers; the full profile crosses them all. Counts above twice the usable cores are skipped with the cap named.
"""

from __future__ import annotations

import pytest

from benchmarks.conftest import TRANSFORMS, WORKER_COUNTS, skip_above_cap
from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="workers-transform")


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("num_workers", WORKER_COUNTS, ids=[f"workers{w}" for w in WORKER_COUNTS])
def test_workers_transform(run_case, profile, num_workers: int, transform: str) -> None:
    skip_above_cap(num_workers)
    if not profile.full_matrix and transform not in ("none", "uint8") and num_workers not in (0, 2):
        pytest.skip(f"{profile.name} profile: {transform} runs at workers0 and workers2 only (full crosses all)")
    info = run_case(LoaderConfig(batch_size=64, num_workers=num_workers), transform)
    assert info["images"] == info["batches"] * 64
