"""Decode pipelines: how close to the machine's ceiling can LFW loading get, and what stops it?

Each case is a :class:`~lfw.pipelines.Pipeline` (decoder x storage x threads x output) with 0 or 2 persistent
workers; every pass is one epoch over the same images (``LoaderCase.pass_images``), and the workers start in the
untimed warm-up round, so the group compares steady pipelines. Two ceilings run in the same rotation: the
single-core rate of the PIL path (``ceiling-uint8``: decode + ``PILToTensor``) and of the decoded memmap
(``ceiling-memmap``: no decode), and each decoder's own single-core rate (``ceiling-decode-<decoder>``); each
case records its share of all three (x usable cores), the CPU utilization of the process tree, the CPU time
per image and where it went stage by stage (``stage_ms_per_image``), which say whether cores sat idle (the GIL,
the main loop) or worked on something besides decoding (collation, IPC). The quick profile runs the headline
cases; full runs them all. The decoder that ran is the one each loading process counted, image by image, from
inside the decoder's own code (``decoded_images``), not the one the case names.
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["decoders"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_decoders(rotated_case, profile, pipeline: str) -> None:
    info = rotated_case()
    case = GROUP.case(pipeline)
    assert info[K.IMAGES] == case.pass_images(profile), "a pass must be exactly one epoch of the pass's images"
    decoded = {} if case.pipeline.storage == "memmap" else {case.pipeline.decoder: [info[K.IMAGES]] * info[K.ROUNDS]}
    assert info.get(K.DECODED_IMAGES, {}) == decoded, "every image decoded by the case's decoder, counted where it ran"
    assert info[K.PIL_CEILING_SHARE] > 0 and info[K.MEMMAP_CEILING_SHARE] > 0
    assert info[K.CPU_UTILIZATION] > 0 and K.EFFICIENCY not in info
    assert info[K.OWN_DECODER_SHARE] > 0 and len(info[K.rounds(K.OWN_DECODER_SHARE)]) == info[K.ROUNDS]
    stages = info[K.STAGE_MS_PER_IMAGE]
    assert stages["read"] > 0 and stages["receive"] > 0, "every pipeline reads and hands its batches to the main loop"
    assert (stages["decode"] > 0) == (case.pipeline.storage != "memmap"), "only the memmap skips the decode"
