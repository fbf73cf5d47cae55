"""persistent_workers across epochs: each round is one whole epoch over the same subset of images.

Without persistence every epoch forks fresh workers (time to first batch includes start-up each epoch); with it
the workers survive between epochs and only the first epoch pays. A case's rounds are its consecutive epochs;
the two cases' epochs are interleaved (``rotated_case``), so the persistent case's idle workers are alive, and
counted in the tree's memory, while the other case runs (growth, end minus start, is not affected).
"""

from __future__ import annotations

import pytest

from lfw.suite.matrix import GROUPS

GROUP = GROUPS["persistent-workers"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_persistent_workers(rotated_case, dataset_factory, profile, persistent_workers: bool) -> None:
    info = rotated_case()
    assert info["images"] == min(profile.images_per_pass, len(dataset_factory("none")))
