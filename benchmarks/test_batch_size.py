"""Throughput against batch size: per-batch overhead (IPC, collation) amortized over more images.

Each pass covers about the same number of images, so a larger batch means fewer batches; at least two batches
per pass keep a steady-state part after the first batch. A float32 batch of 512 is 366 MiB, so two of them
take seconds per round: batch 512 runs in the full profile only.
"""

from __future__ import annotations

import pytest

from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="batch-size")

BATCH_SIZES = (16, 64, 256, 512)


@pytest.mark.parametrize("batch_size", BATCH_SIZES, ids=[f"bs{b}" for b in BATCH_SIZES])
def test_batch_size(run_case, dataset_factory, profile, batch_size: int) -> None:
    if batch_size > 256 and not profile.full_matrix:
        pytest.skip(f"{profile.name} profile: bs{batch_size} (two 366 MiB float batches per pass) runs in full only")
    info = run_case(LoaderConfig(batch_size=batch_size, num_workers=2), "none")
    assert info["images"] == min(info["batches"] * batch_size, len(dataset_factory("none")))
