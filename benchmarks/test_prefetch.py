"""prefetch_factor: batches each worker keeps in flight. More hides jitter but costs memory (held batches)."""

from __future__ import annotations

import pytest

from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="prefetch")

PREFETCH = (2, 4, 8)


@pytest.mark.parametrize("prefetch_factor", PREFETCH, ids=[f"prefetch{p}" for p in PREFETCH])
def test_prefetch(run_case, prefetch_factor: int) -> None:
    info = run_case(LoaderConfig(batch_size=64, num_workers=2, prefetch_factor=prefetch_factor), "none")
    assert info["workers_seen"] == 2 and info["images"] == info["batches"] * 64
