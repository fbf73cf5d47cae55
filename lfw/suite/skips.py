"""What a session runs and why it leaves a case out: one rule, :func:`skip_reason`, for every benchmark.

A case states what it needs (:class:`Needs`), a session what it has and chose (:class:`Session`). A reason is a
sentence a reader of the skip list understands; ``None`` means the case runs.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass, field
from typing import Any

from lfw.peers import versions as peer_versions
from lfw.suite.profiles import COST, DEVICE, PEERS, PROFILES, REMOTE, Profile

LAYER_HINTS = {
    COST: "the cost layer (instruction counts under valgrind) runs with --bench-cost",
    REMOTE: "the remote layer (a local S3 endpoint) runs with --bench-remote or -k remote (make remote)",
    PEERS: "the peers layer (the loaders users switch to) runs with --bench-peers or -k peers (make peers)",
    DEVICE: "the device layer (host-to-device copies, GPU decode, a fed GPU step) runs with -k device (make "
            "device-campaign)",
}
STAND_IN = "cpu stand-in"  # where a GPU member ran without a CUDA device, when the run allows it (--bench-stand-in)


def worker_cap(cores: int) -> int:
    """Most workers worth measuring: twice the usable cores (at least 2), so 4 on a 2-core machine."""
    return max(2, 2 * cores)


def layers_on(profile: Profile, *, cost: bool = False, remote: bool = False, peers: bool = False,
              keyword: str = "") -> frozenset[str]:
    """The layers a session runs: the profile's own, those asked for by flag, and one a ``-k`` names (the device
    layer only so, or in the device profile)."""
    asked = {COST: cost, REMOTE: remote or REMOTE in keyword, PEERS: peers or PEERS in keyword,
             DEVICE: DEVICE in keyword}
    return profile.layers | {layer for layer, on in asked.items() if on}


@dataclass(frozen=True)
class Session:
    """What a benchmark session can and chose to run."""

    profile: Profile
    layers: frozenset[str]
    cores: int
    cuda: bool
    user_dataset: str | None = None  # MODULE:FACTORY when the suite runs on a user's dataset
    cache_mode: str = "warm"  # page cache before each pass: warm (read once, ahead) or cold (evicted)
    skip_bad_images: bool = False  # unreadable images found first and left out (--bench-skip-bad-images)
    stand_in: bool = False  # without CUDA, GPU members run on the CPU stand-in, marked so (--bench-stand-in)
    workers: tuple[int, ...] | None = None  # the only worker counts measured (0 always); None: every count
    start_methods: tuple[str, ...] = field(default_factory=lambda: tuple(multiprocessing.get_all_start_methods()))

    def machine_facts(self) -> dict[str, Any]:
        """What the run's ``machine_info`` records of the session: the profile, the cache mode and, with the peers
        layer on, the versions of the loaders it measured."""
        peers = {"peers": peer_versions()} if PEERS in self.layers else {}
        return {**peers, "bench_profile": self.profile.name, "cache_mode": self.cache_mode}

    @property
    def gpu_device(self) -> str | None:
        """Where a GPU member runs: ``cuda``, ``cpu`` for the stand-in, or None where it cannot run."""
        return "cuda" if self.cuda else "cpu" if self.stand_in else None


@dataclass(frozen=True)
class Needs:
    """What a case needs to run. ``full_only``, ``not_quick`` and ``lfw_only`` carry the reason a profile or a
    user's dataset leaves the case out (None: no such limit)."""

    workers: int = 0
    layer: str | None = None
    full_only: str | None = None
    not_quick: str | None = None  # the quick profile's time budget leaves it out; smoke and full run it
    cuda: bool = False
    start_method: str | None = None
    lfw_only: str | None = None
    latency_ms: float | None = None  # a remote case's injected latency (the smoke profile runs the low ones)
    cores: int = 0  # usable cores a peer's knob needs (its threads or worker processes; not its helper threads)
    device: bool = False  # a GPU member: runs on CUDA, or on the CPU stand-in where the session allows it


def skip_reason(needs: Needs, session: Session) -> str | None:
    """Why ``session`` does not run a case that needs ``needs``, in words (what the machine cannot do first, then
    what the run chose to leave out); None when it runs."""
    profile = session.profile
    cap = worker_cap(session.cores)
    if needs.cores > session.cores:
        return (f"parallelism {needs.cores} exceeds the {session.cores} usable cores (a peer's knob, its threads or "
                "worker processes, is counted against them)")
    if needs.workers > cap:
        return (f"workers{needs.workers} capped: this machine measures up to {cap} workers "
                f"(2 x {session.cores} usable cores)")
    if needs.cuda and not session.cuda:
        return "needs a CUDA device to copy to; this machine has none (torch.cuda.is_available() is False)"
    if needs.device and session.gpu_device is None:
        return ("needs a CUDA device; this machine has none (torch.cuda.is_available() is False; --bench-stand-in "
                f"runs it on the {STAND_IN}, marked so)")
    if session.workers is not None and needs.workers not in session.workers:
        counts = ", ".join(map(str, session.workers))
        return f"workers{needs.workers}: this run measures workers {counts} ({profile.name} profile or --bench-workers)"
    if needs.start_method is not None and needs.start_method not in session.start_methods:
        return f"start method {needs.start_method} is not available on this platform"
    if needs.lfw_only and session.user_dataset:
        return f"dataset {session.user_dataset}: {needs.lfw_only}"
    if needs.layer is not None and needs.layer not in session.layers:
        names = [p.name for p in PROFILES.values() if needs.layer in p.layers]
        plural = "profiles" if len(names) > 1 else "profile"
        return f"{profile.name} profile: {LAYER_HINTS[needs.layer]}, and in the {' and '.join(names)} {plural}"
    if needs.full_only and not profile.full_matrix:
        return f"{profile.name} profile: {needs.full_only}"
    if needs.not_quick and profile.budgeted:
        return f"{profile.name} profile: {needs.not_quick}"
    if needs.latency_ms is not None and profile.remote_limits is not None:
        most_ms, most_workers = profile.remote_limits
        if needs.latency_ms > most_ms or needs.workers > most_workers:
            return f"{profile.name} profile: remote runs up to {most_ms:g} ms with up to {most_workers} workers"
    return None

