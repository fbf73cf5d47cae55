"""The group runner: every selected case of a group and its ceilings, measured as one interleaved rotation.

Used by the pytest plugin and, through :func:`case_member`, the A/B pass server; :meth:`GroupRunner.members` says
which ceilings join the cases. Datasets come from :class:`Datasets`: LFW's presets, or a user's factory."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any

import torch
from torch.utils.data import Dataset, Subset, default_collate

from lfw import peers
from lfw.data.collate import collate_skipping
from lfw.data.dataset import LFWDataset
from lfw.data.index import INDEX_KINDS, path_at
from lfw.errors import LFWError, one_line
from lfw.measure.ceiling import CeilingSweep, ParallelCapacity, spread_indices
from lfw.measure.cpus import cpu_facts
from lfw.measure.loader_pass import LoaderPass, sleep_step
from lfw.measure.page_cache import evict, warm
from lfw.measure.resources import Limits, loader_need, shortfall
from lfw.measure.rotation import LoaderMember, Measured, Member, Rotation
from lfw.measure.stages import IndexCountingCollate, StageClock, TimedCollate, stage_clock_of
from lfw.peers.contract import PassImages, PeerSpec
from lfw.pipelines import Pipeline
from lfw.pipelines.device_decode import DeviceDecodeSweep, JpegByteBatches
from lfw.remote.bench import EndpointCeiling, EpochOrder, RemoteMember
from lfw.remote.dataset import S3LFW
from lfw.remote.endpoint import LocalS3
from lfw.results import keys as K
from lfw.suite import peers as P
from lfw.suite.matrix import Group, LoaderCase, ceiling_indices
from lfw.suite.profiles import Profile

ROTATION_SEED = 20261122
CEILING = "ceiling-"
MEMMAP_CEILING = "ceiling-memmap"
ENDPOINT_CEILING = "ceiling-endpoint"
CAPACITY = "capacity"
DEVICE_DECODE_CEILING = "ceiling-decode-device"


def own_decoder_member(pipeline: Pipeline) -> str:
    """The member holding a pipeline's own decoder's single-core rate: ``ceiling-memmap`` for the memmap,
    ``ceiling-decode-device`` for a decode on the device, else ``ceiling-decode-<decoder>[-r<size>][-float]``."""
    if pipeline.storage == "memmap":
        return MEMMAP_CEILING
    if pipeline.batching == "device":
        return DEVICE_DECODE_CEILING
    size = f"-r{pipeline.size}" if pipeline.size else ""
    return P.DECODE_CEILING + pipeline.decoder + size + ("-float" if pipeline.output == "float" else "")


OWN_DECODER_SWEEP = 3  # x the profile's ceiling images: a share's denominator, so a longer, steadier sweep


def _own_decoder_sweep(pipeline: Pipeline, root: Path, profile: Profile) -> CeilingSweep:
    files = Pipeline(pipeline.decoder, size=pipeline.size,
                     output="float" if pipeline.output == "float" else "uint8").dataset(root)
    images = min(len(files), profile.pass_images("uint8"))
    return CeilingSweep(files, spread_indices(images, OWN_DECODER_SWEEP * profile.ceiling_images))


def _peer_decoder_sweep(spec: PeerSpec, root: Path, profile: Profile) -> CeilingSweep:
    """The peer's decoder alone, one image at a time in this process: the suite's own sweep of that decoder, or the
    SPDL adapter's ``SpdlFiles`` for SPDL's."""
    adapter = peers.adapter(spec.peer)
    if adapter.DECODER == "spdl":
        images = profile.pass_images("uint8")
        return CeilingSweep(adapter.SpdlFiles(PassImages.first(root, images)),
                            spread_indices(images, OWN_DECODER_SWEEP * profile.ceiling_images))
    output = "float" if spec.output == "float" else "uint8"
    return _own_decoder_sweep(Pipeline(adapter.DECODER, output=output), root, profile)


class Datasets:
    """The datasets a session's cases read, each made once: one :class:`~lfw.data.dataset.LFWDataset` per (transform,
    index) over ``root``, or the factory's dataset (``user``) for every case."""

    def __init__(self, root: Path, user: Dataset | None = None) -> None:
        self.root = Path(root)
        self.user = user
        self._made: dict[tuple[str, str], Dataset] = {}

    def preset(self, transform: str = "none", index: str = "numpy") -> Dataset:
        if self.user is not None:
            return self.user
        if (transform, index) not in self._made:
            self._made[(transform, index)] = LFWDataset(self.root, transform=transform, index=index)
        return self._made[(transform, index)]

    def for_case(self, case: LoaderCase, profile: Profile) -> Dataset:
        """What ``case`` reads: its pipeline's dataset over the pass's images, else its preset."""
        if case.remote is not None:
            raise LFWError(f"{case.id} reads from the S3 endpoint the benchmarks start: run it with "
                           "pytest benchmarks -k remote (it has no A/B form)")
        if case.peer is not None:
            raise LFWError(f"{case.id} is another project's loader, a reference row: run it with make peers (it has no "
                           "A/B form)")
        if case.pipeline is not None:
            return case.pipeline.dataset(self.root, case.pass_images(profile), batch_size=case.config.batch_size)
        return self.preset(case.transform, case.index)


def dataset_files(dataset: Any) -> list[str]:
    """Every image file a dataset can read (through a ``Subset`` too): what warm and cold cache modes touch. Found in
    ``paths`` (also where files are not one per item), in ``samples`` (``ImageFolder``), else none."""
    if isinstance(dataset, Subset):
        base = dataset_files(dataset.dataset)
        if len(base) != len(dataset.dataset):  # type: ignore[arg-type]
            return base  # not one file per item: every file it reads
        return [base[i] for i in dataset.indices]
    index = getattr(dataset, "paths", None)
    if index is not None:
        return [path_at(index, i) for i in range(len(index))]
    samples = getattr(dataset, "samples", None)
    if isinstance(samples, list) and all(isinstance(s, tuple) and isinstance(s[0], str) for s in samples[:1]):
        return [s[0] for s in samples]
    return []


def case_pass(case: LoaderCase, dataset: Dataset, profile: Profile) -> LoaderPass:
    """The :class:`LoaderPass` that measures ``case`` over ``dataset`` (:meth:`Datasets.for_case`)."""
    data: Dataset = dataset
    if case.epoch_images and case.pipeline is None:
        data = Subset(dataset, range(min(case.pass_images(profile), len(dataset))))  # type: ignore[arg-type]
    clock = stage_clock_of(data)
    collate: Callable[[list[Any]], Any] | None = None
    skipping = getattr(data, "on_error", "raise") == "skip"
    if clock is not None:
        if case.config.num_workers > clock.rows - 2:
            raise LFWError(f"{case.id}: {case.config.num_workers} workers, but the dataset's stage clock has rows for "
                           f"{clock.rows - 2}; make it with a larger max_workers")
        if not getattr(data, "yields_batches", False):
            collate = TimedCollate(clock, collate_skipping if skipping else default_collate)
    elif case.count_index:  # the file index each loading process reads from, counted where it collates
        clock = StageClock(counts=INDEX_KINDS)
        collate = IndexCountingCollate(clock, data, collate_skipping if skipping else default_collate)
    # A remote case's epochs can be cut to the start-up wave for its warm-up (RemoteMember.warm_up).
    loader = case.config.build(data, collate, EpochOrder(data) if case.remote is not None else None)
    device = "cuda" if case.copy_to_cuda and torch.cuda.is_available() else None
    step = sleep_step(case.step_ms / 1e3) if case.step_ms is not None else None
    if case.pipeline is not None:
        step = case.pipeline.consumer_step()
    return LoaderPass(loader, case.batches(profile, len(loader)), device=device,
                      memory_interval_s=case.memory_interval_s, mark_start=case.mark_start, step=step, stages=clock)


def case_member(case: LoaderCase, datasets: Datasets, profile: Profile, *, cache_mode: str = "warm",
                warmed: set[tuple[str, ...]] | None = None) -> LoaderMember:
    """A rotation member measuring ``case``: warm cache (files read once, ahead) or cold (evicted each pass)."""
    runner = case_pass(case, datasets.for_case(case, profile), profile)
    paths = dataset_files(runner.loader.dataset)
    if cache_mode == "warm" and (warmed is None or tuple(paths) not in warmed):
        warm(paths)
        if warmed is not None:
            warmed.add(tuple(paths))
    return LoaderMember(runner, partial(evict, paths) if cache_mode == "cold" else None)


@dataclass
class GroupRotation:
    """A group's measured rotation: each member's rounds, and what the report needs to pair them; ``left_out``: cases
    that do not fit this machine's limits, with the one-line reason (a failed member has its :attr:`Measured.error`)."""

    measured: dict[str, Measured]
    info: dict[str, Any]
    shutdown_errors: dict[str, list[str]] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)  # per case, what was found beside its rounds
    unavailable: dict[str, str] = field(default_factory=dict)  # cases that cannot run here (a peer's library), why

    def ceiling(self, member: str) -> list[float]:
        """A ceiling member's rate in each round."""
        return [r.images_per_s for r in self.measured[member].results]

    def capacities(self, key: str = K.PARALLEL_CAPACITY) -> list[float] | None:
        """The cores the machine gave in each round (at N = the usable cores; ``K.PHYSICAL_CAPACITY``: at N = the
        physical cores), when the group measured them."""
        if CAPACITY not in self.measured or not all(key in r.extra for r in self.measured[CAPACITY].results):
            return None
        return [r.extra[key] for r in self.measured[CAPACITY].results]

    def per_core_rates(self) -> dict[str, float]:
        """Median single-core rate of each ceiling (``none``, ``uint8``, ``memmap``...): a machine fact."""
        return {key.removeprefix(CEILING): round(median(r.images_per_s for r in m.results), 2)
                for key, m in self.measured.items() if key.startswith(CEILING) and m.results}


@dataclass
class GroupRunner:
    """Runs a group's rotation: its selected cases and the ceilings they are paired with. ``endpoint`` gives the
    local S3 endpoint (remote cases only); ``progress(total_passes, description)`` is a progress-bar context."""

    profile: Profile
    datasets: Datasets
    cache_mode: str = "warm"
    cores: int = 1
    endpoint: Callable[[], LocalS3] | None = None
    progress: Callable[[int, str], Any] | None = None
    seed: int = ROTATION_SEED
    limits: Limits | None = None  # what the machine has; None: read when each group runs
    _warmed: set[tuple[str, ...]] = field(default_factory=set)

    def members(self, cases: Iterable[LoaderCase]) -> tuple[dict[str, Member], dict[str, str]]:
        """The rotation's members (the cases that fit, their ceilings) and the cases left out, with why."""
        cases = list(cases)
        members: dict[str, Member] = {c.id: self._member(c) for c in cases}
        left_out = self._admit(members, cases)
        cases = [c for c in cases if c.id not in left_out]
        for transform in dict.fromkeys(c.transform for c in cases if c.remote is None):
            dataset = self.datasets.preset(transform)
            members[CEILING + transform] = CeilingSweep(
                dataset, ceiling_indices(len(dataset), self.profile, transform))  # type: ignore[arg-type]
        if any(c.pipeline is not None for c in cases):  # decode pipelines: the decode-free ceiling too
            memmap = Pipeline(storage="memmap").dataset(self.datasets.root)
            members[MEMMAP_CEILING] = CeilingSweep(memmap, ceiling_indices(len(memmap), self.profile, "uint8"))
            for pipeline in dict.fromkeys(c.pipeline for c in cases if c.pipeline is not None):
                key = own_decoder_member(pipeline)
                if key == DEVICE_DECODE_CEILING and key not in members:  # the device decoder alone, on one pass
                    members[key] = DeviceDecodeSweep(JpegByteBatches(self.datasets.root,
                                                                     images=self.profile.pass_images("uint8")))
                if key not in members:  # each decoder's own single-core rate (own_decoder_share)
                    members[key] = _own_decoder_sweep(pipeline, self.datasets.root, self.profile)
        for spec in dict.fromkeys(c.peer for c in cases if c.peer is not None):
            alone = P.decoder_member(spec)
            if alone is not None and alone not in members:  # a peer's decoder alone (its own_decoder_share)
                members[alone] = _peer_decoder_sweep(spec, self.datasets.root, self.profile)
        if any(c.parallelism > 1 and c.remote is None for c in cases):  # cores the machine gives
            members[CAPACITY] = ParallelCapacity.of(cpu_facts(), self.cores)
        if any(c.remote is not None for c in cases):  # remote: the endpoint's own zero-latency ceiling
            s3 = self._endpoint()
            members[ENDPOINT_CEILING] = EndpointCeiling(
                S3LFW(s3.settings, images=max(c.pass_images(self.profile) for c in cases)), s3)
        return members, left_out

    def _admit(self, members: dict[str, Member], cases: list[LoaderCase]) -> dict[str, str]:
        """Leave out, in matrix order, each case whose loader does not fit beside those admitted (their held
        ``/dev/shm``, one pass in flight at a time); members left out are closed and removed."""
        limits = self.limits or Limits.read()
        held = in_flight = 0
        left_out: dict[str, str] = {}
        for case in cases:
            runner = getattr(members[case.id], "runner", None)
            if not isinstance(runner, LoaderPass) or case.peer is not None:  # a peer's engine is its own
                continue
            need = loader_need(runner.loader, pinned_copy=runner.device is not None)
            reason = shortfall(need, limits, held_beside=held, in_flight_beside=in_flight, alone=f"-k {case.id}")
            if reason is not None:
                left_out[case.id] = reason
                members.pop(case.id).close()
                continue
            held, in_flight = held + need.shm_held, max(in_flight, need.shm_in_flight)
        return left_out

    def run(self, group: Group, cases: Iterable[LoaderCase], *, timed: bool = True) -> GroupRotation:
        """Measure ``cases`` of ``group`` interleaved (``timed=False``: the fewest rounds, no warm-up: a smoke run)."""
        cases = list(cases)
        images = max((c.pass_images(self.profile) for c in cases), default=0)
        sizes = {c.peer.batch_size for c in cases if c.peer is not None}
        if sizes and (small := P.tree_too_small(self.datasets.root, images, sizes)) is not None:
            return GroupRotation({}, {"group": group.name, "members": []}, unavailable=dict.fromkeys(
                (c.id for c in cases), small))  # every case skips with the one line; nothing converted
        converted, not_converted = P.conversions([c.peer for c in cases if c.peer is not None], self.datasets.root,
                                                 max((c.pass_images(self.profile) for c in cases), default=0))
        # Peer cases that cannot run here (a library missing, a conversion failed), each with its one line.
        unavailable = {c.id: why for c in cases if c.peer is not None
                       and (why := P.not_measured(c.peer) or not_converted.get(c.peer.peer))}
        members, left_out = self.members(c for c in cases if c.id not in unavailable)
        rounds = group.rounds(self.profile) if timed else group.min_rounds
        ceilings = [k for k in members if k.startswith(CEILING)]
        warmup = group.warmup_rounds if timed or group.peer_group else 0
        rotation = Rotation(members, rounds, warmup, self.seed,
                            warm=ceilings if timed else (), isolate=[c.id for c in cases if c.id in members])
        with self.progress(rotation.passes, f"rotation {group.name}") if self.progress else nullcontext() as bar:
            measured = rotation.run(progress=(lambda _key: bar.update()) if bar is not None else None)
        info = {"group": group.name, "members": list(members), "rounds": rounds,
                "warmup_rounds": rotation.warmup_rounds, "seed": self.seed,
                "seconds": round(sum(m.seconds for m in measured.values()), 3)}  # the timed rounds, every member
        if CAPACITY in measured:  # what the capacity probe cost of them
            info["capacity_seconds"] = round(measured[CAPACITY].seconds, 3)
        errors = {key: m.runner.shutdown_errors for key, m in members.items()
                  if isinstance(m, LoaderMember) and m.runner.shutdown_errors}
        facts = {key: m.facts() for key, m in members.items() if isinstance(m, P.PeerMember)}
        for case in cases:
            if case.peer is not None and case.peer.peer in converted:
                facts.setdefault(case.id, {})[K.CONVERSION] = converted[case.peer.peer]
        if timed and group.peer_group:  # each case's memory alone, after the rotation
            for case in cases:
                if case.id in members and not measured[case.id].error:
                    facts.setdefault(case.id, {}).update(self._memory_alone(case, errors))
        return GroupRotation(measured, info, errors, left_out, facts, unavailable)

    def _memory_alone(self, case: LoaderCase, errors: dict[str, list[str]]) -> dict[str, Any]:
        """A fresh loader of ``case``: a cold and a warm epoch, memory sampled, nothing else alive. A failure is one
        line for this case (:data:`K.MEMORY_ALONE_ERROR`); what its close forced joins ``errors``."""
        runner: LoaderPass | None = None
        try:
            if case.peer is None:
                runner = case_pass(case, self.datasets.for_case(case, self.profile), self.profile)
                return P.memory_alone(runner, lambda: None)
            loader = P.build_peer(case.peer, self.datasets.root, case.pass_images(self.profile))
            runner = LoaderPass(loader, len(loader))  # type: ignore[arg-type]
            return P.memory_alone(runner, loader.close)
        except Exception as exc:
            return {K.MEMORY_ALONE_ERROR: f"memory alone not measured: {one_line(exc)}"}
        finally:
            if runner is not None and runner.shutdown_errors:
                errors.setdefault(case.id, []).extend(runner.shutdown_errors)

    def _member(self, case: LoaderCase) -> Member:
        if case.peer is not None:
            loader = P.build_peer(case.peer, self.datasets.root, case.pass_images(self.profile))
            return P.PeerMember(loader, lambda: P.reference_images(self.datasets.root))
        if case.remote is None:
            return case_member(case, self.datasets, self.profile, cache_mode=self.cache_mode, warmed=self._warmed)
        s3 = self._endpoint()
        data = S3LFW(s3.settings, case.remote.strategy, case.remote.concurrency, case.pass_images(self.profile))
        return RemoteMember(case_pass(case, data, self.profile), s3, case.remote)

    def _endpoint(self) -> LocalS3:
        if self.endpoint is None:
            raise LFWError("a remote case needs the local S3 endpoint; this runner was given none")
        return self.endpoint()
