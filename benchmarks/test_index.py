"""The file index as a Python list or a numpy array, at LFW's own size (13,233 paths or the synthetic tree's).

At this size the index is a few MB, so speed and memory should match; the large-index case in
``test_memory_index.py`` shows where they part (copy-on-access in forked workers). Rounds are interleaved.
"""

from __future__ import annotations

import pytest

from lfw.suite.matrix import GROUPS

GROUP = GROUPS["index"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_index(rotated_case, index: str) -> None:
    info = rotated_case()
    assert info["images"] == info["batches"] * 64 and info["workers_seen"] == 2 and info["index"] == index
