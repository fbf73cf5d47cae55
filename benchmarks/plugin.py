"""The benchmarks' pytest wiring: options, hooks and thin fixtures over the suite engine (:mod:`lfw.suite`).

Loaded by the root ``conftest.py`` (``pytest_plugins``), as pytest-benchmark keeps its own ``plugin.py``: what a
group runs and how is :mod:`lfw.suite.runner`, what a case records is :mod:`lfw.suite.record`, why a case is
left out is :func:`lfw.suite.skips.skip_reason`. Thread counts are pinned by the root ``conftest.py``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
import torch

from benchmarks import helpers as H
from lfw.data.root import DataSource, resolve_root, screened
from lfw.errors import LFWError, name_skip_option
from lfw.measure import machine
from lfw.measure.page_cache import CACHE_MODES
from lfw.measure.resources import usable_cores
from lfw.remote.endpoint import LocalS3, local_s3, upload_tree
from lfw.results import Outcome, Selection
from lfw.results import keys as K
from lfw.suite import matrix
from lfw.suite.profiles import PEERS, PROFILES, Profile
from lfw.suite.runner import ROTATION_SEED, Datasets, GroupRotation, GroupRunner
from lfw.suite.saving import save_atomically
from lfw.suite.skips import Session, layers_on
from lfw.suite.user_dataset import SKIP_HINT, SKIP_OPTION, user_dataset

torch.set_num_threads(1)
OUTCOMES: pytest.StashKey[dict[str, Outcome]] = pytest.StashKey()  # case key -> how it ended
DESELECTED: pytest.StashKey[set[str]] = pytest.StashKey()  # case keys that -k/-m left out
USER_DATASET: pytest.StashKey[Any] = pytest.StashKey()  # the --bench-dataset factory's dataset, or None
STOP: pytest.StashKey[H.RunStop] = pytest.StashKey()  # why the run stopped early, and what never ran
_STOPS: list[H.RunStop] = []  # this process's sessions (pytester may nest one), the current one last


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lfw-bench")
    group.addoption("--bench-profile", choices=sorted(PROFILES), default="quick",
                    help="how much data and how many rounds: smoke, quick (default), full")
    group.addoption("--bench-cache-mode", choices=CACHE_MODES, default="warm",
                    help="warm page cache (default) or evict the dataset's files before each round")
    group.addoption("--bench-cost", action="store_true", help="add the cost layer (valgrind) to the quick profile")
    group.addoption("--bench-remote", action="store_true", help="add the remote layer (local S3) to the quick profile")
    group.addoption("--bench-peers", action="store_true",
                    help="add the peers layer (the loaders users switch to: make peers) to the quick profile")
    group.addoption("--bench-dataset", metavar="MODULE:FACTORY", help="run the knob groups on your own Dataset")
    group.addoption(SKIP_OPTION, action="store_true", help="find unreadable images first and leave them out "
                    "of the run (recorded; the gate compares it only with a run that skipped as many)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[H.SESSION_FACTS], config.stash[OUTCOMES], config.stash[DESELECTED] = {}, {}, set()
    config.stash[STOP] = H.RunStop()
    _STOPS.append(config.stash[STOP])  # pytest_keyboard_interrupt is given no config to find it in
    H.interrupt_on_sigterm(config.stash[STOP])
    profile, spec = PROFILES[config.getoption("--bench-profile")], config.getoption("--bench-dataset")
    skip_bad = config.getoption(SKIP_OPTION)
    config.add_cleanup(partial(name_skip_option, name_skip_option(SKIP_HINT)))  # what corrupt-image errors name
    try:
        config.stash[USER_DATASET] = user_dataset(spec, skip_bad) if spec else None
    except LFWError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[H.BENCH_SESSION] = Session(profile, layers_on(
        profile, cost=config.getoption("--bench-cost"), remote=config.getoption("--bench-remote"),
        peers=config.getoption("--bench-peers"), keyword=config.getoption("keyword") or ""), usable_cores(),
        torch.cuda.is_available(), user_dataset=spec, cache_mode=config.getoption("--bench-cache-mode"),
        skip_bad_images=skip_bad)


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if (key := H.item_key(item)) is not None:
            item.config.stash[DESELECTED].add(key)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Record how each benchmark case ended (the first thing that went wrong), so the gate knows what to expect."""
    report: pytest.TestReport = (yield).get_result()  # type: ignore[attr-defined]
    H.relabel_narrowed(item, report, call)
    key, outcomes = H.item_key(item), item.config.stash[OUTCOMES]
    if key is not None and not (report.passed and report.when != "call") and \
            outcomes.get(key, Outcome("passed")).status == "passed":
        outcomes[key] = H.outcome_of(report, call)


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Ctrl-C (SIGINT), or SIGTERM turned into an interrupt (:func:`benchmarks.helpers.interrupt_on_sigterm`);
    not pytest's own ``Interrupted`` (collection errors) or ``pytest.exit``."""
    if type(excinfo.value) is KeyboardInterrupt and _STOPS and _STOPS[-1].signal is None:
        _STOPS[-1].signal = "SIGINT"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Iterator[None]:
    """Around pytest-benchmark's saving (a wrapper outside its own): first note why the run stopped early and
    which selected cases never ran, so an incomplete run is saved marked (:class:`Selection`) under a name ending
    in ``_incomplete``, and have it saved whole or not at all (:func:`lfw.suite.saving.save_atomically`); then,
    after every fixture is torn down, exit 130 on Ctrl-C (143 on SIGTERM), 4 if a file could not be saved."""
    config, stop = session.config, session.config.stash[STOP]
    stop.note_end(session, exitstatus)
    keys = [k for item in session.items if (k := H.item_key(item)) is not None]
    stop.not_run = tuple(k for k in dict.fromkeys(keys)
                         if k not in config.stash[OUTCOMES] and k not in config.stash[DESELECTED])
    incomplete = _selection(config).incomplete
    bs = getattr(config, "_benchmarksession", None)
    if incomplete and bs is not None and not bs.disabled:
        dropped = H.drop_unmeasured(bs.benchmarks)
        if dropped:
            print(f"\nleft out of the saved run, interrupted before a timed round: {', '.join(dropped)}",
                  file=sys.stderr)
        if bs.benchmarks:
            for option in ("save", "autosave"):
                if getattr(bs, option):
                    setattr(bs, option, f"{getattr(bs, option)}_incomplete")
            print(f"\nincomplete run, saved marked so: {incomplete}", file=sys.stderr)
    saving = save_atomically(bs)
    yield
    H.restore_sigterm(stop)
    if stop.signal is not None:  # the interrupt may have landed in an object's finalizer: not a finding
        warnings.filterwarnings("ignore", category=pytest.PytestUnraisableExceptionWarning)
    if _STOPS and _STOPS[-1] is stop:
        _STOPS.pop()
    if stop.exit_code is not None:
        session.exitstatus = stop.exit_code
    elif saving.failed:  # the run could not be saved (a full disk): the machine failed, its one line printed
        session.exitstatus = saving.exit_code


def _selection(config: pytest.Config) -> Selection:
    bench, stop = config.stash[H.BENCH_SESSION], config.stash[STOP]
    return Selection(config.getoption("keyword") or "", config.getoption("markexpr") or "", bench.profile.name,
                     tuple(sorted(bench.layers)), dict(config.stash[OUTCOMES]), frozenset(config.stash[DESELECTED]),
                     stop.not_run, stop.why)


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list, output_json: dict) -> None:
    """Save the run's selection beside its cases (:class:`lfw.results.Selection`), with how it ended."""
    output_json[K.SELECTION] = _selection(config).to_dict()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    machine_info.update(machine.machine_info())
    if PEERS in config.stash[H.BENCH_SESSION].layers:  # the versions of the loaders the peers layer measured
        from lfw import peers

        machine_info["peers"] = peers.versions()
    machine_info.update({"bench_profile": config.getoption("--bench-profile"),
                         "cache_mode": config.getoption("--bench-cache-mode"), **config.stash[H.SESSION_FACTS]})


@pytest.fixture(scope="session")
def bench(pytestconfig: pytest.Config) -> Session:
    return pytestconfig.stash[H.BENCH_SESSION]


@pytest.fixture(scope="session")
def profile(bench: Session) -> Profile:
    return bench.profile


@pytest.fixture(scope="session")
def lfw_source(bench: Session, pytestconfig: pytest.Config) -> DataSource:
    """LFW_ROOT if set, else the profile's synthetic tree (made once in the cache, with a progress bar); with
    --bench-skip-bad-images, its view without the unreadable images."""
    source = resolve_root(synthetic_images=bench.profile.synthetic_images)
    if bench.skip_bad_images and not bench.user_dataset:
        source = screened(source)
    pytestconfig.stash[H.SESSION_FACTS].update(H.dataset_facts(source, bench, pytestconfig.stash[USER_DATASET]))
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
    H.skip_unless_remote_installed()
    with local_s3(seed=ROTATION_SEED) as s3:
        upload_tree(s3.direct, lfw_source.path, max(c.pass_images(profile) for c in matrix.GROUPS["remote"].cases))
        yield s3


@pytest.fixture(scope="session")
def rotations(request: pytest.FixtureRequest, bench: Session,
              datasets: Datasets) -> Callable[[matrix.Group, bool], GroupRotation]:
    """``get(group, timed)``: the group's rotation, run when its first test asks (untimed runs: one round)."""
    capture, done = request.config.pluginmanager.getplugin("capturemanager"), {}
    runner = GroupRunner(bench.profile, datasets, bench.cache_mode, bench.cores, progress=H.progress_bar,
                         endpoint=lambda: request.getfixturevalue("s3_endpoint"))

    def get(group: matrix.Group, timed: bool) -> GroupRotation:
        if group.name not in done:
            with capture.global_and_fixture_disabled():
                done[group.name] = runner.run(group, H.selected_cases(request.session, group), timed=timed)
            H.note_machine_rates(request.config, done[group.name])
        return done[group.name]

    return get


@pytest.fixture
def rotated_case(request: pytest.FixtureRequest, benchmark: Any, bench: Session,
                 rotations: Callable[[matrix.Group, bool], GroupRotation]) -> Callable[[], dict[str, Any]]:
    """Record this test's case from its group's rotation (pass times replayed); returns its ``extra_info``."""
    return lambda: H.record_rotated(request, benchmark, bench, rotations)


@pytest.fixture
def run_case(benchmark: Any, bench: Session, datasets: Datasets) -> Callable[..., dict[str, Any]]:
    """Measure one configuration on its own, rounds back to back (:func:`benchmarks.helpers.measure_alone`)."""
    return lambda config, *args, **kwargs: H.measure_alone(benchmark, bench, datasets, config, *args, **kwargs)
