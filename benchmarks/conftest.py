"""Session fixtures of the benchmarks: data made and scanned once, and two ways to measure a case.

Everything expensive happens outside the timed rounds (numpy's rule: preparing inputs belongs in setup): the
synthetic tree is made on first use and datasets are scanned once per (transform, index) pair.

- ``rotated_case``: the loader groups of :mod:`lfw.matrix` (workers x transform, batch size, pin, index,
  persistent workers, prefetch, start method, data wait, sampling overhead). The first test of a group runs the
  group's :class:`~lfw.measure.rotation.Rotation`: every selected case of the group and the single-core ceiling
  of each transform, round-robin in a new random order each round, so all of them see the same drift. Each test
  then records its own rounds: pytest-benchmark replays the pass times through the suite's timer
  (:data:`~lfw.measure.rotation.pass_clock`) and ``extra_info`` gets the per-round values, the paired ceilings
  and the rotation's schedule, so the report can take ratios of two configurations round by round.
- ``run_case``: a case measured on its own, rounds back to back (the memory experiments, which must not share
  the machine with another configuration's workers).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from statistics import median
from typing import Any

import pytest
import torch
from torch.utils.data import Subset
from tqdm import tqdm

from benchmarks.session_facts import SESSION_FACTS
from lfw import matrix
from lfw.data_root import DataSource, resolve_root, tree_stats
from lfw.dataset import LFWDataset
from lfw.index import path_at
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.ceiling import CeilingSweep, usable_cores
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S
from lfw.measure.page_cache import evict, warm
from lfw.measure.rotation import LoaderMember, Measured, Member, Rotation, pass_clock
from lfw.measure.summary import summarize
from lfw.profiles import PROFILES, Profile

PASS_CLOCK = "lfw.measure.rotation.pass_clock"
ROTATION_SEED = 20261122


def dataset_files(dataset: Any) -> list[str]:
    """Every image file a dataset can read (through a ``Subset`` too): what warm and cold cache modes touch.

    All of them, not the first pass's worth: shuffled cases read files from anywhere in the index.
    """
    if isinstance(dataset, Subset):
        base = dataset_files(dataset.dataset)
        return [base[i] for i in dataset.indices] if base else []
    index = getattr(dataset, "paths", None)
    return [path_at(index, i) for i in range(len(index))] if index is not None else []


def skip_above_cap(workers: int) -> None:
    cap = matrix.worker_cap(usable_cores())
    if workers > cap:
        pytest.skip(f"workers{workers} capped: this machine measures up to {cap} workers "
                    f"(2 x {usable_cores()} usable cores)")


@pytest.fixture(scope="session")
def profile(pytestconfig: pytest.Config) -> Profile:
    return PROFILES[pytestconfig.getoption("--bench-profile")]


@pytest.fixture(scope="session")
def cache_mode(pytestconfig: pytest.Config) -> str:
    return pytestconfig.getoption("--bench-cache-mode")


@pytest.fixture(scope="session")
def lfw_source(profile: Profile, pytestconfig: pytest.Config) -> DataSource:
    """LFW_ROOT if set, else the profile's synthetic tree (made once in the cache, with a progress bar)."""
    source = resolve_root(synthetic_images=profile.synthetic_images)
    files, size = tree_stats(source.path)
    pytestconfig.stash[SESSION_FACTS].update({
        "dataset_kind": source.kind, "dataset_path": str(source.path), "dataset_files": files,
        "dataset_bytes": size, "worker_cap": matrix.worker_cap(usable_cores()),
    })
    return source


@pytest.fixture(scope="session")
def dataset_factory(lfw_source: DataSource) -> Callable[..., LFWDataset]:
    """``get(transform, index)``: a scanned dataset, made once per pair and reused by every case."""
    made: dict[tuple[str, str], LFWDataset] = {}

    def get(transform: str = "none", index: str = "numpy") -> LFWDataset:
        if (transform, index) not in made:
            made[(transform, index)] = LFWDataset(lfw_source.path, transform=transform, index=index)
        return made[(transform, index)]

    return get


@dataclass
class GroupRotation:
    """A group's measured rotation: each member's rounds, and what the report needs to pair them."""

    measured: dict[str, Measured]
    info: dict[str, Any]
    shutdown_errors: dict[str, list[str]]


def benchmark_group(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("benchmark")
    return marker.kwargs.get("group") if marker is not None else None


def selected_cases(session: pytest.Session, group: matrix.Group, profile: Profile) -> list[matrix.LoaderCase]:
    """The cases of ``group`` this session runs: selected by ``-k``/``-m`` and not skipped on this machine."""
    cases = []
    for item in session.items:
        if benchmark_group(item) == group.name and hasattr(item, "callspec"):
            case = group.case_for(item.callspec.params)
            if case.skip_reason(profile, usable_cores(), torch.cuda.is_available()) is None:
                cases.append(case)
    return cases


@pytest.fixture(scope="session")
def rotations(request: pytest.FixtureRequest, profile: Profile, cache_mode: str,
              dataset_factory: Callable[..., LFWDataset]) -> Callable[[matrix.Group, bool], GroupRotation]:
    """``get(group, timed)``: the group's rotation, run when its first test asks (untimed runs: one round)."""
    done: dict[str, GroupRotation] = {}
    warmed: set[tuple[str, ...]] = set()
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def member_for(case: matrix.LoaderCase) -> Member:
        dataset = dataset_factory(case.transform, case.index)
        runner = matrix.loader_pass(case, dataset, profile)
        paths = dataset_files(runner.loader.dataset)
        if cache_mode == "warm" and tuple(paths) not in warmed:
            warm(paths)
            warmed.add(tuple(paths))
        return LoaderMember(runner, (lambda: evict(paths)) if cache_mode == "cold" else None)

    def get(group: matrix.Group, timed: bool) -> GroupRotation:
        if group.name in done:
            return done[group.name]
        cases = selected_cases(request.session, group, profile)
        members: dict[str, Member] = {c.id: member_for(c) for c in cases}
        for transform in dict.fromkeys(c.transform for c in cases):
            dataset = dataset_factory(transform)
            members[f"ceiling-{transform}"] = CeilingSweep(
                dataset, matrix.ceiling_indices(len(dataset), profile, transform))
        rounds = group.rounds(profile) if timed else 1
        ceilings = [k for k in members if k.startswith("ceiling-")]
        rotation = Rotation(members, rounds, group.warmup_rounds if timed else 0, ROTATION_SEED,
                            warm=ceilings if timed else ())
        with capture.global_and_fixture_disabled(), tqdm(total=rotation.passes, desc=f"rotation {group.name}",
                                                         unit="pass", leave=False, file=sys.stderr) as bar:
            measured = rotation.run(progress=lambda _key: bar.update())
        info = {"group": group.name, "members": list(members), "rounds": rounds,
                "warmup_rounds": rotation.warmup_rounds, "seed": ROTATION_SEED}
        facts = request.config.stash[SESSION_FACTS]
        for key, m in measured.items():
            if key.startswith("ceiling-") and m.results:
                facts.setdefault(f"per_core_images_per_s_{key.removeprefix('ceiling-')}",
                                 round(median(r.images_per_s for r in m.results), 2))
        errors = {key: m.runner.shutdown_errors for key, m in members.items()
                  if isinstance(m, LoaderMember) and m.runner.shutdown_errors}
        done[group.name] = GroupRotation(measured, info, errors)
        return done[group.name]

    return get


def record(benchmark: Any, info: dict[str, Any]) -> None:
    """Put every value into ``benchmark.extra_info`` (mutated, never rebound: pytest-benchmark keeps the dict)."""
    for key, value in info.items():
        benchmark.extra_info[key] = value


@pytest.fixture
def rotated_case(request: pytest.FixtureRequest, benchmark: Any, profile: Profile, cache_mode: str,
                 rotations: Callable[[matrix.Group, bool], GroupRotation]) -> Callable[[], dict[str, Any]]:
    """Record this test's case from its group's rotation; returns the case's ``extra_info`` record."""

    def run() -> dict[str, Any]:
        if request.config.getoption("benchmark_timer") != PASS_CLOCK:
            raise pytest.UsageError(f"rotated benchmarks replay their passes through --benchmark-timer={PASS_CLOCK} "
                                    "(pytest.ini sets it); do not override --benchmark-timer")
        group = matrix.GROUPS[benchmark_group(request.node) or ""]
        case = group.case_for(request.node.callspec.params)
        reason = case.skip_reason(profile, usable_cores(), torch.cuda.is_available())
        if reason:
            pytest.skip(reason)
        rotation = rotations(group, benchmark.enabled)
        mine = rotation.measured[case.id]
        ceiling = rotation.measured[f"ceiling-{case.transform}"]
        with pass_clock.replaying([r.wall_s for r in mine.results]) as next_pass:
            benchmark.pedantic(next_pass, rounds=len(mine.results), iterations=1, warmup_rounds=0)
        info = summarize(mine.results, ceilings=[r.images_per_s for r in ceiling.results],
                         workers=case.config.num_workers, usable_cores=usable_cores())
        info.update({"transform": case.transform, "index": case.index, "cache_mode": cache_mode,
                     "profile": profile.name, "config": case.config.as_dict(),
                     "device": "cuda" if case.copy_to_cuda and torch.cuda.is_available() else "cpu",
                     "rotation": rotation.info, "rotation_positions": mine.positions})
        if case.step_ms is not None:
            info["step_ms"] = case.step_ms
        if case.id in rotation.shutdown_errors:  # workers that died on their way out, after their passes completed
            info["worker_shutdown_errors"] = rotation.shutdown_errors[case.id]
        record(benchmark, info)
        return info

    return run


@pytest.fixture
def run_case(benchmark: Any, profile: Profile, cache_mode: str,
             dataset_factory: Callable[..., LFWDataset]) -> Callable[..., dict[str, Any]]:
    """Measure one configuration on its own: ``warmup_rounds`` untimed passes, then ``rounds`` timed ones.

    Every per-round value and summary goes into ``benchmark.extra_info``. Returns the summary so a test can
    assert on it when benchmarking is enabled.
    """

    def run(config: LoaderConfig, transform: str = "none", index: str = "numpy", *,
            batches: int | None = None, dataset: Any = None,
            memory_interval_s: float | None = DEFAULT_MEMORY_INTERVAL_S,
            mark_start: bool = False, rounds: int | None = None, warmup_rounds: int = 1) -> dict[str, Any]:
        ds = dataset if dataset is not None else dataset_factory(transform, index)
        loader = config.build(ds)
        runner = LoaderPass(loader, batches or profile.batches_for(config.batch_size, transform),
                            memory_interval_s=memory_interval_s, mark_start=mark_start)
        paths = dataset_files(ds)

        def setup() -> None:
            runner.setup()
            if cache_mode == "cold":
                evict(paths)

        if cache_mode == "warm":
            warm(paths)
        n_rounds = rounds or profile.rounds
        try:
            benchmark.pedantic(runner.run, setup=setup, rounds=n_rounds, warmup_rounds=warmup_rounds, iterations=1)
        finally:
            runner.close()
        timed = runner.results[-n_rounds:] if benchmark.enabled else runner.results
        info = summarize(timed, workers=config.num_workers, usable_cores=usable_cores())
        info.update({"transform": transform, "index": index, "cache_mode": cache_mode,
                     "profile": profile.name, "config": config.as_dict(), "device": "cpu"})
        if runner.shutdown_errors:  # workers that died on their way out, after their passes completed
            info["worker_shutdown_errors"] = runner.shutdown_errors
        record(benchmark, info)
        return info

    return run
