"""Benchmark profiles: how much data and how many rounds each run spends (docs/methodology.md).

``smoke`` runs every case once on a tiny tree (``make test``); ``quick``, the default, the knobs the
recommendation and the quick gate rest on, held to a time budget; ``full`` the nightly matrix on full-size LFW.
A *layer* (``cost``, ``remote``, ``peers``) is a family of costly cases a profile runs always or when asked."""

from __future__ import annotations

from dataclasses import dataclass

from lfw.data import SYNTHETIC_SIZES as TREE  # images per profile name


@dataclass(frozen=True)
class Profile:
    name: str
    synthetic_images: int  # size of the synthetic tree when LFW_ROOT is not set
    rounds: int  # timed rounds per case
    images_per_pass: int  # images in one timed pass (batches = images_per_pass // batch_size, at least 2)
    ceiling_images: int  # images per sweep of the single-core ceiling measurement
    full_matrix: bool  # cross products (e.g. every worker count x every transform)
    large_index_size: int  # entries of the replicated index in the copy-on-access case
    leak_epochs: int  # epochs of the leak check
    cost_images: int  # images per preset counted under valgrind (one batch)
    layers: frozenset[str]  # layers this profile always runs (LAYERS); others join when asked for
    remote_limits: tuple[float, int] | None = None  # (most latency ms, most workers) of the remote cases run
    budgeted: bool = False  # held to a wall-time budget: cases marked not_quick wait for smoke and full

    def pass_images(self, transform: str = "none") -> int:
        """Images in one pass of ``transform``: ``images_per_pass`` scaled by the transform's cost."""
        return round(self.images_per_pass * PASS_SCALE.get(transform, 1.0))

    def batches_for(self, batch_size: int, transform: str = "none") -> int:
        """Batches per pass: about :meth:`pass_images` images, at least two."""
        return max(2, round(self.pass_images(transform) / batch_size))


# Cheap presets get longer passes and costly ones shorter, so every pass lasts roughly as long: long enough
# that start-up and the memory sampler are a small share, short enough for the time budget.
PASS_SCALE = {"none": 1.0, "simple": 1.0, "heavy": 0.25, "uint8": 2.0}


COST, REMOTE, PEERS = "cost", "remote", "peers"
LAYERS = (COST, REMOTE, PEERS)

PROFILES = {
    "smoke": Profile("smoke", TREE["smoke"], 1, 64, 16, False, 20_000, 3, 4, frozenset(LAYERS), remote_limits=(20, 2)),
    "quick": Profile("quick", TREE["quick"], 5, 512, 96, False, 1_000_000, 5, 16, frozenset(), budgeted=True),
    "full": Profile("full", TREE["full"], 7, 2_048, 300, True, 2_000_000, 8, 16, frozenset(LAYERS)),
}
