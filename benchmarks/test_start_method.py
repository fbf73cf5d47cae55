"""Worker start method: fork (copy the parent's pages lazily), forkserver and spawn (fresh interpreters).

Time to first batch carries the difference: spawned workers import torch and unpickle the dataset before their
first item, forked ones start at once. Start-up is the quantity measured here, so there is no warm-up round,
and the quick profile takes one round of each (a spawn round costs seconds on 2 cores). Memory differs too: forked
workers share the parent's pages (low PSS), spawned ones pay for their own interpreter and imports (higher USS).
"""

from __future__ import annotations

import multiprocessing

import pytest

from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="start-method")

METHODS = ("fork", "forkserver", "spawn")


@pytest.mark.parametrize("start_method", METHODS)
def test_start_method(run_case, profile, start_method: str) -> None:
    if start_method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"start method {start_method} is not available on this platform")
    rounds = None if profile.full_matrix else 1
    info = run_case(LoaderConfig(batch_size=64, num_workers=2, start_method=start_method), "none",
                    rounds=rounds, warmup_rounds=0)
    assert info["workers_seen"] == 2
