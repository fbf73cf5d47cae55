"""The loaders users switch to, measured beside DataLoader: same images, same clock, same ceiling, same memory.

Each case is one member of one interleaved rotation (:mod:`lfw.suite.peers`): SPDL, NVIDIA DALI on its CPU
backend, Grain (threads and processes), WebDataset and LitData, each as its own documentation recommends for image
loading on CPU with its parallelism swept up to the usable cores, beside DataLoader's two best pipelines
(``dataloader-simplejpeg-slots-w2``, ``dataloader-pil-w2``), a float-normalized variant for the two fastest peers and
DataLoader's float reference, and the decoders' single-core ceilings. Every pass is one epoch over the decoders
group's images, timed by the suite's one primitive; the warm-up round is each case's cold first epoch, recorded
apart; before its first timed round each peer's decoded pixels are checked against the reference decoder; after
the rotation each case's memory is measured alone. A peer not installed here skips with one line naming what is
missing and how to get it (``make peers`` installs them). The peers are reference rows: the gate never judges them
(docs/peers.md).
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["peers"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_peers(rotated_case, profile, pipeline: str) -> None:
    info = rotated_case()
    case = GROUP.case(pipeline)
    assert info[K.IMAGES] == case.pass_images(profile), "a pass must be exactly one epoch of the pass's images"
    assert info[K.CPU_MS_PER_IMAGE] > 0 and info[K.COLD_IMAGES_PER_S] > 0
    if case.peer is not None:
        assert info[KN.PEER.key] == case.peer.peer and info[K.PARALLELISM] == case.peer.parallelism
        assert info[K.WORKERS_SEEN] == (case.peer.parallelism if case.peer.knob == "workers" else 0), \
            "the peer's worker processes were not all counted"
        check = info[K.PIXEL_CHECK]
        assert check["images"] == info[K.IMAGES] and check["max_mean_abs_diff"] <= check["mean_tolerance"]
    if info.get(K.PEER_DECODER) is not None or case.peer is None:
        assert info[K.OWN_DECODER_SHARE] > 0
