"""The map functions Grain's worker processes run: kept free of torch (numpy and simplejpeg only), because Grain
starts its ``mp_prefetch`` workers with ``spawn`` and each one imports this module afresh."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class LoadImage:
    """Index ``i`` -> ``(image, label, i)``: the file decoded by simplejpeg (strict) to ``(H, W, 3)`` uint8."""

    def __init__(self, paths: Sequence[str], labels: np.ndarray) -> None:
        self.paths = list(paths)
        self.labels = np.asarray(labels, dtype=np.int64)

    def __call__(self, i: int) -> tuple[np.ndarray, np.int64, np.int64]:
        import simplejpeg

        with open(self.paths[i], "rb") as handle:
            data = handle.read()
        return simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True), self.labels[i], np.int64(i)


class NormalizeBatch:
    """``(images, labels, indices)`` with ``(B, H, W, 3)`` uint8 images as contiguous ``(B, 3, H, W)`` float32 in units
    of ``mean`` and ``std`` (of 0-1 values): ``ToTensor`` + ``Normalize``."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        deviation = np.asarray(std, dtype=np.float32).reshape(1, 3, 1, 1)
        self.scale: np.ndarray = np.float32(1 / 255) / deviation
        self.shift: np.ndarray = np.asarray(mean, dtype=np.float32).reshape(1, 3, 1, 1) / deviation

    def __call__(self, batch: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        images, labels, index = batch
        out = images.transpose(0, 3, 1, 2).astype(np.float32, order="C")
        out *= self.scale
        out -= self.shift
        return out, labels, index
