"""persistent_workers across epochs: each round is one whole epoch over the same subset of images.

Without persistence every epoch forks fresh workers (time to first batch includes start-up each epoch); with it
the workers survive between epochs and only the first epoch pays. Rounds are consecutive epochs.
"""

from __future__ import annotations

import pytest
from torch.utils.data import Subset

from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="persistent-workers")


@pytest.mark.parametrize("persistent_workers", [False, True], ids=["nonpersistent", "persistent"])
def test_persistent_workers(run_case, dataset_factory, profile, persistent_workers: bool) -> None:
    subset = Subset(dataset_factory("none"), range(min(profile.images_per_pass, len(dataset_factory("none")))))
    config = LoaderConfig(batch_size=64, num_workers=2, persistent_workers=persistent_workers)
    info = run_case(config, "none", dataset=subset, batches=len(config.build(subset)))
    assert info["images"] == len(subset)
