"""The file index as a Python list or a numpy array, at LFW's own size (13,233 paths or the synthetic tree's).

At this size the index is a few MB, so speed and memory should match; the large-index case in
``test_memory_index.py`` shows where they part (copy-on-access in forked workers).
"""

from __future__ import annotations

import pytest

from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="index")


@pytest.mark.parametrize("index", ["list", "numpy"])
def test_index(run_case, index: str) -> None:
    info = run_case(LoaderConfig(batch_size=64, num_workers=2, shuffle=True), "none", index)
    assert info["images"] == info["batches"] * 64 and info["workers_seen"] == 2
