"""lfw-bench: measure the PyTorch DataLoader on Labeled Faces in the Wild.

Layout: data (:mod:`lfw.dataset`, :mod:`lfw.index`, :mod:`lfw.transforms`, :mod:`lfw.synth`,
:mod:`lfw.data_root`), measurement (:mod:`lfw.measure`), and the tools built on them (the exercise CLI in
``python -m lfw``, :mod:`lfw.gate`, :mod:`lfw.report`, :mod:`lfw.diagnose`).

The top-level names are imported lazily: tools that only read JSON (the gate, the report) start without
paying for torch's import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PRESETS", "LFWDataset", "get_preset"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "LFWDataset":
        from lfw.dataset import LFWDataset

        return LFWDataset
    if name in ("PRESETS", "get_preset"):
        from lfw import transforms

        return getattr(transforms, name)
    raise AttributeError(f"module 'lfw' has no attribute {name!r}")
