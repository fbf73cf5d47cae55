"""The decoded-pixel check: every image a peer hands out against the reference decoder, its label and its place.

One epoch with indices must hold every image of the pass once, each with the reference label, the contract's shape
and dtype, and pixels within :data:`MEAN_TOLERANCE` (mean absolute difference per image, in levels of 255) of the
reference, Pillow's decode (:func:`lfw.pipelines.storage.decoded_memmap`); the largest single difference is recorded,
not bounded. A ``float`` case is de-normalized first. Why JPEG decoders differ and by how much: docs/peers.md."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lfw.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from lfw.errors import LFWError
from lfw.peers.contract import PeerLoader

MEAN_TOLERANCE = 3.0


class MisdecodeError(LFWError):
    """A peer handed out an image, label or batch that does not match the reference (one line, naming it)."""


@dataclass(frozen=True)
class PixelCheck:
    """What one checked epoch found: images compared, the largest per-image mean and single differences."""

    images: int
    max_abs: float
    max_mean_abs: float
    worst_index: int

    def as_dict(self) -> dict[str, float | int]:
        return {"images": self.images, "max_abs_diff": round(self.max_abs, 3),
                "max_mean_abs_diff": round(self.max_mean_abs, 4), "worst_index": self.worst_index,
                "mean_tolerance": MEAN_TOLERANCE}


def as_levels(images: torch.Tensor) -> torch.Tensor:
    """A batch in levels of 255 as float32 ``(B, H, W, 3)``; a normalized float batch is de-normalized first."""
    if images.dtype == torch.float32:
        mean, std = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
        images = (images * std + mean) * 255
    return images.to(torch.float32).permute(0, 2, 3, 1)


def check_peer(loader: PeerLoader, reference: np.ndarray) -> PixelCheck:
    """One epoch of ``loader`` against ``reference`` (decoded ``(N, H, W, 3)`` uint8, scan order); raises
    :class:`MisdecodeError` on the first image, label or batch that does not match. The epoch is closed either way."""
    epoch = loader.iterate(with_index=True)
    try:
        return _check_epoch(loader, epoch, reference)
    finally:  # its engine stopped here, untimed, not by the next pass's iter() inside the clock
        epoch.close()


def _check_epoch(loader: PeerLoader, epoch: Iterator[Any], reference: np.ndarray) -> PixelCheck:
    images = loader.images
    seen = np.zeros(len(images), dtype=bool)
    worst_abs = worst_mean = 0.0
    worst_index = -1
    for batch, labels, index in epoch:
        index_np = index.numpy()
        if index_np.min() < 0 or index_np.max() >= len(images) or seen[index_np].any():
            raise MisdecodeError(f"{loader.name}: an image was handed out twice or does not belong to the pass")
        seen[index_np] = True
        if not torch.equal(labels, torch.from_numpy(images.labels[index_np])):
            raise MisdecodeError(f"{loader.name}: labels differ from the reference's for images {index_np[:4]}...")
        want = torch.from_numpy(np.array(reference[index_np])).to(torch.float32)
        got = as_levels(batch)
        if got.shape != want.shape:
            raise MisdecodeError(f"{loader.name}: images of shape {tuple(got.shape[1:])}, the reference's "
                                 f"{tuple(want.shape[1:])}")
        diff = (got - want).abs()
        means = diff.flatten(1).mean(1)
        peaks = diff.flatten(1).amax(1)
        for k in range(len(index_np)):
            if means[k] > worst_mean:
                worst_mean, worst_index = float(means[k]), int(index_np[k])
            worst_abs = max(worst_abs, float(peaks[k]))
            if means[k] > MEAN_TOLERANCE:
                raise MisdecodeError(f"{loader.name} mis-decodes {images.paths[int(index_np[k])]}: its pixels are "
                                     f"{float(means[k]):.2f} levels from the reference's on average (tolerance "
                                     f"{MEAN_TOLERANCE:g}; largest difference {float(peaks[k]):.0f})")
    if not seen.all():
        raise MisdecodeError(f"{loader.name}: {int((~seen).sum())} of {len(images)} images never came out")
    return PixelCheck(len(images), worst_abs, worst_mean, worst_index)
