"""lfw-bench: measure the PyTorch DataLoader on Labeled Faces in the Wild.

Layout: data (:mod:`lfw.data`), the one measurement primitive (:mod:`lfw.measure`), the suite engine
(:mod:`lfw.suite`), saved results and statistics (:mod:`lfw.results`, :mod:`lfw.stats`), and the tools built on
them (the exercise CLI in ``python -m lfw``, :mod:`lfw.gate`, :mod:`lfw.report`, :mod:`lfw.diagnose`).

The top-level names are imported lazily: tools that only read JSON (the gate, the report) start without
paying for torch's import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PRESETS", "LFWDataset", "get_preset"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "LFWDataset":
        from lfw.data.dataset import LFWDataset

        return LFWDataset
    if name in ("PRESETS", "get_preset"):
        from lfw.data import transforms

        return getattr(transforms, name)
    raise AttributeError(f"module 'lfw' has no attribute {name!r}")
