"""pin_memory off and on. Pinning only pays with a host-to-device copy, so the pinned case needs CUDA.

With CUDA the timed pass includes ``batch.to("cuda", non_blocking=True)`` and synchronizes the device before
the clock stops (an unsynchronized clock would stop before the asynchronous copy ends). Both cases then copy
to the device, so the comparison isolates pinning.
"""

from __future__ import annotations

import pytest
import torch

from lfw.measure import LoaderConfig

pytestmark = pytest.mark.benchmark(group="pin-memory")

HAS_CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("pin_memory", [False, True], ids=["nopin", "pin"])
def test_pin_memory(run_case, pin_memory: bool) -> None:
    if pin_memory and not HAS_CUDA:
        pytest.skip("pin_memory=True needs a CUDA device to copy to; this machine has none "
                    "(torch.cuda.is_available() is False)")
    device = "cuda" if HAS_CUDA else None
    info = run_case(LoaderConfig(batch_size=64, num_workers=2, pin_memory=pin_memory), "none", device=device)
    assert info["images"] == info["batches"] * 64 and info["workers_seen"] == 2
