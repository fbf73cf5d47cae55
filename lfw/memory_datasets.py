"""Datasets for the memory experiments: an index-only dataset over a large index, and a leaking control.

The copy-on-access effect is a property of the *index*, not of image decoding, so :class:`IndexOnlyDataset`
touches only the path and label of an item and decodes nothing: one epoch over a million entries takes seconds,
and the memory it moves is the index's alone. Three index layouts are compared:

- ``list``: a Python ``list`` of ``str``, one refcounted object per path (what most datasets do);
- ``numpy``: a fixed-width ``S`` array, one object; indexing returns a fresh ``bytes`` copy;
- ``packed``: one ``uint8`` buffer of all paths back to back plus ``int64`` offsets, two objects and no
  padding (what a pyarrow string array is, without the dependency).

:class:`LeakingControlDataset` is a **positive control for the leak check and nothing else**: it keeps every
item it returns, so worker memory grows by a known amount per epoch and the check can be shown to fail.

:func:`frozen_gc` isolates the index from a second copy-on-access effect measured here: a forked worker's
cyclic GC writes the GC header of every tracked object inherited from the parent (torch, pytest, ...), which
copied 80..97 MiB into *each* worker within one epoch even with a numpy index. ``gc.freeze()`` before the
fork moves those objects out of the GC's reach (Python's documented remedy); then numpy workers grew 1..5 MiB.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, TypeAlias

import numpy as np
import torch
from torch.utils.data import Dataset

from lfw.errors import LFWError
from lfw.index import FileIndex, LabelIndex, make_index, replicate

LargeIndexKind: TypeAlias = Literal["list", "numpy", "packed"]
LARGE_INDEX_KINDS: tuple[LargeIndexKind, ...] = ("list", "numpy", "packed")


@contextmanager
def frozen_gc(freeze: bool = True) -> Iterator[None]:
    """Collect, then ``gc.freeze()`` every object now alive until the block ends; a no-op if ``freeze`` is off.

    Workers forked inside the block inherit the frozen generation, so their collections never touch the
    parent's objects; only the index access under test copies pages.
    """
    if not freeze or gc.get_freeze_count():  # already frozen by the caller: theirs to undo, not ours
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class PackedPaths:
    """Paths as one contiguous ``uint8`` buffer plus ``int64`` offsets: two refcounts however many paths.

    ``self[i]`` returns the path as ``bytes`` (a copy), so :func:`lfw.index.path_at` decodes it like a numpy
    entry. Unlike the fixed-width ``S`` array, no path is padded to the longest one.
    """

    def __init__(self, buffer: np.ndarray, offsets: np.ndarray) -> None:
        if buffer.dtype != np.uint8 or offsets.dtype != np.int64 or offsets.ndim != 1 or len(offsets) == 0:
            raise LFWError("PackedPaths needs a uint8 buffer and a non-empty 1-d int64 offsets array")
        if offsets[0] != 0 or offsets[-1] != len(buffer) or np.any(np.diff(offsets) < 0):
            raise LFWError("PackedPaths offsets must start at 0, end at len(buffer) and never decrease")
        self.buffer = buffer
        self.offsets = offsets

    @classmethod
    def from_paths(cls, paths: Sequence[str]) -> PackedPaths:
        encoded = [os.fsencode(p) for p in paths]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets)

    def replicate(self, size: int) -> PackedPaths:
        """The paths repeated cyclically to ``size`` entries, every copy really stored (as ``replicate`` does)."""
        n = len(self)
        if n == 0 or size <= 0:
            raise LFWError("cannot replicate an empty index; scan a folder with images first")
        reps, rest = divmod(size, n)
        buffer = np.concatenate([np.tile(self.buffer, reps), self.buffer[: self.offsets[rest]]])
        lengths = np.diff(self.offsets)[np.arange(size) % n]
        offsets = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return PackedPaths(buffer, offsets)

    @property
    def nbytes(self) -> int:
        return int(self.buffer.nbytes + self.offsets.nbytes)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.buffer[self.offsets[i]: self.offsets[i + 1]].tobytes()


AnyIndex: TypeAlias = "FileIndex | PackedPaths"


def index_nbytes(index: AnyIndex) -> int:
    """Bytes the index occupies in the process that built it (a list: the list plus every string in it)."""
    if isinstance(index, np.ndarray | PackedPaths):
        return int(index.nbytes)
    return sys.getsizeof(index) + sum(map(sys.getsizeof, index))


def large_index(paths: Sequence[str], labels: Sequence[int], kind: LargeIndexKind,
                size: int) -> tuple[AnyIndex, LabelIndex]:
    """``paths``/``labels`` replicated to ``size`` entries in layout ``kind`` (labels: list for ``list``,
    ``int32`` array otherwise). Built once per session: a million-entry list takes about a second."""
    if kind not in LARGE_INDEX_KINDS:
        raise LFWError(f"unknown large-index kind {kind!r}; choose one of: {', '.join(LARGE_INDEX_KINDS)}")
    if kind == "packed":
        packed = PackedPaths.from_paths(paths).replicate(size)
        return packed, np.asarray(labels, dtype=np.int32)[np.arange(size) % len(labels)]
    index, small_labels = make_index(paths, labels, kind)
    return replicate(index, small_labels, size)


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

    def __init__(self, index: AnyIndex, labels: LabelIndex, payload_bytes: int = 0) -> None:
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

    def __init__(self, index: AnyIndex, labels: LabelIndex, payload_bytes: int = 4096) -> None:
        if payload_bytes <= 0:
            raise LFWError("the leaking control needs payload_bytes > 0, or it leaks nothing measurable")
        super().__init__(index, labels, payload_bytes)
        self.kept: list[tuple[Any, int]] = []

    def __getitem__(self, i: int) -> tuple[Any, int]:
        item = super().__getitem__(i)
        self.kept.append(item)
        return item
