"""The benchmarks' pytest wiring: options, hooks and thin fixtures over the suite engine (:mod:`lfw.suite`).

Loaded by the root ``conftest.py`` (``pytest_plugins``), as pytest-benchmark keeps its own ``plugin.py``: what a
group runs and how is :mod:`lfw.suite.runner`, what a case records is :mod:`lfw.suite.record`, why a case is
left out is :func:`lfw.suite.skips.skip_reason`. Thread counts are pinned before torch is imported anywhere
(one intra-op thread in the main process; workers use one each).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib.util  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from tqdm import tqdm  # noqa: E402

from benchmarks import helpers as H  # noqa: E402
from lfw.data.root import DataSource, resolve_root, tree_stats  # noqa: E402
from lfw.errors import LFWError  # noqa: E402
from lfw.measure import LoaderConfig, LoaderPass, machine  # noqa: E402
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S  # noqa: E402
from lfw.measure.machine import usable_cores  # noqa: E402
from lfw.measure.page_cache import CACHE_MODES, evict, warm  # noqa: E402
from lfw.measure.rotation import pass_clock  # noqa: E402
from lfw.remote.endpoint import LocalS3, local_s3, upload_tree  # noqa: E402
from lfw.results import Outcome, Selection  # noqa: E402
from lfw.results import keys as K  # noqa: E402
from lfw.suite import matrix  # noqa: E402
from lfw.suite.profiles import PROFILES, Profile  # noqa: E402
from lfw.suite.record import rotated_record, single_record  # noqa: E402
from lfw.suite.runner import ROTATION_SEED, Datasets, GroupRotation, GroupRunner, dataset_files  # noqa: E402
from lfw.suite.skips import Session, layers_on, worker_cap  # noqa: E402
from lfw.suite.user_dataset import user_dataset  # noqa: E402

torch.set_num_threads(1)
PASS_CLOCK = "lfw.measure.rotation.pass_clock"
OUTCOMES: pytest.StashKey[dict[str, Outcome]] = pytest.StashKey()  # case key -> how it ended
DESELECTED: pytest.StashKey[set[str]] = pytest.StashKey()  # case keys that -k/-m left out
USER_DATASET: pytest.StashKey[Any] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lfw-bench")
    group.addoption("--bench-profile", choices=sorted(PROFILES), default="quick",
                    help="how much data and how many rounds: smoke, quick (default), full")
    group.addoption("--bench-cache-mode", choices=CACHE_MODES, default="warm",
                    help="warm page cache (default) or evict the dataset's files before each round")
    group.addoption("--bench-cost", action="store_true", help="add the cost layer (instructions per image under "
                    "valgrind) to the quick profile; the smoke and full profiles always run it")
    group.addoption("--bench-remote", action="store_true", help="add the remote layer (LFW on a local S3 endpoint "
                    "behind a latency proxy) to the quick profile; -k remote does too, smoke and full always run it")
    group.addoption("--bench-dataset", metavar="MODULE:FACTORY", default=None, help="run the knob groups, memory "
                    "and the leak check on your own map-style Dataset (FACTORY() returns it); LFW by default")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[H.SESSION_FACTS], config.stash[OUTCOMES], config.stash[DESELECTED] = {}, {}, set()
    profile, spec = PROFILES[config.getoption("--bench-profile")], config.getoption("--bench-dataset")
    try:
        config.stash[USER_DATASET] = user_dataset(spec) if spec else None
    except LFWError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[H.BENCH_SESSION] = Session(profile, layers_on(
        profile, cost=config.getoption("--bench-cost"), remote=config.getoption("--bench-remote"),
        keyword=config.getoption("keyword") or ""), usable_cores(), torch.cuda.is_available(), user_dataset=spec)


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if (key := H.item_key(item)) is not None:
            item.config.stash[DESELECTED].add(key)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Record how each benchmark case ended (the first thing that went wrong), so the gate knows what to expect."""
    report: pytest.TestReport = (yield).get_result()  # type: ignore[attr-defined]
    key, outcomes = H.item_key(item), item.config.stash[OUTCOMES]
    if key is not None and not (report.passed and report.when != "call") and \
            outcomes.get(key, Outcome("passed")).status == "passed":
        outcomes[key] = H.outcome_of(report, call)


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list, output_json: dict) -> None:
    """Save the run's selection beside its cases (:class:`lfw.results.Selection`)."""
    bench = config.stash[H.BENCH_SESSION]
    output_json[K.SELECTION] = Selection(config.getoption("keyword") or "", config.getoption("markexpr") or "",
                                         bench.profile.name, tuple(sorted(bench.layers)),
                                         dict(config.stash[OUTCOMES]), frozenset(config.stash[DESELECTED])).to_dict()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    machine_info.update(machine.machine_info())
    machine_info.update({"bench_profile": config.getoption("--bench-profile"),
                         "cache_mode": config.getoption("--bench-cache-mode"), **config.stash[H.SESSION_FACTS]})


@pytest.fixture(scope="session")
def bench(pytestconfig: pytest.Config) -> Session:
    return pytestconfig.stash[H.BENCH_SESSION]


@pytest.fixture(scope="session")
def profile(bench: Session) -> Profile:
    return bench.profile


@pytest.fixture(scope="session")
def cache_mode(pytestconfig: pytest.Config) -> str:
    return pytestconfig.getoption("--bench-cache-mode")


@pytest.fixture(scope="session")
def lfw_source(bench: Session, pytestconfig: pytest.Config) -> DataSource:
    """LFW_ROOT if set, else the profile's synthetic tree (made once in the cache, with a progress bar)."""
    source = resolve_root(synthetic_images=bench.profile.synthetic_images)
    files, size = tree_stats(source.path)
    facts = {"dataset_kind": source.kind, "dataset_path": str(source.path), "dataset_files": files,
             "dataset_bytes": size}
    if bench.user_dataset:
        facts = {"dataset_kind": "user", "dataset_path": bench.user_dataset,
                 "dataset_files": len(pytestconfig.stash[USER_DATASET])}
    pytestconfig.stash[H.SESSION_FACTS].update({**facts, "worker_cap": worker_cap(bench.cores)})
    return source


@pytest.fixture(scope="session")
def datasets(lfw_source: DataSource, pytestconfig: pytest.Config) -> Datasets:
    return Datasets(lfw_source.path, pytestconfig.stash[USER_DATASET])


@pytest.fixture(scope="session")
def dataset_factory(datasets: Datasets) -> Callable[..., Any]:
    """``get(transform, index)``: a scanned dataset (or the user's), made once per pair and reused by every case."""
    return datasets.preset


@pytest.fixture(scope="session")
def s3_endpoint(lfw_source: DataSource, profile: Profile) -> Iterator[LocalS3]:
    """moto's S3 server and the latency proxy on 127.0.0.1 (free ports), LFW uploaded; stopped at session end."""
    missing = [m for m in ("moto", "boto3", "flask") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"remote layer not measured: {', '.join(missing)} not installed (the project's dependencies "
                    "bring moto[s3], boto3, flask and flask-cors)")
    with local_s3(seed=ROTATION_SEED) as s3:
        upload_tree(s3.direct, lfw_source.path, max(c.pass_images(profile) for c in matrix.GROUPS["remote"].cases))
        yield s3


@pytest.fixture(scope="session")
def rotations(request: pytest.FixtureRequest, bench: Session, cache_mode: str,
              datasets: Datasets) -> Callable[[matrix.Group, bool], GroupRotation]:
    """``get(group, timed)``: the group's rotation, run when its first test asks (untimed runs: one round)."""
    capture, done = request.config.pluginmanager.getplugin("capturemanager"), {}

    def bar(total: int, desc: str) -> Any:
        return tqdm(total=total, desc=desc, unit="pass", leave=False, file=sys.stderr)

    runner = GroupRunner(bench.profile, datasets, cache_mode, bench.cores, progress=bar,
                         endpoint=lambda: request.getfixturevalue("s3_endpoint"))

    def get(group: matrix.Group, timed: bool) -> GroupRotation:
        if group.name not in done:
            with capture.global_and_fixture_disabled():
                done[group.name] = runner.run(group, H.selected_cases(request.session, group), timed=timed)
            for name, rate in done[group.name].per_core_rates().items():
                request.config.stash[H.SESSION_FACTS].setdefault(K.per_core_machine_key(name), rate)
        return done[group.name]

    return get


@pytest.fixture
def rotated_case(request: pytest.FixtureRequest, benchmark: Any, bench: Session, cache_mode: str,
                 rotations: Callable[[matrix.Group, bool], GroupRotation]) -> Callable[[], dict[str, Any]]:
    """Record this test's case from its group's rotation (pass times replayed); returns its ``extra_info``."""

    def run() -> dict[str, Any]:
        if request.config.getoption("benchmark_timer") != PASS_CLOCK:
            raise pytest.UsageError(f"rotated benchmarks replay their passes through --benchmark-timer={PASS_CLOCK} "
                                    "(pytest.ini sets it); do not override --benchmark-timer")
        case = H.item_case(request.node)
        assert case is not None, f"{request.node.name} is not a matrix case"
        H.narrow_unless(request.config, case.needs())
        rotation = rotations(matrix.GROUPS[case.group], benchmark.enabled)
        mine = rotation.measured[case.id]
        with pass_clock.replaying([r.wall_s for r in mine.results]) as next_pass:
            benchmark.pedantic(next_pass, rounds=len(mine.results), iterations=1, warmup_rounds=0)
        device = "cuda" if case.copy_to_cuda and torch.cuda.is_available() else "cpu"
        info = rotated_record(case, rotation, profile=bench.profile, cache_mode=cache_mode, cores=bench.cores,
                              device=device)
        H.record(benchmark, info)
        return info

    return run


@pytest.fixture
def run_case(benchmark: Any, bench: Session, cache_mode: str, datasets: Datasets) -> Callable[..., dict[str, Any]]:
    """Measure one configuration on its own, rounds back to back (``warmup_rounds`` untimed first); returns and
    records its ``extra_info``."""

    def run(config: LoaderConfig, transform: str = "none", index: str = "numpy", *, batches: int | None = None,
            dataset: Any = None, memory_interval_s: float | None = DEFAULT_MEMORY_INTERVAL_S, mark_start: bool = False,
            rounds: int | None = None, warmup_rounds: int = 1) -> dict[str, Any]:
        ds = dataset if dataset is not None else datasets.preset(transform, index)
        runner = LoaderPass(config.build(ds), batches or bench.profile.batches_for(config.batch_size, transform),
                            memory_interval_s=memory_interval_s, mark_start=mark_start)
        paths, n_rounds = dataset_files(ds), rounds or bench.profile.rounds
        if cache_mode == "warm":
            warm(paths)

        def setup() -> None:
            runner.setup()
            if cache_mode == "cold":
                evict(paths)

        try:
            benchmark.pedantic(runner.run, setup=setup, rounds=n_rounds, warmup_rounds=warmup_rounds, iterations=1)
        finally:
            runner.close()
        info = single_record(runner.results[-n_rounds:] if benchmark.enabled else runner.results, config=config,
                             transform=transform, index=index, profile=bench.profile, cache_mode=cache_mode,
                             cores=bench.cores, shutdown_errors=runner.shutdown_errors)
        H.record(benchmark, info)
        return info

    return run
