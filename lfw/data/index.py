"""The file index: a Python list of paths, a numpy array of fixed-width bytes, or one packed byte buffer.

A benchmark axis: reading a list entry in a forked worker writes its refcount and copies its page ("copy-on-access");
a numpy ``S`` array or :class:`PackedPaths` is one object whatever its length (docs/methodology.md, Memory)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Literal, TypeAlias

import numpy as np

from lfw.errors import LFWError, check_choice

IndexKind: TypeAlias = Literal["numpy", "list", "packed"]
INDEX_KINDS: tuple[IndexKind, ...] = ("numpy", "list", "packed")
LabelIndex: TypeAlias = "list[int] | np.ndarray"


class PackedPaths:
    """Paths as one ``uint8`` buffer plus ``int64`` offsets (no padding); ``self[i]`` is the path as ``bytes``."""

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


FileIndex: TypeAlias = "list[str] | np.ndarray | PackedPaths"


def index_kind(index: object) -> IndexKind | None:
    """The kind of file index ``index`` is (what :func:`make_index` builds for each kind); None for anything else."""
    if isinstance(index, PackedPaths):
        return "packed"
    if isinstance(index, np.ndarray):
        return "numpy"
    return "list" if isinstance(index, list) else None


def make_index(paths: Sequence[str], labels: Sequence[int], kind: IndexKind) -> tuple[FileIndex, LabelIndex]:
    """``paths`` and ``labels`` as index ``kind``: Python lists, or numpy ``S`` (or packed) paths, ``int32`` labels."""
    check_choice("index kind", kind, INDEX_KINDS)
    if kind == "list":
        return [str(p) for p in paths], [int(v) for v in labels]
    if kind == "packed":
        return PackedPaths.from_paths(paths), np.asarray(labels, dtype=np.int32)
    return np.array([os.fsencode(p) for p in paths], dtype=np.bytes_), np.asarray(labels, dtype=np.int32)


def path_at(index: FileIndex, i: int) -> str:
    """The path at position ``i`` as ``str``, whichever kind of index holds it."""
    item = index[i]
    return os.fsdecode(item) if isinstance(item, bytes | np.bytes_) else item


def replicate(index: FileIndex, labels: LabelIndex, size: int) -> tuple[FileIndex, LabelIndex]:
    """Repeat ``index`` cyclically to ``size`` entries, keeping its kind (large-index memory experiments)."""
    n = len(index)
    if n == 0 or size <= 0:
        raise LFWError("cannot replicate an empty index; scan a folder with images first")
    if isinstance(index, PackedPaths | np.ndarray):
        order = np.arange(size) % n
        return index.replicate(size) if isinstance(index, PackedPaths) else index[order], np.asarray(labels)[order]
    reps, rest = divmod(size, n)
    repeated = index * reps + index[:rest]
    # Fresh str objects, not `size` references to the same n: the list must really hold `size` refcounts.
    return [os.fsdecode(os.fsencode(p)) for p in repeated], list(labels) * reps + list(labels[:rest])


def index_nbytes(index: FileIndex) -> int:
    """Bytes the index occupies in the process that built it (a list: the list plus every string in it)."""
    if isinstance(index, np.ndarray | PackedPaths):
        return int(index.nbytes)
    return sys.getsizeof(index) + sum(map(sys.getsizeof, index))
