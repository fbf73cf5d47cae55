"""The map function Grain's worker processes run: kept free of torch (numpy and simplejpeg only), because Grain
starts its ``mp_prefetch`` workers with ``spawn`` and each one imports this module afresh."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class LoadImage:
    """Index ``i`` -> ``(image, label, i)``: the file's bytes decoded by simplejpeg (libjpeg-turbo, strict) into an
    ``(H, W, 3)`` uint8 array, its ``int64`` label, its position in the pass."""

    def __init__(self, paths: Sequence[str], labels: np.ndarray) -> None:
        self.paths = list(paths)
        self.labels = np.asarray(labels, dtype=np.int64)

    def __call__(self, i: int) -> tuple[np.ndarray, np.int64, np.int64]:
        import simplejpeg

        with open(self.paths[i], "rb") as handle:
            data = handle.read()
        return simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True), self.labels[i], np.int64(i)
