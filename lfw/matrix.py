"""The loader benchmark matrix as data: every configuration the suite compares, by group.

One table serves three readers, so a case means the same DataLoader everywhere:

- the pytest benchmarks parametrize from it (``benchmarks/test_*.py``: ids such as ``workers2-none``);
- the rotation fixture builds every selected case of a group and runs their rounds interleaved;
- the A/B pass server (:mod:`lfw.measure.pass_server`) builds a case by its id in each revision's own checkout.

A case is a :class:`LoaderCase`: the knobs its group varies (pytest ``params``), the
:class:`~lfw.measure.LoaderConfig` they make, the transform preset and index kind, and what its pass covers.
Memory experiments, leak checks and the cost layer are not here: they are not comparisons between
configurations and run on their own (``test_memory_index.py``, ``test_leak.py``, ``test_cost.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch.utils.data import Dataset, Subset

from lfw.errors import LFWError
from lfw.measure.ceiling import spread_indices
from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S, LoaderPass, sleep_step
from lfw.pipelines import Pipeline
from lfw.profiles import PASS_SCALE, Profile
from lfw.remote.bench import CONCURRENCY, RemoteCase

WORKER_COUNTS = (0, 1, 2, 4, 8)
TRANSFORMS = ("none", "simple", "heavy", "uint8")


def worker_cap(cores: int) -> int:
    """Most workers worth measuring: twice the usable cores (at least 2), so 4 on a 2-core machine."""
    return max(2, 2 * cores)


@dataclass(frozen=True)
class LoaderCase:
    """One configuration of one group: the DataLoader, the data it reads and what one pass covers.

    ``epoch_images``: each pass is one whole epoch over the first :meth:`pass_images` images (the
    persistent-workers and decoders groups, whose rounds are consecutive epochs). ``max_batches`` caps the
    profile's pass length. ``step_ms`` adds a training step that sleeps that long per batch. ``copy_to_cuda``:
    with CUDA the pass includes the host-to-device copy and a synchronize (pin-memory group). ``pipeline``: the
    case reads through a decode pipeline (:mod:`lfw.pipelines`) instead of the preset ``transform``, which
    then only names the ceiling the case is paired with. ``remote``: the case reads LFW from the S3 endpoint the
    benchmarks start, through the latency proxy (:mod:`lfw.remote`).
    """

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
    full_only: str | None = None  # why the quick profile leaves the case out (None: every profile runs it)
    pipeline: Pipeline | None = None
    remote: RemoteCase | None = None
    images: int | None = None  # images per pass when the case sets its own (remote: sized by Little's law)

    def skip_reason(self, profile: Profile, cores: int, cuda: bool) -> str | None:
        """Why this machine or profile does not run the case, in words; None when it runs."""
        cap = worker_cap(cores)
        if self.config.num_workers > cap:
            return (f"workers{self.config.num_workers} capped: this machine measures up to {cap} workers "
                    f"(2 x {cores} usable cores)")
        if self.needs_cuda and not cuda:
            return ("pin_memory=True needs a CUDA device to copy to; this machine has none "
                    "(torch.cuda.is_available() is False)")
        if self.full_only and not profile.full_matrix:
            return f"{profile.name} profile: {self.full_only}"
        if self.remote is not None and profile.name == "smoke" and (self.remote.latency_ms > 20 or
                                                                      self.config.num_workers > 2):
            return "smoke profile: remote runs at 0, 5 and 20 ms with up to 2 workers"
        return None

    def pass_images(self, profile: Profile) -> int:
        """Images in one pass: the case's own count, else the profile's pass length scaled by the transform's cost."""
        if self.images is not None:
            return min(self.images, profile.images_per_pass // 2)
        return round(profile.images_per_pass * PASS_SCALE.get(self.transform, 1.0))

    def batches(self, profile: Profile, loader_batches: int) -> int:
        """Batches per pass: a whole epoch, or the profile's pass length (capped), never beyond the loader."""
        if self.epoch_images:
            return loader_batches
        wanted = profile.batches_for(self.config.batch_size, self.transform)
        if self.max_batches is not None:
            wanted = min(wanted, self.max_batches)
        return min(wanted, loader_batches)


@dataclass(frozen=True)
class Group:
    """A benchmark group: its pytest test, the knobs it varies and its cases.

    ``rounds_quick``: rounds in the quick and smoke profiles when not the profile's own (start-up measurements
    that cost seconds per pass); ``warmup_rounds``: untimed rotation rounds before the timed ones (besides the
    ceiling sweeps that warm every transform up): the persistent-workers group needs one, its first epoch
    starts the workers.
    """

    name: str
    path: str
    test: str
    argnames: tuple[str, ...]
    cases: tuple[LoaderCase, ...]
    rounds_quick: int | None = None
    warmup_rounds: int = 0
    _by_id: dict[str, LoaderCase] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_id.update({c.id: c for c in self.cases})

    @property
    def argvalues(self) -> list[tuple[Any, ...]]:
        return [tuple(c.params[a] for a in self.argnames) for c in self.cases]

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.cases]

    def fullname(self, case: LoaderCase) -> str:
        """The pytest node id of the case: what pytest-benchmark saves as ``fullname``."""
        return f"{self.path}::{self.test}[{case.id}]"

    def case_for(self, params: Mapping[str, Any]) -> LoaderCase:
        """The case whose params are ``params`` (what pytest passes the test)."""
        for case in self.cases:
            if all(case.params[a] == params.get(a) for a in self.argnames):
                return case
        raise LFWError(f"group {self.name} has no case with params {dict(params)}")

    def case(self, case_id: str) -> LoaderCase:
        try:
            return self._by_id[case_id]
        except KeyError:
            raise LFWError(f"group {self.name} has no case {case_id!r}") from None

    def rounds(self, profile: Profile) -> int:
        if self.rounds_quick is not None and not profile.full_matrix:
            return min(self.rounds_quick, profile.rounds)
        return profile.rounds


def _workers_transform() -> Group:
    cases = []
    for transform in TRANSFORMS:
        for workers in WORKER_COUNTS:
            quick = transform in ("none", "uint8") or workers in (0, 2)
            cases.append(LoaderCase(
                "workers-transform", f"workers{workers}-{transform}", {"num_workers": workers, "transform": transform},
                LoaderConfig(batch_size=64, num_workers=workers), transform,
                full_only=None if quick else f"{transform} runs at workers0 and workers2 only (full crosses all)"))
    return Group("workers-transform", "benchmarks/test_workers_transforms.py", "test_workers_transform",
                 ("num_workers", "transform"), tuple(cases))


def _one_knob(group: str, knob: str, values: Sequence[Any], ids: Sequence[str]) -> tuple[LoaderCase, ...]:
    """Two workers, batch 64, preset ``none``, and one LoaderConfig knob set to each value."""
    return tuple(LoaderCase(group, case_id, {knob: value},
                            LoaderConfig(**{"batch_size": 64, "num_workers": 2, knob: value}))
                 for value, case_id in zip(values, ids, strict=True))


def _decoders() -> Group:
    """Decode pipelines against the machine's two ceilings (:mod:`lfw.pipelines`; the README explains the pick).

    Every pass is one epoch over the same 1,024 images with persistent workers (started in the warm-up round),
    so the group compares steady pipelines, not worker start-up; batch 64, uint8 output unless named. Memory is
    not sampled (its snapshots walk every idle persistent worker of the group, seconds of CPU per round).
    """
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
        ("memmap-w2", Pipeline("pil", "memmap"), 2, False),
        ("pil-r112-w2", Pipeline("pil", size=draft), 2, False),
        ("pil-draft-r112-w2", Pipeline("pil-draft", size=draft), 2, False),
        ("simplejpeg-t2-float", Pipeline("simplejpeg", threads=t2, output="float"), 0, False),
        ("simplejpeg-t2-deferred", Pipeline("simplejpeg", threads=t2, output="deferred"), 0, False),
    )
    return Group("decoders", "benchmarks/test_decoders.py", "test_decoders", ("pipeline",), tuple(
        LoaderCase("decoders", case_id, {"pipeline": case_id},
                   LoaderConfig(batch_size=64, num_workers=workers, persistent_workers=workers > 0), "uint8",
                   epoch_images=True, pipeline=pipeline, memory_interval_s=None,
                   full_only=None if quick else "the quick profile runs the decoders' headline cases only")
        for case_id, pipeline, workers, quick in cases), rounds_quick=3, warmup_rounds=1)


REMOTE_LATENCIES_MS = (0, 5, 20, 100)  # quick; full adds 50
REMOTE_WORKERS = (0, 2, 4)
REMOTE_BATCH = 32
ENDPOINT_ESTIMATE = 150.0  # images/s the local endpoint serves at zero latency: only sizes the passes


def remote_pass_images(case: RemoteCase, workers: int) -> int:
    """Images per pass of a remote case: about 0.6 s at the rate Little's law allows, at least a batch per
    loading process, at most 128 images.

    At 100 ms one request at a time in the main process is 10 images/s; a fixed pass length would spend
    minutes there, or measure the fast cases for a few milliseconds.
    """
    rate = min(ENDPOINT_ESTIMATE, case.in_flight_limit(workers) / (case.latency_ms / 1e3 + 0.01))
    least = REMOTE_BATCH * max(workers, 1)  # a batch for every loading process, or some sit idle
    return int(min(128, max(least, round(rate * 0.6 / REMOTE_BATCH) * REMOTE_BATCH)))


def _remote() -> Group:
    """Strategy x injected latency x workers against the local S3 endpoint (:mod:`lfw.remote`).

    Persistent workers, started in the warm-up round with their S3 clients; every pass is one epoch over the
    first objects of the bucket, sized by :func:`remote_pass_images`. No memory sampling: every member's idle
    workers stay alive through the rotation, and walking their page tables every 2 s cost more CPU than the
    loading it was measuring.
    """
    cases = []
    for strategy in CONCURRENCY:
        for latency in (*REMOTE_LATENCIES_MS, 50):
            for workers in REMOTE_WORKERS:
                spec = RemoteCase(strategy, latency)
                cases.append(LoaderCase(
                    "remote", f"{strategy}-{latency}ms-w{workers}",
                    {"strategy": strategy, "latency_ms": latency, "num_workers": workers},
                    LoaderConfig(batch_size=REMOTE_BATCH, num_workers=workers, persistent_workers=workers > 0),
                    "uint8", epoch_images=True, remote=spec, images=remote_pass_images(spec, workers),
                    memory_interval_s=None,
                    full_only=None if latency in REMOTE_LATENCIES_MS else "50 ms runs in full only"))
    return Group("remote", "benchmarks/test_remote.py", "test_remote", ("strategy", "latency_ms", "num_workers"),
                 tuple(cases), rounds_quick=3, warmup_rounds=1)


BATCH_SIZES = (16, 64, 256, 512)
PREFETCH = (2, 4, 8)
START_METHODS = ("fork", "forkserver", "spawn")
STEP_MS = (0, 20, 50)
SAMPLING = {"sampling-off": (None, False), "sampling-default": (DEFAULT_MEMORY_INTERVAL_S, False),
            "sampling-dense": (0.25, True)}
DATA_WAIT_MAX_BATCHES = 8  # 8 x 50 ms of sleep per pass already

GROUPS: dict[str, Group] = {g.name: g for g in (
    _workers_transform(),
    Group("batch-size", "benchmarks/test_batch_size.py", "test_batch_size", ("batch_size",), tuple(
        LoaderCase("batch-size", f"bs{b}", {"batch_size": b}, LoaderConfig(batch_size=b, num_workers=2),
                   full_only=(f"bs{b} (two 366 MiB float batches per pass) runs in full only" if b > 256 else None))
        for b in BATCH_SIZES)),
    Group("pin-memory", "benchmarks/test_pin_memory.py", "test_pin_memory", ("pin_memory",), tuple(
        LoaderCase("pin-memory", case_id, {"pin_memory": pin}, LoaderConfig(batch_size=64, num_workers=2,
                                                                            pin_memory=pin),
                   copy_to_cuda=True, needs_cuda=pin)
        for pin, case_id in ((False, "nopin"), (True, "pin")))),
    Group("index", "benchmarks/test_index.py", "test_index", ("index",), tuple(
        LoaderCase("index", kind, {"index": kind}, LoaderConfig(batch_size=64, num_workers=2, shuffle=True),
                   index=kind)
        for kind in ("list", "numpy"))),
    Group("persistent-workers", "benchmarks/test_persistent_workers.py", "test_persistent_workers",
          ("persistent_workers",), tuple(
        LoaderCase("persistent-workers", case_id, {"persistent_workers": keep},
                   LoaderConfig(batch_size=64, num_workers=2, persistent_workers=keep), epoch_images=True)
        for keep, case_id in ((False, "nonpersistent"), (True, "persistent"))), warmup_rounds=1),
    Group("prefetch", "benchmarks/test_prefetch.py", "test_prefetch", ("prefetch_factor",),
          _one_knob("prefetch", "prefetch_factor", PREFETCH, [f"prefetch{p}" for p in PREFETCH])),
    Group("start-method", "benchmarks/test_start_method.py", "test_start_method", ("start_method",), tuple(
        replace(case, full_only="forkserver (seconds per pass, like spawn) runs in full only")
        if case.id == "forkserver" else case
        for case in _one_knob("start-method", "start_method", START_METHODS, START_METHODS)), rounds_quick=1),
    Group("data-wait", "benchmarks/test_data_wait.py", "test_data_wait", ("step_ms",), tuple(
        LoaderCase("data-wait", f"step{ms}ms", {"step_ms": ms}, LoaderConfig(batch_size=64, num_workers=2),
                   "uint8", step_ms=ms, max_batches=DATA_WAIT_MAX_BATCHES, memory_interval_s=None)
        for ms in STEP_MS), rounds_quick=3),
    Group("overhead", "benchmarks/test_overhead.py", "test_memory_sampling_overhead", ("sampling",), tuple(
        LoaderCase("overhead", name, {"sampling": name}, LoaderConfig(batch_size=64, num_workers=2),
                   memory_interval_s=interval, mark_start=mark)
        for name, (interval, mark) in SAMPLING.items()), rounds_quick=3),
    _decoders(),
    _remote(),
)}


def find_case(case_id: str) -> tuple[Group, LoaderCase]:
    """The group and case of an id (``workers2-none``, ``bs256``, ``prefetch4``...), unique across groups."""
    found = [(g, g.case(case_id)) for g in GROUPS.values() if case_id in g.ids]
    if not found:
        known = ", ".join(i for g in GROUPS.values() for i in g.ids)
        raise LFWError(f"unknown case {case_id!r}; known cases: {known}")
    return found[0]


def case_dataset(case: LoaderCase, root: str | os.PathLike[str], presets: Callable[[str, str], Dataset],
                 profile: Profile) -> Dataset:
    """What ``case`` reads: its pipeline's dataset over the pass's images, else ``presets(transform, index)``."""
    if case.remote is not None:
        raise LFWError(f"{case.id} reads from the S3 endpoint the benchmarks start: run it with "
                       "pytest benchmarks -k remote (it has no A/B form)")
    if case.pipeline is not None:
        return case.pipeline.dataset(root, case.pass_images(profile))
    return presets(case.transform, case.index)


def loader_pass(case: LoaderCase, dataset: Dataset, profile: Profile) -> LoaderPass:
    """The :class:`LoaderPass` that measures ``case`` over ``dataset`` (built with the case's transform and index,
    or by :func:`case_dataset`)."""
    images = case.pass_images(profile)
    data: Dataset = dataset
    if case.epoch_images and case.pipeline is None:
        data = Subset(dataset, range(min(images, len(dataset))))  # type: ignore[arg-type]
    loader = case.config.build(data)
    device = "cuda" if case.copy_to_cuda and torch.cuda.is_available() else None
    step = sleep_step(case.step_ms / 1e3) if case.step_ms is not None else None
    if case.pipeline is not None:
        step = case.pipeline.consumer_step()
    return LoaderPass(loader, case.batches(profile, len(loader)), device=device,
                      memory_interval_s=case.memory_interval_s, mark_start=case.mark_start, step=step)


def ceiling_indices(dataset_size: int, profile: Profile, transform: str) -> list[int]:
    """The images a ceiling sweep decodes: ``profile.ceiling_images`` spread over what a pass of ``transform``
    reads, so the ceiling is measured on the same mix of files as the passes it is compared with."""
    pass_images = round(profile.images_per_pass * PASS_SCALE.get(transform, 1.0))
    return spread_indices(min(dataset_size, pass_images), profile.ceiling_images)
