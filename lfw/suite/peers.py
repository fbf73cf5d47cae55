"""The peers group's side of the engine: a peer case as a rotation member, its decoder alone, its memory alone.

Before the rotation, untimed: each peer's one-off conversion (:func:`conversions`); in it, a :class:`PeerMember`
per case (its cold first epoch the warm-up round, the pixel check untimed before the first timed pass); after it,
each case's memory alone (:func:`memory_alone`), with no other member's process alive."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lfw import peers
from lfw.data import SYNTHETIC_SIZES
from lfw.errors import LFWError, one_line
from lfw.measure.loader_pass import LoaderPass, PassResult
from lfw.measure.rotation import LoaderMember
from lfw.peers.check import PixelCheck, check_peer
from lfw.peers.contract import PassImages, PeerLoader, PeerSpec
from lfw.results import keys as K

DECODE_CEILING = "ceiling-decode-"  # a decoder alone, one image at a time: ceiling-decode-<decoder>[...]
MEMORY_INTERVAL_S = 0.25  # passes last a fraction of a second: the dense setting the overhead group measures


def not_measured(spec: PeerSpec) -> str | None:
    """Why the peer cannot run here, in one line saying what is missing and how to get it; None when it can."""
    why = peers.missing(spec.peer)
    return None if why is None else f"{spec.peer} not measured: {why}"


def tree_too_small(root: Path, images: int, batch_sizes: set[int]) -> str | None:
    """Why the tree at ``root`` cannot give the peers group's pass (the first ``images`` images, all where it holds
    fewer) in whole batches of each of ``batch_sizes``: one line naming the need and what the tree holds; None when
    it can."""
    from lfw.data.dataset import scan_images

    held = len(scan_images(root).paths)
    reads = min(images, held)
    if reads > 0 and not any(reads % size for size in batch_sizes):
        return None
    return (f"the peers group reads {reads} images a pass in whole batches of {max(batch_sizes)} (the same for every "
            f"case) and the tree at {root} holds {held}: use a larger one (the smoke profile's synthetic tree: "
            f"{SYNTHETIC_SIZES['smoke']})")


def build_peer(spec: PeerSpec, root: Path, images: int) -> PeerLoader:
    """The peer's loader over the first ``images`` images of ``root``; a peer that cannot run here is one line."""
    if (why := not_measured(spec)) is not None:
        raise LFWError(why)
    return peers.adapter(spec.peer).build(spec, PassImages.first(root, images))


def reference_images(root: Path) -> np.ndarray:
    """The reference decoder's images of the tree (Pillow, decoded once into the cache), read through a memmap."""
    from lfw.pipelines.storage import decoded_memmap

    return np.load(decoded_memmap(root)[0], mmap_mode="r")


class PeerMember(LoaderMember):
    """A peer case in the rotation: its first pass is its cold first epoch; the pixel check runs before its second."""

    def __init__(self, loader: PeerLoader, reference: Callable[[], np.ndarray]) -> None:
        super().__init__(LoaderPass(loader, len(loader), memory_interval_s=None),  # type: ignore[arg-type]
                         before_pass=loader.note_processes)
        self.loader = loader
        self.reference = reference
        self.check: PixelCheck | None = None

    def measure(self) -> PassResult:
        if self.runner.results and self.check is None:
            self.loader.note_processes()
            self.check = check_peer(self.loader, self.reference())
            self.loader.worker_pids(True)  # processes the check's epoch started are the peer's too
        return super().measure()

    def facts(self) -> dict[str, Any]:
        check = {K.PIXEL_CHECK: self.check.as_dict()} if self.check is not None else {}
        return {K.PEER_LAYOUT: self.loader.layout, **check}

    def close(self) -> None:
        """Stop the pass and the peer; what had to be forced is recorded as the case's shutdown errors, never raised."""
        try:
            super().close()
        finally:
            try:
                self.loader.close()
            except RuntimeError as exc:
                self.runner.shutdown_errors.append(one_line(exc))


def decoder_member(spec: PeerSpec) -> str | None:
    """The rotation member holding the peer's own decoder's single-core rate, or None where it cannot run alone."""
    if (decoder := peers.adapter(spec.peer).DECODER) is None:
        return None
    return DECODE_CEILING + decoder + ("-float" if spec.output == "float" else "")


def conversions(specs: list[PeerSpec], root: Path, images: int) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each peer's one-off conversion (made on first use, untimed), by peer; and the one line of each that failed
    (that peer's cases are not measured, the others are)."""
    done: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for spec in specs:
        if spec.peer not in done and spec.peer not in failed and peers.missing(spec.peer) is None:
            try:
                found = peers.conversion(spec.peer, PassImages.first(root, images))
            except Exception as exc:  # the peer's own library failed: one line, and the group goes on
                failed[spec.peer] = f"{spec.peer} not measured: conversion failed: {one_line(exc)}"
                continue
            if found is not None:
                done[spec.peer] = found
    return done, failed


def memory_alone(runner: LoaderPass, close: Callable[[], None]) -> dict[str, Any]:
    """A cold and a warm epoch of ``runner`` with the tree's memory sampled, nothing else running; then ``close``.
    Returns the tree's PSS and USS after the warm epoch and what the loader added since before the cold one (MiB);
    what ``close`` forced joins ``runner.shutdown_errors``; a failed epoch raises."""
    runner.memory_interval_s, runner.mark_start = MEMORY_INTERVAL_S, True
    try:
        for _ in range(2):
            runner.setup()
            runner.run()
            runner.finish()
    finally:
        try:
            runner.close(stop_workers=True)
        finally:
            try:
                close()
            except RuntimeError as exc:
                runner.shutdown_errors.append(one_line(exc))
    cold, warm = runner.results[0].memory, runner.results[-1].memory
    if cold is None or warm is None:
        return {}
    return {K.PEER_PSS_MIB: round(warm.end.pss, 1), K.PEER_USS_MIB: round(warm.end.uss, 1),
            K.PEER_PSS_ADDED_MIB: round(warm.end.pss - cold.before.pss, 1),
            K.PEER_USS_ADDED_MIB: round(warm.end.uss - cold.before.uss, 1)}
