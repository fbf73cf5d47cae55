"""Benchmark profiles: how much data and how many rounds each run spends (docs/methodology.md).

``smoke`` runs every case once on a tiny tree (``make test``); ``quick``, the default, what the recommendation and
the quick gate rest on, held to a time budget; ``full`` the nightly matrix; ``device`` what a GPU machine runs
(docs/device.md). A *layer* (``cost``, ``remote``, ``peers``, ``device``) is a family of costly cases."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lfw.data import SYNTHETIC_SIZES as TREE  # images per profile name
from lfw.measure.resources import usable_cores


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
    keyword: str | None = None  # the cases it runs (a pytest -k) when the run names none; None: every case
    worker_counts: Callable[[int], tuple[int, ...]] | None = None  # the only counts it measures, from the usable cores

    def pass_images(self, transform: str = "none") -> int:
        """Images in one pass of ``transform``: ``images_per_pass`` scaled by the transform's cost."""
        return round(self.images_per_pass * PASS_SCALE.get(transform, 1.0))

    def batches_for(self, batch_size: int, transform: str = "none") -> int:
        """Batches per pass: about :meth:`pass_images` images, at least two."""
        return max(2, round(self.pass_images(transform) / batch_size))


# Cheap presets get longer passes and costly ones shorter, so every pass lasts roughly as long.
PASS_SCALE = {"none": 1.0, "simple": 1.0, "heavy": 0.25, "uint8": 2.0}

COST, REMOTE, PEERS, DEVICE = "cost", "remote", "peers", "device"
LAYERS = (COST, REMOTE, PEERS)  # the layers smoke and full run always; the device layer runs in the device profile


def device_workers(cores: int) -> tuple[int, ...]:
    """The device layer's worker counts: half and all of the usable cores (8 and 16 on 16 cores)."""
    return tuple(sorted({max(1, cores // 2), max(1, cores)}))


def device_worker_counts(cores: int) -> tuple[int, ...]:
    """The device profile's worker counts: 0 and 2 (the workers curve's start, the pin_memory cases) and
    :func:`device_workers`, so 0, 2, 8 and 16 on 16 cores and 0, 1 and 2 on 2."""
    return tuple(sorted({0, 2, *device_workers(cores)}))


def device_peers(cores: int) -> str:
    """The device profile's peers cases as a pytest ``-k``: every peer and DataLoader's slot batches at
    :func:`device_workers` counts (8 and 16 on 16 cores), Grain's multiprocessing left out (it spawns its workers for
    each epoch's iterator: seconds a pass, docs/peers.md)."""
    ends = " or ".join(f"{knob}{n}]" for n in device_workers(cores) for knob in ("t", "w"))
    return f"(test_peers and not processes and ({ends}))"


# What the device campaign's steps run, as pytest -k expressions (lfw/gate/device_campaign.py).
DEVICE_STEPS = {"pin": "test_pin_memory", "bandwidth": "test_device_copy", "feed": "test_device_feed",
                "decode": "test_device_decode", "workers": "(test_workers_transform and (none or uint8))",
                "peers": device_peers(usable_cores())}

PROFILES = {
    "smoke": Profile("smoke", TREE["smoke"], 1, 64, 16, False, 20_000, 3, 4, frozenset(LAYERS), remote_limits=(20, 2)),
    "quick": Profile("quick", TREE["quick"], 5, 512, 96, False, 1_000_000, 5, 16, frozenset(), budgeted=True),
    "full": Profile("full", TREE["full"], 7, 2_048, 300, True, 2_000_000, 8, 16, frozenset(LAYERS)),
    "device": Profile("device", TREE["full"], 3, 2_048, 300, False, 1_000_000, 5, 16, frozenset({DEVICE}),
                      keyword=" or ".join(DEVICE_STEPS.values()), worker_counts=device_worker_counts),
}
