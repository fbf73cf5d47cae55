"""Overlap of loading and compute: the data-wait fraction of a training loop whose step sleeps 0, 20 or 50 ms.

A sleeping step leaves the cores to the workers, so the fraction measures the pipeline's overlap alone: with a
free step the loop does nothing but wait (the fraction is near 1), and the longer the step the more of each
batch's load hides behind it. A change that breaks prefetching or slows the hand-over from the workers raises
the fraction at every step time; ``data_wait_fraction`` (and its per-round values) is saved in extra_info so
the gate and the report see it like any other measurement. See ``python -m lfw.diagnose`` for the verdict.

Cost: two workers on the cheap ``uint8`` preset (the step times are chosen around a worker's load time for a
batch of 64, so the three span data-bound, matched and compute-bound), at most 8 batches per pass, memory
sampling off.
The first batch counts (as LoaderPass defines the fraction), so worker start-up is part of every number.
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS, STEP_MS

GROUP = GROUPS["data-wait"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_data_wait(rotated_case, benchmark, step_ms: int) -> None:
    info = rotated_case()
    assert info[K.IMAGES] == info[K.BATCHES] * 64
    # The training step measured inside the pass holds the loop for at least its step time (a free step for ~0).
    assert info[K.STEP_MS_PER_BATCH] >= step_ms
    if step_ms == 0:
        assert info[K.STEP_MS_PER_BATCH] < min(ms for ms in STEP_MS if ms > 0)
    if benchmark.enabled:
        fraction = info[K.DATA_WAIT_FRACTION]
        assert 0.0 <= fraction <= 1.0
        if step_ms == 0:
            assert fraction > 0.9  # a free step can only wait
