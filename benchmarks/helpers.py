"""The pytest side of the benchmarks, plain functions: which cases a session runs, how a case that is left out
says why, how each case ended, and how a record goes into ``benchmark.extra_info``. The engine they drive is
:mod:`lfw.suite`; the hooks and fixtures that use them are :mod:`benchmarks.plugin`.
"""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from lfw.results import Outcome, case_key
from lfw.suite import matrix
from lfw.suite.skips import Needs, Session, skip_reason

SESSION_FACTS: pytest.StashKey[dict[str, Any]] = pytest.StashKey()  # machine_info additions learned by fixtures
BENCH_SESSION: pytest.StashKey[Session] = pytest.StashKey()  # what this session can and chose to run


class Narrowed(pytest.skip.Exception):  # type: ignore[misc,name-defined]
    """A skip the run chose: the profile or a layer leaves the case out, or this machine cannot run it (cores,
    a CUDA device, a start method). The gate does not expect such a case; any other skip of a case the baseline
    has is a gap it reports (see :class:`lfw.results.Outcome`)."""


def narrow(reason: str) -> NoReturn:
    """``pytest.skip(reason)`` for a case the run's selection or machine leaves out (:class:`Narrowed`)."""
    raise Narrowed(reason)


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


def outcome_of(report: pytest.TestReport, call: pytest.CallInfo[None]) -> Outcome:
    """How a case ended, in the words the gate reads: passed, narrowed (a chosen skip), skipped, failed."""
    if report.skipped:
        narrowed = call.excinfo is not None and call.excinfo.errisinstance(Narrowed)
        if call.excinfo is not None and isinstance(call.excinfo.value, pytest.skip.Exception):
            reason = str(call.excinfo.value.msg)  # the reason alone, without the exception's class path
        else:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return Outcome("narrowed" if narrowed else "skipped", reason.removeprefix("Skipped: "))
    if report.failed:
        lines = report.longreprtext.strip().splitlines()
        return Outcome("failed", f"{report.when}: {lines[-1][:300] if lines else 'no message'}")
    return Outcome("passed")


def record(benchmark: Any, info: dict[str, Any]) -> None:
    """Put every value into ``benchmark.extra_info`` (mutated, never rebound: pytest-benchmark keeps the dict)."""
    for key, value in info.items():
        benchmark.extra_info[key] = value
