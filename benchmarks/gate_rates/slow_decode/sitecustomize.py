"""A JPEG decode made ~15% slower, for measuring how reliably the gate catches a regression.

``python -m tools.gate_rates`` puts this folder's file at the root of the *current* side's checkout, which is first
on that side's ``PYTHONPATH``, so Python imports it at start-up (``sitecustomize``) and only that side decodes
slower. It wraps Pillow's ``ImageFile.load``: for every image decoded, ``LFW_SLOW_DECODE`` (default 0.15) of a
second full decode of the same file is owed, and paid as whole extra decodes when the debt reaches one. The extra
work is real decoding, so it is deterministic in instructions (the cost layer sees it) and costs the same share
of decode time on any machine.
"""

import os

from PIL import Image, ImageFile

FRACTION = float(os.environ.get("LFW_SLOW_DECODE", "0.15"))
_decode = ImageFile.ImageFile.load
_owed = [0.0]


def _slow_load(self):  # type: ignore[no-untyped-def]
    result = _decode(self)
    name = getattr(self, "filename", None)
    if name:
        _owed[0] += FRACTION
        while _owed[0] >= 1.0:
            _owed[0] -= 1.0
            with Image.open(name) as again:
                _decode(again)
    return result


ImageFile.ImageFile.load = _slow_load
