"""Worker-side load times for a user's own DataLoader, without rebuilding it and without changing its batches.

:func:`instrument` changes two things on the loader for the length of one epoch and :meth:`Instrumented.restore`
puts both back:

- the dataset gets an instance attribute ``__getitems__`` that notes when a batch starts loading and then fetches
  it as before (the dataset's own ``__getitems__`` when its class has one, else item by item). PyTorch's map
  fetcher looks the attribute up on the object at every batch, so the note is taken in whichever process loads;
- ``loader.collate_fn`` (one of the attributes a DataLoader lets be set after construction) runs the user's
  collate and wraps the result with a :class:`~lfw.diagnose.events.LoadStamp` in a
  :class:`~lfw.diagnose.events.Stamped`, which survives the worker queue and the pin-memory thread;
  :func:`~lfw.diagnose.events.split_stamp` gives back exactly the user's batch.

Both are read when an iterator is made (forked workers inherit them, spawned ones receive them pickled), so
instrumenting must happen before ``iter(loader)``. What cannot be instrumented is said, not guessed
(:attr:`Instrumented.reason`): an iterable dataset (its fetcher never asks for a batch of indices), a loader
without automatic batching, persistent workers (they would keep the stamping collate after the watcher is
gone), a dataset that takes no attributes (``__slots__``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch.utils.data import DataLoader, IterableDataset

from lfw.diagnose.events import Stamped, StartedBatch, TimedCollate, fetch_started

_ATTR = "__getitems__"


class MarkedFetch:
    """The instance ``__getitems__``: notes the start, then fetches the batch as the dataset's class would."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __call__(self, indices: Sequence[int]) -> StartedBatch:
        own = getattr(type(self.dataset), _ATTR, None)
        return fetch_started(self.dataset, indices, functools.partial(own, self.dataset) if callable(own) else None)


@dataclass
class Instrumented:
    """What :func:`instrument` changed on a loader (nothing when ``reason`` says why not)."""

    loader: DataLoader
    reason: str = ""  # empty: instrumented
    collate: Callable[[list[Any]], Any] | None = None
    had_attr: bool = False
    saved_attr: Any = None

    def restore(self) -> None:
        """Put the loader's collate and the dataset's attributes back as they were (idempotent)."""
        if self.collate is None:  # not instrumented, or restored already
            return
        self.loader.collate_fn = self.collate
        dataset = self.loader.dataset
        if self.had_attr:
            setattr(dataset, _ATTR, self.saved_attr)
        else:
            vars(dataset).pop(_ATTR, None)
        self.collate = None


def why_not(loader: DataLoader) -> str:
    """Why this loader's loads cannot be stamped; empty when they can."""
    dataset = loader.dataset
    if isinstance(dataset, IterableDataset):
        return "an iterable dataset"
    if loader.batch_sampler is None:
        return "no automatic batching (batch_size=None)"
    if loader.persistent_workers:
        return "persistent workers (they would keep the stamping collate)"
    if not hasattr(dataset, "__dict__"):
        return f"{type(dataset).__name__} takes no attributes"
    return ""


def instrument(loader: DataLoader, enabled: bool = True) -> Instrumented:
    """Stamp every batch ``loader`` makes from now until :meth:`Instrumented.restore` (module docstring)."""
    reason = "instrumentation off" if not enabled else why_not(loader)
    if reason:
        return Instrumented(loader, reason)
    dataset = loader.dataset
    done = Instrumented(loader, collate=loader.collate_fn, had_attr=_ATTR in vars(dataset),
                        saved_attr=vars(dataset).get(_ATTR))
    setattr(dataset, _ATTR, MarkedFetch(dataset))
    loader.collate_fn = TimedCollate(loader.collate_fn, Stamped)  # the user's collate, then a Stamped
    return done
