"""Throughput against batch size: per-batch overhead (IPC, collation) amortized over more images.

Each pass covers about the same number of images, so a larger batch means fewer batches; at least two batches
per pass keep a steady-state part after the first batch.
"""

from __future__ import annotations

import pytest

from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="batch-size")

BATCH_SIZES = (16, 64, 256, 512)


@pytest.mark.parametrize("batch_size", BATCH_SIZES, ids=[f"bs{b}" for b in BATCH_SIZES])
def test_batch_size(run_case, dataset_factory, batch_size: int) -> None:
    info = run_case(LoaderConfig(batch_size=batch_size, num_workers=2), "none")
    assert info["images"] == min(info["batches"] * batch_size, len(dataset_factory("none")))
