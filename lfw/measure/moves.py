"""Deterministic counts of what a pipeline moves per image, where instruction counts do not look.

Per image, over one pass of :class:`~lfw.measure.LoaderPass` in this process (``num_workers=0``) after a warm-up
pass: ``files_opened_per_image`` (``open`` audit events), ``read_calls_per_image`` and ``bytes_read_per_image``
(``syscr`` and ``rchar`` of ``/proc/self/io``) and ``batch_bytes_per_image`` (the tensors and arrays of the
batches, what workers would hand over)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psutil
import torch
from torch.utils.data import DataLoader

from lfw.errors import LFWError
from lfw.measure.loader_pass import LoaderPass
from lfw.results import keys as K


class _Opens:
    """A process-wide audit hook (hooks cannot be removed) that counts ``open`` events while switched on."""

    count = 0
    on = False
    installed = False

    @classmethod
    def hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if cls.on and event == "open":
            cls.count += 1

    @classmethod
    def install(cls) -> None:
        if not cls.installed:
            sys.addaudithook(cls.hook)
            cls.installed = True


def batch_bytes(batch: Any) -> int:
    """Bytes of every tensor and numpy array in ``batch`` (tuples, lists and mappings walked)."""
    if isinstance(batch, torch.Tensor):
        return batch.element_size() * batch.numel()
    if isinstance(batch, np.ndarray):
        return int(batch.nbytes)
    if isinstance(batch, Mapping):
        return sum(batch_bytes(v) for v in batch.values())
    if isinstance(batch, Sequence) and not isinstance(batch, str | bytes):
        return sum(batch_bytes(v) for v in batch)
    return 0


@dataclass(frozen=True)
class MoveCounts:
    """What one counted pass moved: its images, files opened, read calls, bytes read and batch bytes."""

    images: int
    files_opened: int
    read_calls: int
    bytes_read: int
    batch_bytes: int

    def per_image(self) -> dict[str, float]:
        """The ``extra_info`` record: each count per image (keys in :mod:`lfw.results.keys`)."""
        n = max(self.images, 1)
        return {K.FILES_OPENED_PER_IMAGE: round(self.files_opened / n, 4),
                K.READ_CALLS_PER_IMAGE: round(self.read_calls / n, 4),
                K.BYTES_READ_PER_IMAGE: round(self.bytes_read / n, 1),
                K.BATCH_BYTES_PER_IMAGE: round(self.batch_bytes / n, 1)}


def count_moves(loader: DataLoader, batches: int) -> MoveCounts:
    """Count one pass of ``batches`` batches of ``loader`` after an uncounted warm-up pass.

    Raises:
        LFWError: the loader has workers (their opens and reads are not this process's).
    """
    if loader.num_workers != 0:
        raise LFWError(f"moves are counted in this process: build the loader with num_workers=0, "
                       f"not {loader.num_workers}")
    moved = [0]

    def add(batch: Any) -> None:
        moved[0] += batch_bytes(batch)

    _Opens.install()
    runner = LoaderPass(loader, batches, memory_interval_s=None, step=add)
    try:
        runner.run()  # warm-up: lazy imports and first-use opens stay out of the count
        runner.setup()
        moved[0] = 0
        io0 = psutil.Process().io_counters()
        _Opens.count, _Opens.on = 0, True
        try:
            result = runner.run()
        finally:
            _Opens.on = False
        io1 = psutil.Process().io_counters()
    finally:
        runner.close()
    return MoveCounts(result.images, _Opens.count, io1.read_count - io0.read_count,
                      io1.read_chars - io0.read_chars, moved[0])
