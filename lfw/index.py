"""The file index: a Python list of paths, or a numpy array of fixed-width bytes.

This choice is a benchmark axis, not a detail. Forked DataLoader workers share the parent's pages, but reading a
Python object writes its reference count, which copies the page holding it into the worker ("copy-on-access").
A list of N path strings is N + 1 objects with N refcounts, so an epoch slowly copies the whole index into every
worker. A fixed-width numpy ``S`` array is one object with one refcount: indexing it builds a fresh ``bytes``
and never touches the shared buffer's pages for writing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal, TypeAlias

import numpy as np

from lfw.errors import LFWError

IndexKind: TypeAlias = Literal["numpy", "list"]
INDEX_KINDS: tuple[IndexKind, ...] = ("numpy", "list")
FileIndex: TypeAlias = "list[str] | np.ndarray"
LabelIndex: TypeAlias = "list[int] | np.ndarray"


def check_index_kind(kind: str) -> IndexKind:
    """``kind`` if it names an index kind, else a user error listing the valid ones."""
    if kind not in INDEX_KINDS:
        raise LFWError(f"unknown index kind {kind!r}; choose one of: {', '.join(INDEX_KINDS)}")
    return kind  # type: ignore[return-value]


def make_index(paths: Sequence[str], labels: Sequence[int], kind: IndexKind) -> tuple[FileIndex, LabelIndex]:
    """Store ``paths`` and ``labels`` as the index ``kind``: Python lists, or numpy ``S``/``int32`` arrays."""
    check_index_kind(kind)
    if kind == "list":
        return [str(p) for p in paths], [int(v) for v in labels]
    encoded = [os.fsencode(p) for p in paths]
    return np.array(encoded, dtype=np.bytes_), np.asarray(labels, dtype=np.int32)


def path_at(index: FileIndex, i: int) -> str:
    """The path at position ``i`` as ``str``, whichever kind of index holds it."""
    item = index[i]
    return os.fsdecode(item) if isinstance(item, bytes | np.bytes_) else item


def replicate(index: FileIndex, labels: LabelIndex, size: int) -> tuple[FileIndex, LabelIndex]:
    """Repeat ``index`` cyclically to ``size`` entries, keeping its kind (large-index memory experiments)."""
    n = len(index)
    if n == 0 or size <= 0:
        raise LFWError("cannot replicate an empty index; scan a folder with images first")
    if isinstance(index, np.ndarray):
        order = np.arange(size) % n
        return index[order], np.asarray(labels)[order]
    reps, rest = divmod(size, n)
    repeated = index * reps + index[:rest]
    # Fresh str objects, not `size` references to the same n: the list must really hold `size` refcounts.
    return [os.fsdecode(os.fsencode(p)) for p in repeated], list(labels) * reps + list(labels[:rest])
