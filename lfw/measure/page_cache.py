"""Warm or cold page cache: warm reads every file once before timing; cold evicts the dataset's files before each
round with ``posix_fadvise(DONTNEED)`` (no root needed; mapped or dirty pages may stay)."""

from __future__ import annotations

import os
from collections.abc import Iterable

CACHE_MODES = ("warm", "cold")


def warm(paths: Iterable[str]) -> int:
    """Read every file once; returns the bytes read."""
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):  # in chunks: a decoded memmap is hundreds of MiB
                total += len(chunk)
    return total


def evict(paths: Iterable[str]) -> int:
    """Ask the kernel to drop each file's cached pages; returns how many files were advised."""
    count = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            count += 1
        finally:
            os.close(fd)
    return count
