"""Every JPEG decode behind one machine-wide lock, for showing that the gate calls serialized workers a regression.

Put this folder first on ``PYTHONPATH`` (``sitecustomize`` is imported at start-up, by the benchmark process and,
forked, by its DataLoader workers): it wraps Pillow's ``ImageFile.load`` in an exclusive ``flock`` on one file, as
a careless shared cache or logging lock would, so two workers never decode at once. The machine still gives its
cores (the rotation's parallel capacity stays near 2), so the two-worker cases' efficiency halves.
"""

import fcntl
import os

from PIL import ImageFile

LOCK = os.environ.get("LFW_SERIALIZE_LOCK", "/tmp/lfw-serialized-decode.lock")
_decode = ImageFile.ImageFile.load


def _serialized_load(self):  # type: ignore[no-untyped-def]
    with open(LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            return _decode(self)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


ImageFile.ImageFile.load = _serialized_load
