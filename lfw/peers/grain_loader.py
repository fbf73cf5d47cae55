"""Grain: a ``MapDataset`` over the pass's images, ending in ``batch``, in either of Grain's parallel engines
(``threads`` or ``processes``: docs/peers.md), decoded with simplejpeg (:mod:`lfw.peers.grain_map`). Batches are
``(B, H, W, 3)`` arrays, handed out as a ``(B, 3, H, W)`` view; the float case normalizes in the pipeline."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import torch

from lfw.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from lfw.errors import check_choice
from lfw.peers.contract import PassImages, PeerLoader, PeerSpec, library, not_importable
from lfw.peers.grain_map import LoadImage, NormalizeBatch

DISTRIBUTIONS = ("grain",)
INSTALL = "pip install grain (make peers)"
DECODER = "simplejpeg"
missing = partial(not_importable, "grain", INSTALL, "grain", "simplejpeg")  # why it cannot run here, or None
MODES = ("threads", "processes")
PREFETCH_BUFFER = 2  # batches per thread or worker kept ready: a DataLoader's prefetch_factor


class GrainLoader(PeerLoader):
    """Grain's dataset pipeline (module docstring) behind the peers' contract."""

    def __init__(self, spec: PeerSpec, images: PassImages) -> None:
        check_choice("grain mode", spec.mode, MODES)
        super().__init__(spec, images, layout="chw" if spec.output == "float" else "hwc-view", persistent=False,
                         processes=spec.parallelism if spec.mode == "processes" else 0)
        self._engine: Any = None

    def dataset(self) -> Any:
        grain = library("grain")
        batched = grain.MapDataset.range(len(self.images)).map(LoadImage(self.images.paths, self.images.labels)) \
            .batch(self.spec.batch_size)
        if self.spec.output == "float":
            batched = batched.map(NormalizeBatch(IMAGENET_MEAN, IMAGENET_STD))
        if self.spec.mode == "processes":
            return batched.to_iter_dataset(grain.ReadOptions(num_threads=0)).mp_prefetch(
                grain.MultiprocessingOptions(num_workers=self.spec.parallelism,
                                             per_worker_buffer_size=PREFETCH_BUFFER))
        return batched.to_iter_dataset(grain.ReadOptions(num_threads=self.spec.parallelism,
                                                         prefetch_buffer_size=PREFETCH_BUFFER * self.spec.parallelism))

    def start(self) -> None:
        self._engine = iter(self.dataset())

    def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        floats = self.spec.output == "float"  # already (B, 3, H, W), normalized in the pipeline
        for images, labels, index in self._engine:
            batch = torch.from_numpy(images)
            yield batch if floats else batch.permute(0, 3, 1, 2), torch.from_numpy(labels), torch.from_numpy(index)

    def stop(self) -> None:
        engine, self._engine = self._engine, None
        close = getattr(engine, "close", None)
        if callable(close):
            close()


build = GrainLoader  # build(spec, images): the adapter's loader (lfw.peers)
