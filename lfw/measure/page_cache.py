"""Warm or cold page cache: the two honest ways to time file loading.

Warm (the default) reads every file once before timing, so rounds measure decode and transform, not the disk.
Cold evicts the dataset's files from the page cache before each round with ``posix_fadvise(DONTNEED)``, which
needs no root; the kernel may keep pages that are mapped or dirty, so cold is "as cold as an unprivileged
process can make it".
"""

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
