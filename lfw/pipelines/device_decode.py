"""GPU decode as a pipeline (``Pipeline("tvio", batching="device")``): DataLoader workers read the files' bytes, the
main process decodes each batch in one ``torchvision.io.decode_jpeg(list, device=...)`` call, the pass's ``step``
(:meth:`lfw.pipelines.Pipeline.consumer_step`). :class:`DeviceDecodeSweep` is that decode alone, of bytes already in
memory: the device decoder's own limit (a rotation member, :mod:`lfw.suite.runner`). Without CUDA both run on the CPU
stand-in (:func:`lfw.measure.device.accelerator`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch.utils.data import Dataset

from lfw.data.dataset import LFWDataset
from lfw.data.index import path_at
from lfw.errors import LFWError
from lfw.measure.device import accelerator, synchronize, timed_ms
from lfw.measure.loader_pass import PassResult
from lfw.pipelines.decoders import read_file


class JpegByteBatches(Dataset):
    """Batches of encoded images: item ``i`` is batch ``i``, ``[bytes, labels]``, the images' bytes as a list of
    views into one tensor (they differ in length; one tensor, so a worker hands a batch over in one shared-memory
    segment, not one per image) and their labels. The pass counts a batch's images by the list's length."""

    yields_batches = True  # items are whole batches: the DataLoader runs with batch_size=None

    def __init__(self, root: str | os.PathLike[str], batch_size: int = 64, images: int | None = None) -> None:
        if batch_size <= 0:
            raise LFWError(f"batch size must be a positive integer, got {batch_size}")
        files = LFWDataset(root, transform=None)
        self.images = len(files) if images is None else min(images, len(files))
        if self.images == 0:
            raise LFWError(f"no images to batch under {root}")
        self.batch_size = batch_size
        self.paths = [path_at(files.paths, i) for i in range(self.images)]  # what cache modes touch
        self.labels = [int(files.labels[i]) for i in range(self.images)]

    def __len__(self) -> int:
        return math.ceil(self.images / self.batch_size)

    def __getitem__(self, index: int) -> list[Any]:
        if not 0 <= index < len(self):
            raise IndexError(index)
        picked = range(index * self.batch_size, min(self.images, (index + 1) * self.batch_size))
        data = [torch.frombuffer(read_file(self.paths[i]), dtype=torch.uint8) for i in picked]
        flat = torch.cat(data)
        return [list(flat.split([len(d) for d in data])), torch.tensor([self.labels[i] for i in picked])]


def decode_step(device: str | None = None) -> Callable[[Any], None]:
    """The pass's ``step``: one decode of the batch's bytes on ``device`` (default: :func:`accelerator`), synced."""
    from torchvision.io import decode_jpeg

    where = device or accelerator()

    def step(batch: Any) -> None:
        decode_jpeg(batch[0], device=where)
        synchronize(where)

    return step


class DeviceDecodeSweep:
    """The device decoder alone: ``decode_jpeg(list, device=...)`` on the bytes of ``batches`` read once into
    memory, timed on the device's clock (:func:`~lfw.measure.device.timed_ms`); images/s of a whole sweep."""

    def __init__(self, batches: JpegByteBatches, device: str | None = None) -> None:
        self.chunks = [batches[i][0] for i in range(len(batches))]
        self.device = device or accelerator()

    def measure(self) -> PassResult:
        from torchvision.io import decode_jpeg

        ms = sum(timed_ms(self.device, partial(decode_jpeg, chunk, device=self.device)) for chunk in self.chunks)
        return PassResult(images=sum(map(len, self.chunks)), batches=len(self.chunks), wall_s=ms / 1e3, ttfb_s=0.0)

    def close(self) -> None:
        self.chunks = []
