"""Datasets of the memory experiments: an index-only dataset over a large index, and a leaking control.

The copy-on-access effect is a property of the *index*, not of image decoding, so :class:`IndexOnlyDataset`
touches only the path and label of an item and decodes nothing: one epoch over a million entries stays short,
and the memory it moves is the index's alone. The index layouts compared are :data:`lfw.data.index.INDEX_KINDS`
(a list of ``str``, a fixed-width numpy array, one packed buffer), made by :func:`large_index`.

:class:`LeakingControlDataset` is a **positive control for the leak check and nothing else**: it keeps every
item it returns, so worker memory grows by a known amount per epoch and the check can be shown to fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from lfw.data.index import FileIndex, IndexKind, LabelIndex, make_index, replicate
from lfw.errors import LFWError


def large_index(paths: Sequence[str], labels: Sequence[int], kind: IndexKind,
                size: int) -> tuple[FileIndex, LabelIndex]:
    """``paths``/``labels`` replicated to ``size`` entries in layout ``kind`` (labels: list for ``list``,
    ``int32`` array otherwise). Built once per session, outside any timed round: a million fresh ``str`` objects
    are not free."""
    return replicate(*make_index(paths, labels, kind), size)


class IndexOnlyDataset(Dataset):
    """Items that touch only the index: ``(len(path), label)``, or ``(payload, label)`` with a payload.

    Reading ``self.index[i]`` is the access under test: for a list it writes the ``str``'s refcount (copying
    its page into the worker), for the array layouts it copies a few bytes out of a shared buffer. The index
    lives in :attr:`index`, not ``paths``: there are no files to warm, because none is read.

    Args:
        index: any layout from :func:`large_index` (or a plain list/array of paths).
        labels: one label per entry.
        payload_bytes: 0 for an int item; otherwise a ``uint8`` tensor of this many bytes per item, so the
            leak control and its well-behaved twin move the same data and differ only in what they keep.
    """

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
    """POSITIVE CONTROL, never for real use: keeps every item it returns, in each worker, forever.

    Worker memory grows by about ``len(self) * payload_bytes`` per epoch (summed over workers), so a leak
    check that does not flag this dataset is broken.
    """

    def __init__(self, index: FileIndex, labels: LabelIndex, payload_bytes: int = 4096) -> None:
        if payload_bytes <= 0:
            raise LFWError("the leaking control needs payload_bytes > 0, or it leaks nothing measurable")
        super().__init__(index, labels, payload_bytes)
        self.kept: list[tuple[Any, int]] = []

    def __getitem__(self, i: int) -> tuple[Any, int]:
        item = super().__getitem__(i)
        self.kept.append(item)
        return item
