"""The pytest side of the benchmarks, plain functions: which cases a session runs, how a case that is left out
says why, how each case ended, how the session ends (interrupted, incomplete, unsaved), and how a record goes into
``benchmark.extra_info``. The engine they drive is :mod:`lfw.suite`; the hooks and fixtures that use them are
:mod:`benchmarks.plugin`, and the session's state is in its ``config.stash`` under the keys below.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import pytest
import torch
from tqdm import tqdm

from lfw.cli.args import parse_counts
from lfw.data.root import DataSource, tree_stats
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S
from lfw.measure.page_cache import evict, warm
from lfw.measure.resources import Limits, loader_need, shortfall, usable_cores
from lfw.measure.rotation import pass_clock
from lfw.results import Outcome, Selection, case_key
from lfw.results import keys as K
from lfw.results.knobs import saved_form
from lfw.results.record import SCHEMA_VERSION, CaseRecord
from lfw.suite import matrix
from lfw.suite.case_record import knob_params, rotated_record, single_record
from lfw.suite.profiles import PROFILES
from lfw.suite.runner import Datasets, GroupRotation, GroupRunner, dataset_files
from lfw.suite.saving import Saving
from lfw.suite.skips import STAND_IN, Needs, Session, layers_on, skip_reason, worker_cap
from lfw.suite.user_dataset import SKIP_OPTION

PASS_CLOCK = "lfw.measure.rotation.pass_clock"

SESSION_FACTS: pytest.StashKey[dict[str, Any]] = pytest.StashKey()  # machine_info additions learned by fixtures
BENCH_SESSION: pytest.StashKey[Session] = pytest.StashKey()  # what this session can and chose to run
OUTCOMES: pytest.StashKey[dict[str, Outcome]] = pytest.StashKey()  # case key -> how it ended
DESELECTED: pytest.StashKey[set[str]] = pytest.StashKey()  # case keys that -k/-m left out
USER_DATASET: pytest.StashKey[Any] = pytest.StashKey()  # the --bench-dataset factory's dataset, or None
STOP: pytest.StashKey[RunStop] = pytest.StashKey()  # why the run stopped early, and what never ran
STOPS: list[RunStop] = []  # this process's sessions (pytester may nest one), the current one last


class Narrowed(pytest.skip.Exception):  # type: ignore[misc,name-defined]
    """A skip the run chose: the profile or a layer leaves the case out, or this machine cannot run it (cores,
    a CUDA device, a start method). The gate does not expect such a case; any other skip of a case the baseline
    has is a gap it reports (see :class:`lfw.results.Outcome`)."""


class OverLimit(Narrowed):
    """A case that does not fit this machine's /dev/shm, open files or memory (:mod:`lfw.measure.resources`):
    left out like a case beyond the machine's cores, and listed apart in the report with what it needs."""


@dataclass
class RunStop:
    """How a benchmark session ended: ``why`` it stopped before every selected case ran (None: it did not), the
    selected cases that never ran, and the exit status to end with (130 on Ctrl-C, 143 on SIGTERM)."""

    signal: str | None = None  # the signal that interrupted the run, once one has
    why: str | None = None
    not_run: tuple[str, ...] = ()
    exit_code: int | None = None
    previous_handler: Any = None

    def note_end(self, session: pytest.Session) -> None:
        """Note why the run stopped early, if it did, and which selected cases never ran."""
        if self.signal is not None:
            self.why = f"interrupted ({self.signal})"
            self.exit_code = 128 + signal.Signals[self.signal].value
        elif session.shouldstop or session.shouldfail:
            self.why = f"stopped early ({session.shouldstop or session.shouldfail})"
        keys = [k for item in session.items if (k := item_key(item)) is not None]
        ended, deselected = session.config.stash[OUTCOMES], session.config.stash[DESELECTED]
        self.not_run = tuple(k for k in dict.fromkeys(keys) if k not in ended and k not in deselected)


def interrupt_on_sigterm(stop: RunStop) -> None:
    """Make SIGTERM (a CI job cancelled, a ``timeout``) stop the run as Ctrl-C does: workers, servers and fixtures
    are stopped, the partial run is saved marked incomplete, and the exit status says which signal it was."""
    if threading.current_thread() is not threading.main_thread():
        return

    owner = os.getpid()

    def terminate(signum: int, frame: Any) -> None:
        if os.getpid() != owner:  # a forked child inherited the handler: end it as SIGTERM would have
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        stop.signal = "SIGTERM"
        raise KeyboardInterrupt

    stop.previous_handler = signal.signal(signal.SIGTERM, terminate)


def restore_sigterm(stop: RunStop) -> None:
    if stop.previous_handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop.previous_handler)
        stop.previous_handler = None


def end_session(session: pytest.Session, stop: RunStop, saving: Saving) -> None:
    """After every fixture is torn down: SIGTERM's handler given back, and the exit status 130 on Ctrl-C (143 on
    SIGTERM), else the saving's (4) if a file could not be saved."""
    restore_sigterm(stop)
    if stop.signal is not None:  # the interrupt may have landed in an object's finalizer: not a finding
        warnings.filterwarnings("ignore", category=pytest.PytestUnraisableExceptionWarning)
    if STOPS and STOPS[-1] is stop:
        STOPS.pop()
    if stop.exit_code is not None:
        session.exitstatus = stop.exit_code
    elif saving.failed:  # the run could not be saved (a full disk): the machine failed, its one line printed
        session.exitstatus = saving.exit_code


def add_device_options(group: Any) -> None:
    """The options of the worker counts and of the device layer (docs/device.md)."""
    group.addoption("--bench-workers", metavar="LIST", help="measure only these worker counts (0 always), e.g. 0,2,8")
    group.addoption("--bench-stand-in", action="store_true",
                    help="without CUDA, run the GPU members on the CPU, marked 'cpu stand-in' (the device dry run)")
    group.addoption("--bench-feed-pipeline", default="decoder=simplejpeg,batching=slots",
                    help="the device-feed case's decode pipeline: a spec or a decoders case id")
    group.addoption("--bench-feed-workers", type=int, help="the device-feed case's workers (default half the cores)")
    group.addoption("--bench-step-ms", type=float, default=20.0, help="the device-feed case's GPU step, ms (20)")


def bench_session(config: pytest.Config) -> Session:
    """What this session can and chose to run: its options (``--bench-*``, ``-k``) and this machine. A profile
    that selects its cases (``device``) gives the ``-k`` when the run names none. Raises LFWError on a bad
    ``--bench-workers``."""
    profile = PROFILES[config.getoption("--bench-profile")]
    if profile.keyword and not config.option.keyword:
        config.option.keyword = profile.keyword  # pytest deselects by it, and the saved selection says so
    layers = layers_on(profile, cost=config.getoption("--bench-cost"), remote=config.getoption("--bench-remote"),
                       peers=config.getoption("--bench-peers"), keyword=config.getoption("keyword") or "")
    cores, asked = usable_cores(), config.getoption("--bench-workers")
    workers = parse_counts(asked, "--bench-workers", fewest=1) if asked else (
        profile.worker_counts(cores) if profile.worker_counts else None)
    return Session(profile, layers, cores, torch.cuda.is_available(),
                   user_dataset=config.getoption("--bench-dataset"),
                   cache_mode=config.getoption("--bench-cache-mode"), skip_bad_images=config.getoption(SKIP_OPTION),
                   stand_in=config.getoption("--bench-stand-in"),
                   workers=None if workers is None else tuple(sorted({0, *workers})))


def selection(config: pytest.Config) -> Selection:
    """The run's selection, saved beside its cases: ``-k``, ``-m``, profile, layers, how each case ended."""
    bench, stop = config.stash[BENCH_SESSION], config.stash[STOP]
    return Selection(config.getoption("keyword") or "", config.getoption("markexpr") or "", bench.profile.name,
                     tuple(sorted(bench.layers)), dict(config.stash[OUTCOMES]), frozenset(config.stash[DESELECTED]),
                     stop.not_run, stop.why)


def narrow(reason: str) -> NoReturn:
    """``pytest.skip(reason)`` for a case the run's selection or machine leaves out (:class:`Narrowed`)."""
    raise Narrowed(reason)


def over_limit(reason: str) -> NoReturn:
    """Leave out a case that does not fit this machine's limits (:class:`OverLimit`), saying what it needs."""
    raise OverLimit(reason)


def skip_unless_fits(loader: Any, *, pinned_copy: bool = False) -> None:
    """Leave out (:func:`over_limit`) a case whose ``loader`` does not fit what this machine has now."""
    reason = shortfall(loader_need(loader, pinned_copy=pinned_copy), Limits.read())
    if reason:
        over_limit(reason)


def narrow_unless(config: pytest.Config, needs: Needs) -> None:
    """Skip, as a chosen narrowing, a case this session does not run (:func:`lfw.suite.skips.skip_reason`)."""
    reason = skip_reason(needs, config.stash[BENCH_SESSION])
    if reason:
        narrow(reason)


def benchmark_group(item: pytest.Item) -> str | None:
    """The pytest-benchmark group an item belongs to (its ``benchmark`` marker)."""
    marker = item.get_closest_marker("benchmark")
    return marker.kwargs.get("group") if marker is not None else None


def item_key(item: pytest.Item) -> str | None:
    """The case key (group and test id) of a benchmark item; None for a plain test."""
    group = benchmark_group(item)
    return case_key(group, item.name) if group else None


def item_case(item: pytest.Item) -> matrix.LoaderCase | None:
    """The matrix case a parametrized benchmark item runs; None for items outside the matrix."""
    group = matrix.GROUPS.get(benchmark_group(item) or "")
    callspec = getattr(item, "callspec", None)
    return group.case_for(callspec.params) if group is not None and callspec is not None else None


def selected_cases(session: pytest.Session, group: matrix.Group) -> list[matrix.LoaderCase]:
    """The cases of ``group`` this session runs: selected by ``-k``/``-m`` and not left out by the session."""
    bench = session.config.stash[BENCH_SESSION]
    cases = [item_case(item) for item in session.items if benchmark_group(item) == group.name]
    return [c for c in cases if c is not None and skip_reason(c.needs(), bench) is None]


def note_outcome(item: pytest.Item, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """Record how a benchmark case ended (the first thing that went wrong), so the gate knows what to expect."""
    key, outcomes = item_key(item), item.config.stash[OUTCOMES]
    if key is not None and not (report.passed and report.when != "call") and \
            outcomes.get(key, Outcome("passed")).status == "passed":
        outcomes[key] = outcome_of(report, call)


def relabel_narrowed(item: pytest.Item, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """Show a chosen skip as ``<test file>:<line>: narrowed: <reason>`` in pytest's summary, not as the
    exception's class path at the line that raised it."""
    if report.skipped and call.excinfo is not None and call.excinfo.errisinstance(Narrowed):
        path, line, _ = item.location
        report.longrepr = (path, (line or 0) + 1, f"narrowed: {call.excinfo.value.msg}")


def outcome_of(report: pytest.TestReport, call: pytest.CallInfo[None]) -> Outcome:
    """How a case ended, in the words the gate reads: passed, narrowed (a chosen skip), skipped, failed."""
    if report.skipped:
        narrowed = call.excinfo is not None and call.excinfo.errisinstance(Narrowed)
        if call.excinfo is not None and isinstance(call.excinfo.value, pytest.skip.Exception):
            reason = str(call.excinfo.value.msg)  # the reason alone, without the exception's class path
        else:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        limit = call.excinfo is not None and call.excinfo.errisinstance(OverLimit)
        return Outcome("narrowed" if narrowed else "skipped", reason.removeprefix("Skipped: "), limit)
    if report.failed:
        lines = report.longreprtext.strip().splitlines()
        return Outcome("failed", f"{report.when}: {lines[-1][:300] if lines else 'no message'}")
    return Outcome("passed")


def uniform_params(benchmark: Any, config: LoaderConfig, transform: str | None, index: str | None) -> None:
    """Give a case measured on its own the same knob params as every other case (its own knob values kept)."""
    benchmark.params = knob_params(config, transform=transform, index=index, case_params=benchmark.params)


def record(benchmark: Any, info: CaseRecord | Mapping[str, Any]) -> None:
    """The one way a case's record goes into ``benchmark.extra_info`` (mutated, never rebound: pytest-benchmark
    keeps the dict): a :class:`~lfw.results.record.CaseRecord`, or more keys of the case's record (a mapping, read
    as one), written by :meth:`CaseRecord.as_extra_info`, so every saved case carries ``schema_version``; its knobs
    go to ``benchmark.params`` instead, once (:func:`lfw.results.knobs.saved_form`)."""
    # Keys written now are this code's schema (a mapping saying a newer one is refused by from_extra_info).
    case = info if isinstance(info, CaseRecord) else replace(CaseRecord.from_extra_info(info),
                                                              schema_version=SCHEMA_VERSION)
    params, extra = saved_form(getattr(benchmark, "params", None) or {}, case.as_extra_info())
    benchmark.params = params  # rebound: pytest-benchmark's own dict is pytest's callspec
    for key, value in extra.items():
        benchmark.extra_info[key] = value


def progress_bar(total: int, desc: str) -> Any:
    """A rotation's progress bar, on stderr (pytest's capture is suspended around a rotation)."""
    return tqdm(total=total, desc=desc, unit="pass", leave=False, file=sys.stderr)


def note_machine_rates(config: pytest.Config, rotation: GroupRotation) -> None:
    """Record a rotation's per-core ceiling rates in ``machine_info`` (the first group to measure one wins)."""
    for name, rate in rotation.per_core_rates().items():
        config.stash[SESSION_FACTS].setdefault(K.per_core_machine_key(name), rate)


def skip_unless_remote_installed() -> None:
    """Skip (a gap the gate reports, not a chosen narrowing) when the remote layer's packages are missing."""
    missing = [m for m in ("moto", "boto3", "flask") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"remote layer not measured: {', '.join(missing)} not installed (the project's dependencies "
                    "bring moto[s3], boto3, flask and flask-cors)")


def group_rotations(request: pytest.FixtureRequest, bench: Session,
                    datasets: Datasets) -> Callable[[matrix.Group, bool], GroupRotation]:
    """The ``rotations`` fixture's work: ``get(group, timed)`` runs a group's rotation once, when its first test
    asks (pytest's capture suspended for its progress bar), and notes its per-core rates."""
    capture, done = request.config.pluginmanager.getplugin("capturemanager"), {}
    runner = GroupRunner(bench.profile, datasets, bench.cache_mode, bench.cores, progress=progress_bar,
                         endpoint=lambda: request.getfixturevalue("s3_endpoint"))

    def get(group: matrix.Group, timed: bool) -> GroupRotation:
        if group.name not in done:
            with capture.global_and_fixture_disabled():
                done[group.name] = runner.run(group, selected_cases(request.session, group), timed=timed)
            note_machine_rates(request.config, done[group.name])
        return done[group.name]

    return get


def dataset_facts(source: DataSource, bench: Session, user: Any) -> dict[str, Any]:
    """What ``machine_info`` records about the data: LFW's tree (real or synthetic), or the user's dataset."""
    screening = getattr(user, "screening", None) if bench.user_dataset else source.screening
    if bench.user_dataset:
        facts: dict[str, Any] = {"dataset_kind": "user", "dataset_path": bench.user_dataset, "dataset_files": len(user)}
    else:
        files, size = tree_stats(source.path)
        facts = {"dataset_kind": source.kind, "dataset_path": source.tree, "dataset_files": files,
                 "dataset_bytes": size}
    return {**facts, **(screening.facts() if screening else {}), "worker_cap": worker_cap(bench.cores)}


def record_rotated(request: pytest.FixtureRequest, benchmark: Any, bench: Session,
                   rotations: Callable[[matrix.Group, bool], GroupRotation]) -> dict[str, Any]:
    """The ``rotated_case`` fixture's work: run (or reuse) the test's group rotation, replay the case's pass times
    through pytest-benchmark, and record the case's ``extra_info``."""
    if request.config.getoption("benchmark_timer") != PASS_CLOCK:
        raise pytest.UsageError(f"rotated benchmarks replay their passes through --benchmark-timer={PASS_CLOCK} "
                                "(pytest.ini sets it); do not override --benchmark-timer")
    case = item_case(request.node)
    if case is None:
        raise pytest.UsageError(f"{request.node.name} uses rotated_case but is not a case of lfw.suite.matrix")
    narrow_unless(request.config, case.needs())
    rotation = rotations(matrix.GROUPS[case.group], benchmark.enabled)
    if case.id in rotation.left_out:
        over_limit(rotation.left_out[case.id])
    if case.id in rotation.unavailable:  # another project's loader that is not installed here, or cannot run
        pytest.skip(rotation.unavailable[case.id])
    mine = rotation.measured[case.id]
    if mine.error is not None:  # the group's other cases were measured all the same
        if mine.machine_failure:
            pytest.skip(f"not measured, the machine ran short: {mine.error}")
        pytest.fail(f"{case.id}: {mine.error}", pytrace=False)
    benchmark.params = knob_params(case.config, transform=case.transform, index=case.index,
                                   case_params=case.params)
    with pass_clock.replaying([r.wall_s for r in mine.results]) as next_pass:
        benchmark.pedantic(next_pass, rounds=len(mine.results), iterations=1, warmup_rounds=0)
    device = "cuda" if (case.copy_to_cuda or case.on_device) and torch.cuda.is_available() else "cpu"
    info = rotated_record(case, rotation, profile=bench.profile, cache_mode=bench.cache_mode, cores=bench.cores,
                          device=device)
    if case.on_device:  # a GPU member: where it really ran
        info[K.MEASURED_ON] = "cuda" if device == "cuda" else STAND_IN
    record(benchmark, info)
    return info


def measure_alone(benchmark: Any, bench: Session, datasets: Datasets, config: LoaderConfig,
                  transform: str = "none", index: str = "numpy", *, batches: int | None = None, dataset: Any = None,
                  memory_interval_s: float | None = DEFAULT_MEMORY_INTERVAL_S, mark_start: bool = False,
                  rounds: int | None = None, warmup_rounds: int = 1) -> dict[str, Any]:
    """The ``run_case`` fixture's work: ``warmup_rounds`` untimed passes, then ``rounds`` timed ones of one
    configuration (the memory experiments, which must not share the machine with another configuration's
    workers); records and returns the case's ``extra_info``."""
    ds = dataset if dataset is not None else datasets.preset(transform, index)
    loader = config.build(ds)
    skip_unless_fits(loader)
    runner = LoaderPass(loader, batches or bench.profile.batches_for(config.batch_size, transform),
                        memory_interval_s=memory_interval_s, mark_start=mark_start)
    return measure_rounds(benchmark, bench, runner, dataset_files(ds), config, transform, index,
                          rounds=rounds or bench.profile.rounds, warmup_rounds=warmup_rounds)


def measure_rounds(benchmark: Any, bench: Session, runner: LoaderPass, paths: list[str], config: LoaderConfig,
                   transform: str, index: str, *, rounds: int, warmup_rounds: int) -> dict[str, Any]:
    """``warmup_rounds`` untimed passes of ``runner``, then ``rounds`` timed ones, on a warm or cold page cache
    (``paths``: the files it reads); closes the runner, records and returns the case's ``extra_info`` (its knobs
    from ``config``, ``transform`` and ``index``). :attr:`LoaderPass.results` keeps every pass."""
    n_rounds, cache_mode = rounds, bench.cache_mode
    if cache_mode == "warm":
        warm(paths)
    uniform_params(benchmark, config, transform, index)

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
    record(benchmark, info)
    return info
