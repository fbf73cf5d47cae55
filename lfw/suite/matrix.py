"""The loader benchmark matrix as data: every configuration the suite compares, by group.

One table serves the pytest benchmarks, the group runner (:mod:`lfw.suite.runner`) and the A/B pass server, so a
case (its group and id, :func:`lfw.results.case_key`) means the same DataLoader everywhere. Groups that parametrize
their own cases (``cost``, ``leak``, ``memory-index``, ``startup``, ``thread-map``) are not here (no rotation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from lfw.errors import LFWError
from lfw.measure.ceiling import spread_indices
from lfw.measure.loader_config import START_METHODS, LoaderConfig
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S, STEADY_MIN_BATCHES
from lfw.measure.resources import usable_cores
from lfw.peers.contract import PeerSpec
from lfw.pipelines import Pipeline
from lfw.remote.bench import CONCURRENCY, RemoteCase
from lfw.results import knobs as KN
from lfw.results.knobs import Knob
from lfw.suite.profiles import DEVICE, PEERS, REMOTE, Profile, device_workers
from lfw.suite.skips import Needs

WORKER_COUNTS = (0, 1, 2, 4, 8, 12, 16)  # counts above twice the usable cores are narrowed
TRANSFORMS = ("none", "simple", "heavy", "uint8")
# Why a user's own dataset (--bench-dataset) leaves a case out: it runs the knob groups over the factory's items.
LFW_PRESETS = "the transform presets are LFW's; your factory's items run as they are (the -none cases)"
LFW_FILES = "needs LFW's own files and index; your dataset runs the knob groups"
QUICK_BUDGET = "kept out of its time budget (neither the recommendation nor the quick gate rests on it)"


@dataclass(frozen=True)
class LoaderCase:
    """One configuration of one group: the DataLoader (``config``), the data it reads and what one pass covers.

    ``epoch_images``: each pass is one epoch over :meth:`pass_images` images. ``step_ms``: a sleeping training
    step per batch. ``copy_to_cuda``: the pass includes the host-to-device copy. ``pipeline``: reads through a decode
    pipeline (``transform`` then only names its ceiling). ``remote``: reads the local S3 endpoint. ``peer``: another
    project's loader (``config`` only describes it). ``lfw_only``: why a user's own dataset does not run it.
    ``count_index``: each loading process counts the file index it reads from."""

    group: str
    id: str
    params: Mapping[str, Any]
    config: LoaderConfig
    transform: str = "none"
    index: str = "numpy"
    epoch_images: bool = False
    max_batches: int | None = None
    step_ms: float | None = None
    memory_interval_s: float | None = DEFAULT_MEMORY_INTERVAL_S
    mark_start: bool = False
    copy_to_cuda: bool = False
    needs_cuda: bool = False
    full_only: str | None = None  # why only the full profile runs the case (None: every profile runs it)
    not_quick: str | None = None  # why the quick profile (its time budget) leaves out a case smoke and full run
    pipeline: Pipeline | None = None
    remote: RemoteCase | None = None
    images: int | None = None  # images per pass when the case sets its own (remote: steady-state passes)
    lfw_only: str | None = None
    count_index: bool = False
    peer: PeerSpec | None = None
    layer: str | None = None  # the layer the case belongs to besides its own kind (the peers group's references)
    on_device: bool = False  # its step runs on the accelerator (a GPU decode), or on the CPU stand-in where allowed

    def needs(self) -> Needs:
        """What the case needs to run (:func:`lfw.suite.skips.skip_reason` decides against a session)."""
        layer = REMOTE if self.remote is not None else self.layer
        return Needs(workers=self.config.num_workers, layer=layer, cores=self.peer.parallelism if self.peer else 0,
                     full_only=self.full_only, not_quick=self.not_quick, cuda=self.needs_cuda,
                     start_method=self.config.start_method, device=self.on_device,
                     lfw_only=self.lfw_only, latency_ms=self.remote.latency_ms if self.remote is not None else None)

    @property
    def parallelism(self) -> int:
        """The processes or threads the case's work runs in (the most cores
        :func:`lfw.suite.case_record.work_limit` counts): a peer's knob; a decode on the device, one; else loading
        processes (or the main process) x decode threads."""
        if self.peer is not None:
            return self.peer.parallelism
        if self.on_device:  # one device decodes, whatever reads the bytes
            return 1
        threads = self.pipeline.threads if self.pipeline is not None else 0
        return max(self.config.num_workers, 1) * max(threads, 1)

    def pass_images(self, profile: Profile) -> int:
        """Images in one pass: the case's own count, else the profile's pass length scaled by the transform's cost."""
        if self.images is not None:  # whole batches, no more than the profile's synthetic tree holds
            whole = profile.synthetic_images // self.config.batch_size * self.config.batch_size
            return min(self.images, max(whole, self.config.batch_size))
        return profile.pass_images(self.transform)

    def batches(self, profile: Profile, loader_batches: int) -> int:
        """Batches per pass: a whole epoch, or the profile's pass length (capped), never beyond the loader."""
        if self.epoch_images:
            return loader_batches
        wanted = profile.batches_for(self.config.batch_size, self.transform)
        return min(wanted, loader_batches, wanted if self.max_batches is None else self.max_batches)


@dataclass(frozen=True)
class Group:
    """A benchmark group: the knobs it varies (``argnames``, in test order) and its cases. ``rounds_quick``: rounds
    in the quick and smoke profiles; ``warmup_rounds``: untimed rounds first (worker start-up, CUDA start-up);
    ``min_rounds``: the fewest rounds any run gives it (two epochs for persistent workers)."""

    name: str
    argnames: tuple[str, ...]
    cases: tuple[LoaderCase, ...]
    rounds_quick: int | None = None
    warmup_rounds: int = 0
    min_rounds: int = 1
    peer_group: bool = False  # its warm-up round runs untimed too; memory alone after a timed one (lfw.suite.peers)

    @property
    def argvalues(self) -> list[tuple[Any, ...]]:
        return [tuple(c.params[a] for a in self.argnames) for c in self.cases]

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.cases]

    def case_for(self, params: Mapping[str, Any]) -> LoaderCase:
        """The case whose params are ``params`` (what pytest passes the test)."""
        for case in self.cases:
            if all(case.params[a] == params.get(a) for a in self.argnames):
                return case
        raise LFWError(f"group {self.name} has no case with params {dict(params)}")

    def case(self, case_id: str) -> LoaderCase:
        if (found := next((c for c in self.cases if c.id == case_id), None)) is None:
            raise LFWError(f"group {self.name} has no case {case_id!r}")
        return found

    def rounds(self, profile: Profile) -> int:
        if self.rounds_quick is not None and not profile.full_matrix:
            return max(self.min_rounds, min(self.rounds_quick, profile.rounds))
        return max(self.min_rounds, profile.rounds)


def _workers_transform() -> Group:
    cases = []
    for transform, workers in product(TRANSFORMS, WORKER_COUNTS):
        quick = transform in ("none", "uint8") or workers in (0, 2)
        knobs = {KN.NUM_WORKERS.key: workers, KN.TRANSFORM.key: transform}
        cases.append(LoaderCase(
            "workers-transform", f"workers{workers}-{transform}", knobs,
            LoaderConfig(batch_size=64, num_workers=workers), transform,
            full_only=None if quick else f"{transform} runs at workers0 and workers2 only (full crosses all)",
            lfw_only=None if transform == "none" else LFW_PRESETS))
    return Group("workers-transform", (KN.NUM_WORKERS.key, KN.TRANSFORM.key), tuple(cases))


def _one_knob(group: str, knob: Knob[Any], values: Sequence[Any], ids: Sequence[str],
              per_case: Mapping[str, Mapping[str, Any]] | None = None, *, rounds_quick: int | None = None,
              warmup_rounds: int = 0, min_rounds: int = 1, **common: Any) -> Group:
    """Two workers, batch 64, preset ``none``, and one LoaderConfig knob set to each value; ``common`` and a case's
    ``per_case`` entry are its other :class:`LoaderCase` fields."""
    return Group(group, (knob.key,), tuple(
        LoaderCase(group, case_id, {knob.key: value},
                   LoaderConfig(**{"batch_size": 64, "num_workers": 2, knob.key: value}),
                   **{**common, **(per_case or {}).get(case_id, {})})
        for value, case_id in zip(values, ids, strict=True)), rounds_quick, warmup_rounds, min_rounds)


def _decoders() -> Group:
    """Decode pipelines against the machine's ceilings (docs/decoders.md): one epoch per pass, persistent workers,
    batch 64, uint8 unless named, memory not sampled."""
    t2, draft = 2, 112
    cases = (  # id, pipeline, workers, in the quick profile
        ("pil-w0", Pipeline("pil"), 0, True),
        ("pil-w2", Pipeline("pil"), 2, True),
        ("pil-t2", Pipeline("pil", threads=t2), 0, False),
        ("tvio-w0", Pipeline("tvio"), 0, False),
        ("tvio-w2", Pipeline("tvio"), 2, False),
        ("tvio-t2", Pipeline("tvio", threads=t2), 0, False),
        ("simplejpeg-w0", Pipeline("simplejpeg"), 0, True),
        ("simplejpeg-w2", Pipeline("simplejpeg"), 2, True),
        ("simplejpeg-t2", Pipeline("simplejpeg", threads=t2), 0, True),
        ("simplejpeg-w2t2", Pipeline("simplejpeg", threads=t2), 2, False),
        ("pil-tar-w2", Pipeline("pil", "tar"), 2, False),
        ("memmap-w0", Pipeline("pil", "memmap"), 0, True),
        ("memmap-w2", Pipeline("pil", "memmap"), 2, True),
        ("simplejpeg-slots-w0", Pipeline("simplejpeg", batching="slots"), 0, False),
        ("simplejpeg-slots-w2", Pipeline("simplejpeg", batching="slots"), 2, True),
        ("pil-slots-w2", Pipeline("pil", batching="slots"), 2, False),
        ("pil-r112-w2", Pipeline("pil", size=draft), 2, False),
        ("pil-draft-r112-w2", Pipeline("pil-draft", size=draft), 2, False),
        ("simplejpeg-t2-float", Pipeline("simplejpeg", threads=t2, output="float"), 0, False),
        ("simplejpeg-t2-deferred", Pipeline("simplejpeg", threads=t2, output="deferred"), 0, False),
    )
    return Group("decoders", (KN.PIPELINE.key,), tuple(
        LoaderCase("decoders", case_id, {KN.PIPELINE.key: case_id},
                   LoaderConfig(batch_size=64, num_workers=workers, persistent_workers=workers > 0), "uint8",
                   epoch_images=True, pipeline=pipeline, memory_interval_s=None, lfw_only=LFW_FILES,
                   full_only=None if quick else "the quick profile runs the decoders' headline cases only")
        for case_id, pipeline, workers, quick in cases), rounds_quick=5, warmup_rounds=1)


DEVICE_PIPELINES = (("pil", Pipeline("pil")), ("tvio", Pipeline("tvio")), ("simplejpeg", Pipeline("simplejpeg")),
                    ("simplejpeg-slots", Pipeline("simplejpeg", batching="slots")))
GPU_DECODE = Pipeline("tvio", batching="device")


def _device_decode(counts: tuple[int, ...]) -> Group:
    """The device layer's decode rotation (docs/device.md): the CPU decode pipelines and slot batches at ``counts``
    workers (:func:`~lfw.suite.profiles.device_workers`: half and all of the usable cores) beside the GPU decode
    (workers read the bytes, the main process decodes each batch on the device) at those counts and 0. One epoch per
    pass, uint8; workers not persistent, so one configuration's are alive at a time."""
    cases = [(f"{name}-w{w}", pipeline, w) for name, pipeline in DEVICE_PIPELINES for w in counts]
    cases += [(f"gpu-decode-w{w}", GPU_DECODE, w) for w in (0, *counts)]
    return Group("device-decode", (KN.PIPELINE.key,), tuple(
        LoaderCase("device-decode", case_id, {KN.PIPELINE.key: case_id}, LoaderConfig(batch_size=64, num_workers=w),
                   "uint8", epoch_images=True, pipeline=pipeline, memory_interval_s=None, lfw_only=LFW_FILES,
                   layer=DEVICE, on_device=pipeline.batching == "device")
        for case_id, pipeline, w in cases), rounds_quick=3, warmup_rounds=1)


REMOTE_LATENCIES_MS = (0, 5, 20, 50, 100)  # quick judges 0 and 100 (REMOTE_QUICK); 50 runs in full only
REMOTE_WORKERS = (0, 2, 4)
REMOTE_BATCH = 32
ENDPOINT_ESTIMATE = 300.0  # images/s the local endpoint serves at zero latency: only caps the slow cases' passes
REMOTE_PASS_CAP_S = 8.0  # a steady pass that Little's law says would take longer is the start-up wave alone
# The quick profile's remote cases (strategy, workers) per latency: the best strategy and the serial control.
REMOTE_QUICK = {0: {("batch", 2), ("batch", 4), ("serial", 2)},
                100: {("batch", 2), ("batch", 4), ("threads", 4), ("serial", 2)}}
REMOTE_NOT_QUICK = ("its time budget holds steady-state passes for the best strategy per latency and its serial "
                    "control (docs/remote.md); smoke and full run every remote case")


def remote_pass_batches(case: RemoteCase, workers: int) -> int:
    """Batches per pass of a remote case: the start-up wave (a batch per loading process) and
    :data:`~lfw.measure.loader_pass.STEADY_MIN_BATCHES` after it; where Little's law says that would take more than
    :data:`REMOTE_PASS_CAP_S`, the wave alone (the case then records why it has no steady rate; docs/remote.md)."""
    wave = max(workers, 1)
    rate = min(ENDPOINT_ESTIMATE, case.in_flight_limit(workers) / (case.latency_ms / 1e3 + 0.01))
    affordable = int(rate * REMOTE_PASS_CAP_S / REMOTE_BATCH)
    return wave + STEADY_MIN_BATCHES if affordable >= wave + STEADY_MIN_BATCHES else wave


def _remote() -> Group:
    """Strategy x injected latency x workers against the local S3 endpoint: persistent workers, one epoch per pass of
    :func:`remote_pass_batches`, no memory sampling."""
    cases = []
    for strategy, latency, workers in product(CONCURRENCY, REMOTE_LATENCIES_MS, REMOTE_WORKERS):
        spec = RemoteCase(strategy, latency)
        quick = (strategy, workers) in REMOTE_QUICK.get(latency, set())
        cases.append(LoaderCase(
            "remote", f"{strategy}-{latency}ms-w{workers}",
            {KN.STRATEGY.key: strategy, KN.LATENCY_MS.key: latency, KN.NUM_WORKERS.key: workers},
            LoaderConfig(batch_size=REMOTE_BATCH, num_workers=workers, persistent_workers=workers > 0),
            "uint8", epoch_images=True, remote=spec, images=REMOTE_BATCH * remote_pass_batches(spec, workers),
            memory_interval_s=None, lfw_only=LFW_FILES, full_only="50 ms runs in full only" if latency == 50 else None,
            not_quick=None if quick else REMOTE_NOT_QUICK))
    return Group("remote", (KN.STRATEGY.key, KN.LATENCY_MS.key, KN.NUM_WORKERS.key),
                 tuple(cases), rounds_quick=3, warmup_rounds=1)


BATCH_SIZES = (16, 64, 256, 512)
PREFETCH = (1, 2, 4, 8)  # 1: 3 batches in flight with 2 workers, not 5: what fits a small /dev/shm
STEP_MS = (0, 20, 50)
SAMPLING = {"sampling-off": (None, False), "sampling-default": (DEFAULT_MEMORY_INTERVAL_S, False),
            "sampling-dense": (0.25, True)}
DATA_WAIT_MAX_BATCHES = 8  # 8 x 50 ms of sleep per pass already

PEER_PARALLELISM = (1, 2, 4, 8, 16)  # each peer's knob, swept up to the usable cores (the rest narrowed)
# Peers (name, knob, mode) and the DataLoader references they run beside: the decoders group's two best
# pipelines, and for the float variant the fastest DataLoader pipeline that can normalize (slot batches cannot).
PEER_KINDS = (("spdl", "threads", ""), ("dali", "threads", ""), ("grain", "threads", "threads"),
              ("grain", "workers", "processes"), ("webdataset", "workers", ""), ("litdata", "workers", ""))
PEER_FLOATS = (PeerSpec("dali", 2), PeerSpec("grain", 2, mode="threads"))  # the two fastest peers (docs/peers.md)
SLOTS = Pipeline("simplejpeg", batching="slots")
PEER_REFERENCES = (("dataloader-simplejpeg-slots-w2", SLOTS, 2), ("dataloader-pil-w2", Pipeline("pil"), 2),
                   ("dataloader-simplejpeg-w2-float", Pipeline("simplejpeg", output="float"), 2))
GRAIN_PROCESSES_QUICK = 2  # the one Grain multiprocessing case the quick profile runs: its passes cost seconds each
GRAIN_PROCESSES_NOT_QUICK = ("Grain's multiprocessing prefetch spawns its workers for each epoch's iterator (its "
                             f"w{GRAIN_PROCESSES_QUICK} case's seconds per pass: docs/runs/peers.txt): quick measures "
                             f"w{GRAIN_PROCESSES_QUICK}, smoke and full the rest")


def _peers(counts: tuple[int, ...]) -> Group:
    """The peers (:mod:`lfw.peers`) beside DataLoader's best pipelines in one rotation with the decoder ceilings
    (docs/peers.md); memory measured alone afterwards (:mod:`lfw.suite.peers`). The device layer's ``counts``
    (:func:`~lfw.suite.profiles.device_workers`) join each peer's sweep, and those above 2 add slot batches at that
    many workers (8 and 16 on 16 cores, none on 2): DataLoader's best where the peers run at scale (docs/device.md)."""
    references = [*PEER_REFERENCES, *((f"dataloader-simplejpeg-slots-w{w}", SLOTS, w) for w in counts if w > 2)]
    cases = [LoaderCase("peers", case_id, {KN.PIPELINE.key: case_id, KN.PEER.key: "dataloader"},
                        LoaderConfig(batch_size=64, num_workers=w, persistent_workers=True), "uint8", epoch_images=True,
                        pipeline=pipeline, memory_interval_s=None, lfw_only=LFW_FILES, layer=PEERS)
             for case_id, pipeline, w in references]
    parallelism = sorted({*PEER_PARALLELISM, *counts})
    specs = [PeerSpec(peer, n, knob, mode=mode) for peer, knob, mode in PEER_KINDS for n in parallelism]
    for spec in [*specs, *(PeerSpec(s.peer, s.parallelism, s.knob, "float", mode=s.mode) for s in PEER_FLOATS)]:
        processes = spec.parallelism if spec.knob == "workers" else 0
        slow = spec.mode == "processes" and spec.parallelism != GRAIN_PROCESSES_QUICK
        cases.append(LoaderCase(
            "peers", spec.label, {KN.PIPELINE.key: spec.label, KN.PEER.key: spec.peer}, LoaderConfig(
                batch_size=spec.batch_size, num_workers=processes, persistent_workers=spec.peer in ("webdataset",
                                                                                                  "litdata")),
            "uint8", epoch_images=True, memory_interval_s=None, lfw_only=LFW_FILES, peer=spec, layer=PEERS,
            not_quick=GRAIN_PROCESSES_NOT_QUICK if slow else None))
    return Group("peers", (KN.PIPELINE.key,), tuple(cases), rounds_quick=5, warmup_rounds=1, peer_group=True)


GROUPS: dict[str, Group] = {g.name: g for g in (
    _workers_transform(),
    _one_knob("batch-size", KN.BATCH_SIZE, BATCH_SIZES, [f"bs{b}" for b in BATCH_SIZES],
              {"bs512": {"full_only": "bs512 (two 366 MiB float batches per pass) runs in full only"}}, rounds_quick=3),
    _one_knob("pin-memory", KN.PIN_MEMORY, (False, True), ("nopin", "pin"), {"pin": {"needs_cuda": True}},
              warmup_rounds=1, copy_to_cuda=True),  # the untimed round starts CUDA, its allocators and pinned pool
    Group("index", (KN.INDEX.key,), tuple(
        LoaderCase("index", kind, {KN.INDEX.key: kind}, LoaderConfig(batch_size=64, num_workers=2, shuffle=True),
                   index=kind, lfw_only=LFW_FILES, not_quick=QUICK_BUDGET, count_index=True)
        for kind in ("list", "numpy"))),
    _one_knob("persistent-workers", KN.PERSISTENT_WORKERS, (False, True), ("nonpersistent", "persistent"),
              warmup_rounds=1, min_rounds=2, epoch_images=True),
    _one_knob("prefetch", KN.PREFETCH_FACTOR, PREFETCH, [f"prefetch{p}" for p in PREFETCH],
              {"prefetch4": {"not_quick": "prefetch4 is kept out of its time budget (it compares the default 2 "
                                          "with 8)"}}),
    _one_knob("start-method", KN.START_METHOD, START_METHODS, START_METHODS,
              {"forkserver": {"full_only": "forkserver (seconds per pass, like spawn) runs in full only"}},
              rounds_quick=1),
    Group("data-wait", (KN.STEP_MS.key,), tuple(
        LoaderCase("data-wait", f"step{ms}ms", {KN.STEP_MS.key: ms}, LoaderConfig(batch_size=64, num_workers=2),
                   "uint8", step_ms=ms, max_batches=DATA_WAIT_MAX_BATCHES, memory_interval_s=None,
                   lfw_only=LFW_PRESETS)
        for ms in STEP_MS), rounds_quick=3),
    Group("overhead", (KN.SAMPLING.key,), tuple(
        LoaderCase("overhead", name, {KN.SAMPLING.key: name}, LoaderConfig(batch_size=64, num_workers=2),
                   memory_interval_s=interval, mark_start=mark, lfw_only=LFW_FILES, not_quick=QUICK_BUDGET)
        for name, (interval, mark) in SAMPLING.items()), rounds_quick=3),
    _decoders(),
    _device_decode(device_workers(usable_cores())),
    _remote(),
    _peers(device_workers(usable_cores())),
)}


def find_case(case_id: str) -> tuple[Group, LoaderCase]:
    """The group and case of an id (``workers2-none``, ``bs256``, ``prefetch4``...), unique across groups."""
    found = [(g, g.case(case_id)) for g in GROUPS.values() if case_id in g.ids]
    if not found:
        known = ", ".join(i for g in GROUPS.values() for i in g.ids)
        raise LFWError(f"unknown case {case_id!r}; known cases: {known}")
    return found[0]


def ceiling_indices(dataset_size: int, profile: Profile, transform: str) -> list[int]:
    """The images a ceiling sweep decodes: ``profile.ceiling_images`` spread over what a pass of ``transform``
    reads, so the ceiling is measured on the same mix of files as the passes it is compared with."""
    return spread_indices(min(dataset_size, profile.pass_images(transform)), profile.ceiling_images)
