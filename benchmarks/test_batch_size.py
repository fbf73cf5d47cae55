"""Throughput against batch size: per-batch overhead (IPC, collation) amortized over more images.

Each pass covers about the same number of images, so a larger batch means fewer batches; at least two batches
per pass keep a steady-state part after the first batch. A float32 batch of 512 is 366 MiB, so two of them
take seconds per round: batch 512 runs in the full profile only. Rounds are interleaved (``rotated_case``).
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["batch-size"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_batch_size(rotated_case, dataset_factory, batch_size: int) -> None:
    info = rotated_case()
    assert info[K.IMAGES] == min(info[K.BATCHES] * batch_size, len(dataset_factory("none")))
