"""persistent_workers across epochs: each round is one whole epoch over the same subset of images.

Without persistence every epoch forks fresh workers (time to first batch includes start-up each epoch); with it
the workers survive between epochs and only the first epoch pays. A case's rounds are its consecutive epochs;
the two cases' epochs are interleaved (``rotated_case``), so the persistent case's idle workers are alive, and
counted in the tree's memory, while the other case runs (growth, end minus start, is not affected).

Whether the workers persisted is read from the passes themselves: the worker process ids each epoch's iterator had
(``worker_pids``), the same in every epoch with persistence and new ones every epoch without. A smoke run gives the
group two epochs for it.
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["persistent-workers"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_persistent_workers(rotated_case, dataset_factory, profile, persistent_workers: bool) -> None:
    info = rotated_case()
    assert info[K.IMAGES] == min(profile.images_per_pass, len(dataset_factory("none")))
    epochs, workers = info[K.WORKER_PIDS], GROUP.case_for({"persistent_workers": persistent_workers}).config.num_workers
    assert len(epochs) == info[K.ROUNDS] >= 2 and all(len(pids) == workers for pids in epochs), epochs
    if persistent_workers:
        assert all(pids == epochs[0] for pids in epochs), f"persistent workers were replaced between epochs: {epochs}"
    else:
        started = {pid for pids in epochs for pid in pids}
        assert len(started) == workers * len(epochs), f"an epoch reused another epoch's workers: {epochs}"
