"""The suite on a user's own dataset: ``pytest benchmarks --bench-dataset MODULE:FACTORY``.

``FACTORY`` is a callable that takes no argument and returns a map-style ``torch.utils.data.Dataset`` whose items
the default collate can batch; ``MODULE`` is importable from the working directory. The knob groups then run on
its items with the same rotations, and each group's ceiling is the factory's own items read in one process
(:class:`~lfw.measure.ceiling.CeilingSweep` over that dataset). Cases that need LFW's presets or files skip with
the reason (:mod:`lfw.suite.skips`).

Every way the string or the factory can be wrong is one :class:`~lfw.errors.LFWError` naming the problem.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from torch.utils.data import Dataset, IterableDataset
from torch.utils.data.dataloader import default_collate

from lfw.errors import LFWError, one_line

FORM = "MODULE:FACTORY (e.g. examples.imagefolder:faces)"


def load_factory(spec: str) -> Callable[[], Any]:
    """The callable ``spec`` names, imported with the working directory first on the module path."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise LFWError(f"--bench-dataset {spec!r}: expected {FORM}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise LFWError(f"--bench-dataset {spec!r}: no module {exc.name!r} importable from {os.getcwd()}") from None
    except Exception as exc:  # the user's module failed while importing: say how, in one line
        raise LFWError(f"--bench-dataset {spec!r}: importing {module_name} failed: {one_line(exc)}") from None
    factory = module
    for part in attr.split("."):
        if not hasattr(factory, part):
            raise LFWError(f"--bench-dataset {spec!r}: module {module_name} has no attribute {attr!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise LFWError(f"--bench-dataset {spec!r}: {attr} is a {type(factory).__name__}, not a callable that "
                       "returns a Dataset")
    return factory


def user_dataset(spec: str) -> Dataset:
    """The dataset ``spec``'s factory returns, checked: map-style, not empty, and two items that collate."""
    factory = load_factory(spec)
    try:
        dataset = factory()
    except Exception as exc:  # the user's factory failed: one line, no traceback
        raise LFWError(f"--bench-dataset {spec!r}: the factory raised {one_line(exc)}") from None
    if isinstance(dataset, IterableDataset) or not isinstance(dataset, Dataset) or not hasattr(dataset, "__len__"):
        raise LFWError(f"--bench-dataset {spec!r}: the factory returned a {type(dataset).__name__}, not a map-style "
                       "torch.utils.data.Dataset with __len__ and __getitem__")
    size = len(dataset)
    if size == 0:
        raise LFWError(f"--bench-dataset {spec!r}: the dataset is empty")
    try:
        items = [dataset[0], dataset[min(1, size - 1)]]
    except Exception as exc:
        raise LFWError(f"--bench-dataset {spec!r}: reading item 0 failed: {one_line(exc)}") from None
    try:
        default_collate(items)
    except Exception as exc:
        raise LFWError(f"--bench-dataset {spec!r}: its items cannot be batched by the default collate "
                       f"({one_line(exc)}); return tensors or numbers of one shape per field") from None
    return dataset
