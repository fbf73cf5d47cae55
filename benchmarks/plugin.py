"""The benchmarks' pytest wiring: options, hooks and thin fixtures over the suite engine (:mod:`lfw.suite`).

Loaded by the root ``conftest.py`` (``pytest_plugins``), as pytest-benchmark keeps its own ``plugin.py``: what a
group runs and how is :mod:`lfw.suite.runner`, what a case records is :mod:`lfw.suite.case_record`, why a case is
left out is :func:`lfw.suite.skips.skip_reason`, how a run is saved is :mod:`lfw.suite.saving`; the pytest side of
each hook's work is :mod:`benchmarks.helpers`. Thread counts are pinned by the root ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
import torch

from benchmarks import helpers as H
from lfw.data.root import DataSource, resolve_root, screened
from lfw.errors import LFWError, name_skip_option
from lfw.measure import machine
from lfw.measure.cpus import cpu_facts
from lfw.measure.page_cache import CACHE_MODES
from lfw.remote.endpoint import LocalS3, local_s3, upload_tree
from lfw.results import keys as K
from lfw.suite import matrix
from lfw.suite.profiles import PROFILES, Profile
from lfw.suite.runner import ROTATION_SEED, Datasets, GroupRotation
from lfw.suite.saving import mark_incomplete, save_atomically
from lfw.suite.skips import Session
from lfw.suite.user_dataset import SKIP_HINT, SKIP_OPTION, user_dataset

torch.set_num_threads(1)


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
    H.add_device_options(group)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[H.SESSION_FACTS], config.stash[H.OUTCOMES], config.stash[H.DESELECTED] = {}, {}, set()
    config.stash[H.STOP] = H.RunStop()
    H.STOPS.append(config.stash[H.STOP])  # pytest_keyboard_interrupt is given no config to find it in
    H.interrupt_on_sigterm(config.stash[H.STOP])
    config.add_cleanup(partial(name_skip_option, name_skip_option(SKIP_HINT)))  # what corrupt-image errors name
    try:
        bench = config.stash[H.BENCH_SESSION] = H.bench_session(config)
        spec = bench.user_dataset
        config.stash[H.USER_DATASET] = user_dataset(spec, bench.skip_bad_images) if spec else None
    except LFWError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The machine's CPUs in one line where the usable cores differ from the logical CPUs or a core runs several
    threads, and each CPU fact that could not be read (:class:`lfw.measure.cpus.CpuFacts`)."""
    facts = cpu_facts()
    return [f"lfw-bench: {line}" for line in (facts.limit_line(), *facts.fallbacks) if line]


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if (key := H.item_key(item)) is not None:
            item.config.stash[H.DESELECTED].add(key)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Record how each benchmark case ended (the first thing that went wrong), so the gate knows what to expect."""
    report: pytest.TestReport = (yield).get_result()  # type: ignore[attr-defined]
    H.relabel_narrowed(item, report, call)
    H.note_outcome(item, report, call)


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Ctrl-C (SIGINT), or SIGTERM turned into an interrupt (:func:`benchmarks.helpers.interrupt_on_sigterm`);
    not pytest's own ``Interrupted`` (collection errors) or ``pytest.exit``."""
    if type(excinfo.value) is KeyboardInterrupt and H.STOPS and H.STOPS[-1].signal is None:
        H.STOPS[-1].signal = "SIGINT"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """Around pytest-benchmark's saving (a wrapper outside its own): first note why the run stopped early and
    which selected cases never ran, so an incomplete run is saved marked (:class:`lfw.results.Selection`) under a
    name ending in ``_incomplete`` (:func:`lfw.suite.saving.mark_incomplete`), and have it saved whole or not at all
    (:func:`lfw.suite.saving.save_atomically`); then, after every fixture is torn down, exit 130 on Ctrl-C (143 on
    SIGTERM), 4 if a file could not be saved (:func:`benchmarks.helpers.end_session`)."""
    stop, bs = session.config.stash[H.STOP], getattr(session.config, "_benchmarksession", None)
    stop.note_end(session)
    mark_incomplete(bs, H.selection(session.config).incomplete)
    saving = save_atomically(bs)
    yield
    H.end_session(session, stop, saving)


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list, output_json: dict) -> None:
    """Save the run's selection beside its cases (:class:`lfw.results.Selection`), with how it ended."""
    output_json[K.SELECTION] = H.selection(config).to_dict()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    machine_info.update({**machine.machine_info(), **config.stash[H.BENCH_SESSION].machine_facts(),
                         **config.stash[H.SESSION_FACTS]})


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
    pytestconfig.stash[H.SESSION_FACTS].update(H.dataset_facts(source, bench, pytestconfig.stash[H.USER_DATASET]))
    return source


@pytest.fixture(scope="session")
def datasets(lfw_source: DataSource, pytestconfig: pytest.Config) -> Datasets:
    return Datasets(lfw_source.path, pytestconfig.stash[H.USER_DATASET])


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
    return H.group_rotations(request, bench, datasets)


@pytest.fixture
def rotated_case(request: pytest.FixtureRequest, benchmark: Any, bench: Session,
                 rotations: Callable[[matrix.Group, bool], GroupRotation]) -> Callable[[], dict[str, Any]]:
    """Record this test's case from its group's rotation (pass times replayed); returns its ``extra_info``."""
    return lambda: H.record_rotated(request, benchmark, bench, rotations)


@pytest.fixture
def run_case(benchmark: Any, bench: Session, datasets: Datasets) -> Callable[..., dict[str, Any]]:
    """Measure one configuration on its own, rounds back to back (:func:`benchmarks.helpers.measure_alone`)."""
    return lambda config, *args, **kwargs: H.measure_alone(benchmark, bench, datasets, config, *args, **kwargs)
