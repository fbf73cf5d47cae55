"""Datasets of the memory experiments: :class:`IndexOnlyDataset` touches only an item's path and label over a
large index (:func:`large_index`, layouts :data:`lfw.data.index.INDEX_KINDS`), so the memory an epoch moves is the
index's alone; :class:`LeakingControlDataset` is the leak check's positive control and nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from lfw.data.index import FileIndex, IndexKind, LabelIndex, make_index, replicate
from lfw.errors import LFWError


def large_index(paths: Sequence[str], labels: Sequence[int], kind: IndexKind,
                size: int) -> tuple[FileIndex, LabelIndex]:
    """``paths``/``labels`` replicated to ``size`` fresh entries in layout ``kind`` (built once, untimed)."""
    return replicate(*make_index(paths, labels, kind), size)


class IndexOnlyDataset(Dataset):
    """Items that touch only the index: ``(len(path), label)``, or ``(payload, label)`` with a payload.

    Args:
        index: any layout from :func:`large_index` (or a plain list/array of paths).
        labels: one label per entry.
        payload_bytes: 0 for an int item; otherwise a ``uint8`` tensor of this many bytes per item (the leak
            control and its twin move the same data)."""

    def __init__(self, index: FileIndex, labels: LabelIndex, payload_bytes: int = 0) -> None:
        if len(index) != len(labels):
            raise LFWError(f"index has {len(index)} entries but labels has {len(labels)}")
        if payload_bytes < 0:
            raise LFWError(f"payload_bytes must be 0 or more, got {payload_bytes}")
        self.index = index
        self.labels = labels
        self.payload_bytes = payload_bytes

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> tuple[Any, int]:
        length = len(self.index[i])
        label = int(self.labels[i])
        if not self.payload_bytes:
            return length, label
        return torch.full((self.payload_bytes,), length % 256, dtype=torch.uint8), label


class LeakingControlDataset(IndexOnlyDataset):
    """POSITIVE CONTROL, never for real use: keeps every item it returns, in each worker, forever (about
    ``len(self) * payload_bytes`` per epoch), so a leak check that does not flag it is broken."""

    def __init__(self, index: FileIndex, labels: LabelIndex, payload_bytes: int = 4096) -> None:
        if payload_bytes <= 0:
            raise LFWError("the leaking control needs payload_bytes > 0, or it leaks nothing measurable")
        super().__init__(index, labels, payload_bytes)
        self.kept: list[tuple[Any, int]] = []

    def __getitem__(self, i: int) -> tuple[Any, int]:
        item = super().__getitem__(i)
        self.kept.append(item)
        return item
