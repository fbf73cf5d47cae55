"""lfw-bench: measure the PyTorch DataLoader on Labeled Faces in the Wild.

Layout: floors, lowest first (:data:`LAYERS`); a module imports its own folder and the folders below it, never
one above (a unit test reads every import of the package and keeps it so). At the bottom the one-line errors
(:mod:`lfw.errors`) and what every command-line tool and chart shares (:mod:`lfw.cli`); then statistics and the
saved-run model (:mod:`lfw.stats`, :mod:`lfw.results`); data (:mod:`lfw.data`); the one measurement primitive
(:mod:`lfw.measure`); pipelines and the remote reader built on it; the loaders users switch to, behind one
contract (:mod:`lfw.peers`); the suite engine (:mod:`lfw.suite`); and the
tools on top: :mod:`lfw.distributed`, :mod:`lfw.diagnose`, :mod:`lfw.gate`, :mod:`lfw.history` and
:mod:`lfw.report`, which may read all of them. The exercise's CLI (``python -m lfw``) stands above every floor.

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
