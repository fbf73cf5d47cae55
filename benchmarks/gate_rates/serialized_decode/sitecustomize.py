"""Every image load behind one machine-wide lock, for showing that the gate calls serialized workers a regression.

Put this folder first on ``PYTHONPATH`` (``sitecustomize`` is imported at start-up, by the benchmark process and,
forked, by its DataLoader workers): it wraps ``LFWDataset.__getitem__`` (read, decode, transform) in an exclusive
``flock`` on one file, as a careless shared cache or logging lock would, so two workers never load at once. The
machine still gives its cores (the rotation's parallel capacity stays near 2), so the multi-worker cases'
efficiency falls toward one core's worth. (A lock around the JPEG decode alone costs little here: decode is less
than half of an image's work, and two workers overlap one's decode with the other's transform.)
"""

import fcntl
import os

import lfw.data.dataset

LOCK = os.environ.get("LFW_SERIALIZE_LOCK", "/tmp/lfw-serialized-decode.lock")
_getitem = lfw.data.dataset.LFWDataset.__getitem__


def _serialized_getitem(self, i):  # type: ignore[no-untyped-def]
    with open(LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            return _getitem(self, i)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


lfw.data.dataset.LFWDataset.__getitem__ = _serialized_getitem
