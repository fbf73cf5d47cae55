"""The loaders users switch to, each behind one contract so the suite measures them beside DataLoader.

One module per peer in :data:`MODULES`, each with ``DISTRIBUTIONS``, ``missing()`` (why it cannot run here, or None),
``DECODER`` (its decoder run alone, or None), ``build(spec, images)`` (a :class:`~lfw.peers.contract.PeerLoader`)
and, for its own format, ``convert(images)``. Importing this package imports no peer and no torch (Grain's spawned
workers import :mod:`lfw.peers.grain_map` through it)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from lfw.errors import check_choice

MODULES = {"spdl": "lfw.peers.spdl_loader", "dali": "lfw.peers.dali_loader", "grain": "lfw.peers.grain_loader",
           "webdataset": "lfw.peers.wds_loader", "litdata": "lfw.peers.litdata_loader"}
PEERS = tuple(MODULES)


def adapter(peer: str) -> ModuleType:
    """The adapter module of ``peer`` (importing it imports no peer library)."""
    return importlib.import_module(MODULES[check_choice("peer", peer, PEERS)])


def missing(peer: str) -> str | None:
    """Why ``peer`` cannot run here, in one line naming what is missing and how to get it; None when it can."""
    return adapter(peer).missing()


def distributions() -> tuple[str, ...]:
    """Every distribution the peers install (the ``peers`` extra)."""
    return tuple(d for peer in PEERS for d in adapter(peer).DISTRIBUTIONS)


def versions() -> dict[str, str]:
    """The installed version of each peer's distributions (``not installed`` where absent): machine_info."""
    from lfw.measure.machine import package_version

    return {name: package_version(name) for name in distributions()}


def conversion(peer: str, images: Any) -> dict[str, Any] | None:
    """The one-off conversion a peer's format needs (seconds, bytes, folder), first made now; None for loose files."""
    convert = getattr(adapter(peer), "convert", None)
    return convert(images) if convert is not None else None
