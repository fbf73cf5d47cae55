"""The device layer's decode rotation: which pipeline feeds a GPU machine fastest, at its worker counts?

The CPU decode pipelines (PIL, torchvision.io, simplejpeg) and slot batches at half and all of the usable cores, beside
the GPU decode (``Pipeline("tvio", batching="device")``: workers read each file's bytes, the main process decodes the
batch in one ``decode_jpeg(list, device="cuda")`` call) at those counts and with no workers, all in one interleaved
rotation with the ceilings of the decoders group: the PIL path's and the decoded memmap's single-core rates, each
decoder's own (for the GPU decode: the device's decode of bytes already in memory, ``ceiling-decode-device``). Workers
are not persistent, so one configuration's are alive at a time. Without CUDA the GPU decode runs on the CPU stand-in
where the run allows it (``--bench-stand-in``, the device campaign's dry run), its record marked ``cpu stand-in``.
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS
from lfw.suite.runner import DEVICE_DECODE_CEILING
from lfw.suite.skips import STAND_IN

GROUP = GROUPS["device-decode"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_device_decode(rotated_case, profile, dataset_factory, pipeline: str) -> None:
    info = rotated_case()
    case = GROUP.case(pipeline)
    images = min(case.pass_images(profile), len(dataset_factory("uint8")))
    assert info[K.IMAGES] == images, "a pass must be exactly one epoch of the pass's images"
    assert info[K.PIL_CEILING_SHARE] > 0 and info[K.OWN_DECODER_SHARE] > 0 and info[K.CPU_MS_PER_IMAGE] > 0
    assert info[K.WORKERS_SEEN] == case.config.num_workers
    if case.on_device:  # its own limit is the device's decode alone, and the record says where it ran
        assert info[K.OWN_DECODER] == DEVICE_DECODE_CEILING and info[K.MEASURED_ON] in ("cuda", STAND_IN)
        assert (info[K.MEASURED_ON] == "cuda") == (info[K.DEVICE] == "cuda")
