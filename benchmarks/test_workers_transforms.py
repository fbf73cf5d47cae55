"""The course exercise's experiment: throughput against num_workers, for every transform preset.

A pass is a fixed number of images from a fresh iterator, worker start-up included (as the exercise times it).
The quick profile crosses every worker count with the cheap ``none`` and ``uint8`` presets and every preset with
0 and 2 workers; the full profile crosses them all. Counts above twice the usable cores are skipped with the cap
named. The group's cases run interleaved round by round with the ceiling of each preset (``rotated_case``), so
the recommended worker count compares configurations measured at the same moments.
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["workers-transform"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_workers_transform(rotated_case, dataset_factory, num_workers: int, transform: str) -> None:
    info = rotated_case()
    assert info[K.IMAGES] == min(info[K.BATCHES] * 64, len(dataset_factory(info[KN.TRANSFORM.key])))
    assert info[K.WORKERS_SEEN] == num_workers  # worker processes that served the pass; 0: the main process
    assert len(info[K.rounds(K.EFFICIENCY)]) == info[K.ROUNDS] and info[K.EFFICIENCY] > 0
