"""lfw-bench: measure the PyTorch DataLoader on Labeled Faces in the Wild.

Layout: floors, lowest first (:data:`LAYERS`); a module imports its own folder and the folders below it, never
one above (a test checks it). What each floor holds: docs/methodology.md, "Inside the library".

The top-level names are imported lazily: tools that only read JSON (the gate, the report) start without
paying for torch's import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["PRESETS", "LFWDataset", "get_preset"]
__version__ = "0.1.0"

LAYERS = ("errors", "cli", "stats", "results", "data", "measure", "pipelines", "remote", "peers", "suite",
          "distributed", "diagnose", "gate", "history", "report")


def lazy_exports(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that imports each name of ``homes`` from its module on first use."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(importlib.import_module(homes[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


__getattr__ = lazy_exports(__name__, {"LFWDataset": "lfw.data.dataset", "PRESETS": "lfw.data.transforms",
                                      "get_preset": "lfw.data.transforms"})
