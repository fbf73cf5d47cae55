"""The few DataLoader internals the measurement needs, behind one small module.

torch keeps no public way to list a loader's worker processes or to stop them on demand; these read the
private attributes its iterators have carried since torch 1.x (``_workers``, ``_shutdown_workers``, a loader's
persistent ``_iterator``). Each function degrades to "nothing there" rather than failing when an attribute is
missing, so a torch release that renames one shows as missing worker figures, not as a crash mid-run.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import DataLoader


def persistent_iterator(loader: DataLoader) -> Any:
    """The iterator a loader with persistent workers keeps between epochs; None when it has none."""
    return getattr(loader, "_iterator", None)


def worker_pids(loader: DataLoader, iterator: Any = None) -> list[int]:
    """Pids of the live workers of ``iterator``, else of the loader's persistent iterator."""
    source = iterator if iterator is not None else persistent_iterator(loader)
    return [w.pid for w in getattr(source, "_workers", []) if w.pid is not None]


def shutdown_workers(iterator: Any) -> None:
    """Stop an iterator's workers now (a ``RuntimeError`` from a worker dying on its way out propagates)."""
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


def drop_persistent_workers(loader: DataLoader) -> None:
    """Stop a loader's persistent workers and forget its iterator: the next ``iter()`` starts fresh workers."""
    shutdown_workers(persistent_iterator(loader))
    loader._iterator = None
