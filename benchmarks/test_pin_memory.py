"""pin_memory off and on. Pinning only pays with a host-to-device copy, so the pinned case needs CUDA.

With CUDA the timed pass includes ``batch.to("cuda", non_blocking=True)`` and synchronizes the device before
the clock stops (an unsynchronized clock would stop before the asynchronous copy ends). Both cases then copy
to the device, so the comparison isolates pinning. Rounds are interleaved (``rotated_case``).
"""

from __future__ import annotations

import pytest
import torch

from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["pin-memory"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_pin_memory(rotated_case, dataset_factory, pin_memory: bool) -> None:
    info = rotated_case()
    assert info[K.IMAGES] == min(info[K.BATCHES] * 64, len(dataset_factory(info[KN.TRANSFORM.key])))
    assert info[K.WORKERS_SEEN] == 2
    # The first batch's memory, read from the batch where the loader pins and an accelerator can (asking an
    # unpinned batch could start CUDA inside the pass); elsewhere the record says it was not read (None).
    assert info[K.BATCH_PINNED] is (True if pin_memory and torch.cuda.is_available() else None)
