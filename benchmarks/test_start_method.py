"""Worker start method: fork (copy the parent's pages lazily), forkserver and spawn (fresh interpreters).

Time to first batch carries the difference: spawned workers import torch and unpickle the dataset before their
first item, forked ones start at once. Start-up is the quantity measured here, so there is no warm-up round,
and the quick profile takes one round of each (a spawn round costs seconds). Memory differs too: forked
workers share the parent's pages (low PSS), spawned ones pay for their own interpreter and imports (higher USS).
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["start-method"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_start_method(rotated_case, start_method: str) -> None:
    info = rotated_case()
    assert info[K.WORKERS_SEEN] == 2
    assert info[K.WORKER_START_METHOD] == start_method  # read from the worker processes' own launcher
