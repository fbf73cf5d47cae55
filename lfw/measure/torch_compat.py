"""The few DataLoader internals the measurement needs, behind one small module.

torch has no public way to list or stop a loader's workers, so these read private attributes (``_workers``,
``_shutdown_workers``, ``_iterator``, ``_tasks_outstanding``, ``_prefetch_factor``, ``_popen``); each degrades to
"nothing there" when one is missing, so a torch release that renames one shows as missing worker figures.

A loader that is not a DataLoader (:class:`lfw.pipelines.nodes.NodesLoader`, a peer) offers two hooks instead:
``loader.worker_pids(iterator)``, the pids of the worker *processes* it started serving ``iterator`` (with
``iterator=None``: those alive between passes), whose CPU time and USS ``LoaderPass`` counts; and
``iterator.close()``, which stops them now and raises ``RuntimeError`` afterwards when something had to be forced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from torch.utils.data import DataLoader


class MeasuredLoader(Protocol):
    """What :class:`~lfw.measure.LoaderPass` reads of a loader (a ``DataLoader``, or one with the hooks above)."""

    num_workers: int
    persistent_workers: bool
    timeout: float

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


def worker_pids(loader: DataLoader | MeasuredLoader, iterator: Any = None) -> list[int]:
    """Pids of the live workers of ``iterator``, else of the loader's persistent iterator (or the loader's hook)."""
    hook = getattr(loader, "worker_pids", None)
    if callable(hook):
        return [int(pid) for pid in hook(iterator)]
    source = iterator if iterator is not None else getattr(loader, "_iterator", None)  # persistent workers' own
    return [w.pid for w in getattr(source, "_workers", []) if w.pid is not None]


def worker_start_method(iterator: Any) -> str | None:
    """How the live workers of ``iterator`` were started (``fork``, ``spawn``, ``forkserver``), read from their
    processes; None without workers, for a hooked loader, or when they disagree or do not say."""
    methods = {getattr(getattr(w, "_popen", None), "method", None) for w in getattr(iterator, "_workers", [])}
    methods.discard(None)
    return str(methods.pop()) if len(methods) == 1 else None


def iterator_prefetch_factor(iterator: Any) -> int | None:
    """A multi-process DataLoader iterator's ``_prefetch_factor`` (batches per worker it keeps asked for), else None."""
    factor = getattr(iterator, "_prefetch_factor", None) if getattr(iterator, "_workers", None) else None
    return int(factor) if isinstance(factor, int) else None


def requests_outstanding(iterator: Any) -> int | None:
    """Batches a multi-process DataLoader iterator has asked for and not yet returned (right after ``iter()``: what
    it primed); None for a single-process iterator or a loader that is not a DataLoader."""
    outstanding = getattr(iterator, "_tasks_outstanding", None)
    return int(outstanding) if isinstance(outstanding, int) else None


def shutdown_workers(iterator: Any) -> None:
    """Stop an iterator's workers now (``_shutdown_workers``, else ``close()``); a ``RuntimeError`` propagates."""
    shutdown = getattr(iterator, "_shutdown_workers", None) or getattr(iterator, "close", None)
    if shutdown is not None:
        shutdown()


def drop_persistent_workers(loader: DataLoader) -> None:
    """Stop a loader's persistent workers and forget its iterator: the next ``iter()`` starts fresh workers."""
    shutdown_workers(getattr(loader, "_iterator", None))
    loader._iterator = None
