"""The file index as a Python list or a numpy array, at LFW's own size (13,233 paths or the synthetic tree's).

At this size the index is a few MB, so speed and memory should match; the large-index case in
``test_memory_index.py`` shows where they part (copy-on-access in forked workers). Rounds are interleaved.

The index a case measured is the one its workers read from: each worker counts, per batch, the kind of index its
own copy of the dataset holds (``index_seen``), so an index converted on its way into the workers shows.
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["index"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_index(rotated_case, index: str) -> None:
    info = rotated_case()
    assert info[K.IMAGES] == info[K.BATCHES] * 64 and info[K.WORKERS_SEEN] == 2
    seen = info[K.INDEX_SEEN]  # per round, batches collated from each kind of index (workers may run ahead)
    assert list(seen) == [index] and len(seen[index]) == info[K.ROUNDS], f"the workers read another index: {seen}"
    assert min(seen[index]) >= info[K.BATCHES], f"fewer batches counted than the pass took: {seen}"
