"""A loader regression in memory, for measuring whether the gate catches it on another CPU model.

``python -m tools.gate_rates mem-worker|mem-index|mem-leak`` puts this file at the root of the checkout it gates and
that checkout first on ``PYTHONPATH``, so every Python process of the run, spawned DataLoader workers included,
imports it at start-up (``sitecustomize``). It imports nothing heavy: an import hook wraps torch's DataLoader worker
loop (``torch.utils.data._utils.worker._worker_loop``) when torch loads it, and the wrapper changes what each
worker holds, by ``LFW_INJECT_MEMORY``:

- ``worker``: every worker holds 150 MiB more (written bytes, so its own pages) from its start;
- ``index``: every worker copies its dataset's index (``dataset.index``, through a ``Subset``) before its first item,
  as a dataset that converts or copies its index per worker does;
- ``leak``: a worker with persistent workers keeps ``LFW_LEAK_BYTES_PER_ITEM`` (default 24 KiB) for every item it
  loads: about 6 MiB per epoch of the leak check's 256 images, spread over the workers.
"""

import copy
import importlib.abc
import importlib.machinery
import os
import sys

TARGET = "torch.utils.data._utils.worker"
WHAT = os.environ.get("LFW_INJECT_MEMORY", "")
HOLD_BYTES = 150 * 2**20
LEAK_BYTES = int(os.environ.get("LFW_LEAK_BYTES_PER_ITEM", str(24 * 1024)))
LEAK_MAX_ITEMS = 10_000  # the leak check's datasets: never the million-entry index of the memory-index group
_held = []
_original = None


class Leaky:
    """``dataset``, keeping ``LEAK_BYTES`` for every item it returns."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        _held.append(b"\x01" * LEAK_BYTES)
        return self.dataset[i]


def owner_of_index(dataset):
    """The dataset that holds ``index``, looking through ``Subset``; None when none does."""
    while not hasattr(dataset, "index") and hasattr(dataset, "dataset"):
        dataset = dataset.dataset
    return dataset if hasattr(dataset, "index") else None


def worker_loop(dataset_kind, dataset_holder, *args, **kwargs):
    """torch's worker loop, with the injected change applied in this worker first."""
    dataset = dataset_holder.pop()
    persistent = args[10] if len(args) > 10 else kwargs.get("persistent_workers", False)
    if WHAT == "worker":
        _held.append(b"\x01" * HOLD_BYTES)
    elif WHAT == "index" and (owner := owner_of_index(dataset)) is not None:
        owner.index = copy.deepcopy(owner.index)
    elif WHAT == "leak" and persistent and len(dataset) <= LEAK_MAX_ITEMS:
        dataset = Leaky(dataset)
    dataset_holder.append(dataset)
    if _original is None:  # torch's worker module not loaded yet in this process: loading it runs the hook
        __import__(TARGET)
    return _original(dataset_kind, dataset_holder, *args, **kwargs)


class _Hook(importlib.abc.MetaPathFinder):
    """Wraps the worker loop once torch's worker module has run."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            global _original
            run(module)
            _original = module._worker_loop
            module._worker_loop = worker_loop

        spec.loader.exec_module = exec_module
        return spec


if WHAT in ("worker", "index", "leak"):  # anything else (``none``): the control, nothing changed
    worker_loop.__module__ = __name__  # spawned workers find it here, in their own sitecustomize
    sys.meta_path.insert(0, _Hook())
