"""The benchmarks' pytest wiring, in one plugin module: options, the machine-info hook, session fixtures.

Loaded by the root ``conftest.py`` (``pytest_plugins``), like pytest-benchmark's own ``plugin.py``: hooks and
fixtures here, logic in :mod:`benchmarks.helpers`, :mod:`lfw.matrix` and :mod:`lfw.measure`.

Thread counts are pinned before torch is imported anywhere: with more than one intra-op thread in the main
process, float conversion on 2 cores ran 4x slower and much noisier, and workers already use one thread each.

Everything expensive happens outside the timed rounds (numpy's rule: preparing inputs belongs in setup): the
synthetic tree is made on first use and datasets are scanned once per (transform, index) pair. Two fixtures
measure a case:

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

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib.util  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from statistics import median  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from tqdm import tqdm  # noqa: E402

from benchmarks.helpers import (  # noqa: E402
    SESSION_FACTS,
    GroupRotation,
    Narrowed,
    benchmark_group,
    case_skip_reason,
    dataset_files,
    narrow,
    record,
    remote_layer_asked,
    selected_cases,
)
from lfw import keys as K  # noqa: E402
from lfw import matrix  # noqa: E402
from lfw.data_root import DataSource, resolve_root, tree_stats  # noqa: E402
from lfw.dataset import LFWDataset  # noqa: E402
from lfw.measure import LoaderConfig, LoaderPass, machine  # noqa: E402
from lfw.measure.capacity import ParallelCapacity  # noqa: E402
from lfw.measure.ceiling import CeilingSweep, usable_cores  # noqa: E402
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S, PassResult  # noqa: E402
from lfw.measure.page_cache import CACHE_MODES, evict, warm  # noqa: E402
from lfw.measure.rotation import LoaderMember, Member, Rotation, pass_clock  # noqa: E402
from lfw.measure.summary import machine_ceiling_shares, summarize  # noqa: E402
from lfw.pipelines import Pipeline  # noqa: E402
from lfw.profiles import PROFILES, Profile  # noqa: E402
from lfw.remote.bench import EndpointCeiling, RemoteMember, endpoint_shares  # noqa: E402
from lfw.remote.dataset import S3LFW  # noqa: E402
from lfw.remote.endpoint import LocalS3, local_s3, upload_tree  # noqa: E402
from lfw.results import Outcome, Selection, case_key  # noqa: E402

torch.set_num_threads(1)

PASS_CLOCK = "lfw.measure.rotation.pass_clock"
ROTATION_SEED = 20261122
MEMMAP_CEILING = "ceiling-memmap"
ENDPOINT_CEILING = "ceiling-endpoint"
CAPACITY = "capacity"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lfw-bench")
    group.addoption("--bench-profile", choices=sorted(PROFILES), default="quick",
                    help="how much data and how many rounds: smoke, quick (default), full")
    group.addoption("--bench-cache-mode", choices=CACHE_MODES, default="warm",
                    help="warm page cache (default) or evict the dataset's files before each round")
    group.addoption("--bench-cost", action="store_true",
                    help="add the cost layer (instructions per image under valgrind, ~80 s) to the quick profile; "
                         "the smoke and full profiles always run it")
    group.addoption("--bench-remote", action="store_true",
                    help="add the remote layer (LFW on a local S3 endpoint behind a latency proxy) to the quick "
                         "profile; -k remote does too, and the smoke and full profiles always run it")


OUTCOMES: pytest.StashKey[dict[str, Outcome]] = pytest.StashKey()  # case key -> how it ended
DESELECTED: pytest.StashKey[set[str]] = pytest.StashKey()  # case keys that -k/-m left out


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SESSION_FACTS] = {}
    config.stash[OUTCOMES] = {}
    config.stash[DESELECTED] = set()


def item_key(item: pytest.Item) -> str | None:
    """The case key (group and test id) of a benchmark item; None for a plain test."""
    group = benchmark_group(item)
    return case_key(group, item.name) if group else None


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        key = item_key(item)
        if key is not None:
            item.config.stash[DESELECTED].add(key)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Record how each benchmark case ended, so the gate knows which cases this run was expected to hold."""
    result = yield
    report: pytest.TestReport = result.get_result()  # type: ignore[attr-defined]
    key = item_key(item)
    if key is None or (report.passed and report.when != "call"):
        return
    outcomes = item.config.stash[OUTCOMES]
    if outcomes.get(key, Outcome("passed")).status != "passed":
        return  # the first thing that went wrong is the story
    if report.skipped:
        narrowed = call.excinfo is not None and call.excinfo.errisinstance(Narrowed)
        if call.excinfo is not None and isinstance(call.excinfo.value, pytest.skip.Exception):
            reason = str(call.excinfo.value.msg)  # the reason alone, without the exception's class path
        else:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        outcomes[key] = Outcome("narrowed" if narrowed else "skipped", reason.removeprefix("Skipped: "))
    elif report.failed:
        lines = report.longreprtext.strip().splitlines()
        outcomes[key] = Outcome("failed", f"{report.when}: {lines[-1][:300] if lines else 'no message'}")
    else:
        outcomes[key] = Outcome("passed")


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list, output_json: dict) -> None:
    """Save the run's selection beside its cases (:class:`lfw.results.Selection`)."""
    profile = PROFILES[config.getoption("--bench-profile")]
    layers = [name for name, on in (
        ("cost", profile.cost_by_default or config.getoption("--bench-cost")),
        ("remote", profile.full_matrix or profile.name == "smoke" or remote_layer_asked(config))) if on]
    output_json[K.SELECTION] = Selection(config.getoption("keyword") or "", config.getoption("markexpr") or "",
                                         profile.name, tuple(layers), dict(config.stash[OUTCOMES]),
                                         frozenset(config.stash[DESELECTED])).to_dict()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    machine_info.update(machine.machine_info())
    machine_info["bench_profile"] = config.getoption("--bench-profile")
    machine_info["cache_mode"] = config.getoption("--bench-cache-mode")
    machine_info.update(config.stash[SESSION_FACTS])


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


@pytest.fixture(scope="session")
def s3_endpoint(lfw_source: DataSource, profile: Profile) -> Iterator[LocalS3]:
    """moto's S3 server and the latency proxy on 127.0.0.1 (free ports), LFW uploaded; stopped at session end."""
    for module in ("moto", "boto3", "flask"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"remote layer not measured: {module} is not installed (pip install 'moto[s3]' flask "
                        "flask-cors boto3, which the project's dependencies bring)")
    images = max(c.pass_images(profile) for c in matrix.GROUPS["remote"].cases)
    with local_s3(seed=ROTATION_SEED) as s3:
        upload_tree(s3.direct, lfw_source.path, images)
        yield s3


@pytest.fixture(scope="session")
def rotations(request: pytest.FixtureRequest, profile: Profile, cache_mode: str, lfw_source: DataSource,
              dataset_factory: Callable[..., LFWDataset]) -> Callable[[matrix.Group, bool], GroupRotation]:
    """``get(group, timed)``: the group's rotation, run when its first test asks (untimed runs: one round)."""
    done: dict[str, GroupRotation] = {}
    warmed: set[tuple[str, ...]] = set()
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def member_for(case: matrix.LoaderCase) -> Member:
        if case.remote is not None:
            s3 = request.getfixturevalue("s3_endpoint")
            data = S3LFW(s3.settings, case.remote.strategy, case.remote.concurrency, case.pass_images(profile))
            return RemoteMember(matrix.loader_pass(case, data, profile), s3, case.remote)
        dataset = matrix.case_dataset(case, lfw_source.path, dataset_factory, profile)
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
        for transform in dict.fromkeys(c.transform for c in cases if c.remote is None):
            dataset = dataset_factory(transform)
            members[f"ceiling-{transform}"] = CeilingSweep(
                dataset, matrix.ceiling_indices(len(dataset), profile, transform))
        if any(c.pipeline is not None for c in cases):  # decode pipelines: the decode-free ceiling too
            memmap = Pipeline(storage="memmap").dataset(lfw_source.path)
            members[MEMMAP_CEILING] = CeilingSweep(memmap, matrix.ceiling_indices(len(memmap), profile, "uint8"))
        if any(c.config.num_workers > 1 and c.remote is None for c in cases):  # cores the machine gives
            members[CAPACITY] = ParallelCapacity(usable_cores())
        if any(c.remote is not None for c in cases):  # remote: the endpoint's own zero-latency ceiling
            s3 = request.getfixturevalue("s3_endpoint")
            images = max(c.pass_images(profile) for c in cases)
            members[ENDPOINT_CEILING] = EndpointCeiling(S3LFW(s3.settings, images=images), s3)
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
                facts.setdefault(K.per_core_machine_key(key.removeprefix("ceiling-")),
                                 round(median(r.images_per_s for r in m.results), 2))
        errors = {key: m.runner.shutdown_errors for key, m in members.items()
                  if isinstance(m, LoaderMember) and m.runner.shutdown_errors}
        done[group.name] = GroupRotation(measured, info, errors)
        return done[group.name]

    return get


def case_record(case: matrix.LoaderCase, results: list[PassResult], rotation: GroupRotation) -> dict[str, Any]:
    """A rotated case's rounds summarized, with its ceilings of the same rounds: efficiency for a preset, shares
    of the PIL and decode-free ceilings for a decode pipeline, share of the endpoint's ceiling for a remote case."""
    workers, cores = case.config.num_workers, usable_cores()

    def ceiling(member: str) -> list[float]:
        return [r.images_per_s for r in rotation.measured[member].results]

    capacities = ([r.extra[K.PARALLEL_CAPACITY] for r in rotation.measured[CAPACITY].results]
                  if CAPACITY in rotation.measured else None)

    if case.remote is not None:  # I/O-bound: the endpoint's ceiling, not a decode ceiling
        info = summarize(results, workers=workers, usable_cores=cores)
        info.update(endpoint_shares(results, ceiling(ENDPOINT_CEILING), latency_ms=case.remote.latency_ms,
                                    in_flight_limit=case.remote.in_flight_limit(workers)))
        info.update({K.STRATEGY: case.remote.strategy, K.LATENCY_MS: case.remote.latency_ms,
                     K.CONCURRENCY: case.remote.concurrency, K.IN_FLIGHT_LIMIT: case.remote.in_flight_limit(workers)})
    elif case.pipeline is not None:  # a faster decoder may beat the PIL path's ceiling: shares, no efficiency
        info = summarize(results, workers=workers, usable_cores=cores, capacities=capacities)
        info.update(machine_ceiling_shares(results, pil=ceiling(f"ceiling-{case.transform}"),
                                           memmap=ceiling(MEMMAP_CEILING), usable_cores=cores, capacities=capacities))
        info.update({K.DECODER: case.pipeline.decoder, K.STORAGE: case.pipeline.storage,
                     K.THREADS: case.pipeline.threads, K.OUTPUT: case.pipeline.output,
                     K.OUTPUT_SIZE: case.pipeline.size})
    else:
        info = summarize(results, ceilings=ceiling(f"ceiling-{case.transform}"), workers=workers, usable_cores=cores,
                         capacities=capacities)
    return info


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
        reason = case_skip_reason(request.config, case, profile)
        if reason:
            narrow(reason)
        rotation = rotations(group, benchmark.enabled)
        mine = rotation.measured[case.id]
        with pass_clock.replaying([r.wall_s for r in mine.results]) as next_pass:
            benchmark.pedantic(next_pass, rounds=len(mine.results), iterations=1, warmup_rounds=0)
        info = case_record(case, mine.results, rotation)
        info.update({K.TRANSFORM: case.transform, K.INDEX: case.index, K.CACHE_MODE: cache_mode,
                     K.PROFILE: profile.name, K.CONFIG: case.config.as_dict(),
                     K.DEVICE: "cuda" if case.copy_to_cuda and torch.cuda.is_available() else "cpu",
                     K.ROTATION: rotation.info, K.ROTATION_POSITIONS: mine.positions})
        if case.step_ms is not None:
            info[K.STEP_MS] = case.step_ms
        if case.id in rotation.shutdown_errors:  # workers that died on their way out, after their passes completed
            info[K.WORKER_SHUTDOWN_ERRORS] = rotation.shutdown_errors[case.id]
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
        info.update({K.TRANSFORM: transform, K.INDEX: index, K.CACHE_MODE: cache_mode,
                     K.PROFILE: profile.name, K.CONFIG: config.as_dict(), K.DEVICE: "cpu"})
        if runner.shutdown_errors:  # workers that died on their way out, after their passes completed
            info[K.WORKER_SHUTDOWN_ERRORS] = runner.shutdown_errors
        record(benchmark, info)
        return info

    return run
