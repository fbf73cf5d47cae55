"""The suite on a user's own dataset: ``pytest benchmarks --bench-dataset MODULE:FACTORY``.

``FACTORY`` takes no argument and returns a map-style ``Dataset`` the default collate can batch (``MODULE``
importable from the working directory); cases needing LFW skip with the reason. Every way it can be wrong is one
:class:`~lfw.errors.LFWError`; with ``skip_unreadable`` the items that raise are left out (:class:`ReadableItems`)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from torch.utils.data import Dataset, IterableDataset, Subset
from torch.utils.data.dataloader import default_collate

from lfw.data.screen import Screening, find_unreadable
from lfw.errors import LFWError, one_line

FORM = "MODULE:FACTORY (e.g. examples.imagefolder:faces)"
SKIP_OPTION = "--bench-skip-bad-images"  # the suite's skip option (LFW's tree and a user's dataset alike)
SKIP_HINT = f"{SKIP_OPTION} (make: SKIP_BAD_IMAGES=1)"  # what the suite's corrupt-image errors name


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


class ReadableItems(Subset):
    """The items of a user's dataset that read, and the :class:`~lfw.data.screen.Screening` that left the rest out."""

    def __init__(self, dataset: Dataset, keep: list[int], screening: Screening) -> None:
        super().__init__(dataset, keep)
        self.screening = screening


def readable_items(dataset: Dataset, spec: str) -> ReadableItems:
    """Read every item of ``dataset`` once; keep those that do not raise (named by their files where the dataset
    names them, else by position)."""
    from lfw.suite.runner import dataset_files  # the suite's engine only where a dataset is screened

    size = len(dataset)  # type: ignore[arg-type]
    files = dataset_files(dataset)
    names = [f"item {i}" for i in range(size)]
    if len(files) == size > 1:
        common = os.path.commonpath(files)
        names = [os.path.relpath(f, common) for f in files]
    bad = find_unreadable(names, dataset.__getitem__, errors=(Exception,))
    if len(bad) == size:
        raise LFWError(f"--bench-dataset {spec!r}: no item can be read, e.g. {names[bad[0][0]]}: {bad[0][1]}")
    skipped = {i for i, _ in bad}
    return ReadableItems(dataset, [i for i in range(size) if i not in skipped],
                         Screening(spec, size, tuple((names[i], why) for i, why in bad)))


def user_dataset(spec: str, skip_unreadable: bool = False) -> Dataset:
    """The dataset ``spec``'s factory returns, checked: map-style, not empty, and two items that collate; with
    ``skip_unreadable``, its :func:`readable_items`."""
    factory = load_factory(spec)
    try:
        dataset = factory()
    except Exception as exc:  # the user's factory failed: one line, no traceback
        raise LFWError(f"--bench-dataset {spec!r}: the factory raised {one_line(exc)}") from None
    if isinstance(dataset, IterableDataset) or not isinstance(dataset, Dataset) or not hasattr(dataset, "__len__"):
        raise LFWError(f"--bench-dataset {spec!r}: the factory returned a {type(dataset).__name__}, not a map-style "
                       "torch.utils.data.Dataset with __len__ and __getitem__")
    if (size := len(dataset)) == 0:
        raise LFWError(f"--bench-dataset {spec!r}: the dataset is empty")
    if skip_unreadable:
        dataset = readable_items(dataset, spec)
        size = len(dataset)
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
