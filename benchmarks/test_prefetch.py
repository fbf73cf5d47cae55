"""prefetch_factor: batches each worker keeps in flight. More hides jitter but costs memory (held batches).

Rounds are interleaved (``rotated_case``)."""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["prefetch"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_prefetch(rotated_case, dataset_factory, prefetch_factor: int) -> None:
    info = rotated_case()
    assert info[K.WORKERS_SEEN] == 2 and info[K.IMAGES] == min(info[K.BATCHES] * 64, len(dataset_factory("none")))
    # Read back from the live iterator: its own prefetch factor, and the batches iter() asked the two workers for
    # before the first came back (prefetch_factor each, or the epoch's batches where it has fewer).
    assert info[K.PREFETCH_FACTOR_SEEN] == prefetch_factor
    epoch_batches = -(-len(dataset_factory("none")) // 64)
    assert info[K.PREFETCHED_BATCHES] == min(prefetch_factor * info[K.WORKERS_SEEN], epoch_batches)
