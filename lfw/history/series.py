"""A runner's history as series (one per judged metric and case) and the change points found in each.

A series holds the runs that recorded the figure, in commit order: a case missing from some runs (another
profile, a layer not run) is a shorter series, never a zero. The rule applied follows the metric's family
(:mod:`lfw.history.changepoints`): exact steps for the deterministic counts, PELT confirmed by Welch's test for
the rest, with one Bonferroni family per summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lfw.gate.metrics import JUDGED, Metric
from lfw.gate.thresholds import Thresholds
from lfw.history.changepoints import ALPHA, MIN_RUNS, Step, exact_steps, statistical_steps
from lfw.history.store import HistoryRecord
from lfw.results import keys as K


def is_exact(metric: Metric) -> bool:
    """Counts (the gate's ``cost`` family) repeat within 0.06%: judged by exact steps."""
    return metric.family == "cost"


@dataclass(frozen=True)
class Series:
    """One metric of one case over a runner's history: ``runs`` index the runner's records, ``values`` the
    figure recorded by each."""

    runner: str
    metric: Metric
    case: str
    runs: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class ChangePoint:
    """A step in a series, placed on commits: ``commit`` is the first run on the new level, ``previous`` the last
    run before it; ``notes`` say what else changed there (the counted stack, a dirty tree)."""

    series: Series
    step: Step
    commit: HistoryRecord
    previous: HistoryRecord
    notes: tuple[str, ...] = ()

    @property
    def metric(self) -> Metric:
        return self.series.metric

    @property
    def case(self) -> str:
        return self.series.case


def series_of(runner: str, records: Sequence[HistoryRecord]) -> list[Series]:
    """Every (judged metric, case) the records hold, metrics in the gate's order, cases in first-seen order."""
    cases = list(dict.fromkeys(case for r in records for case in r.cases))
    out = []
    for metric in JUDGED:
        for case in cases:
            runs = [i for i, r in enumerate(records) if metric.key in r.cases.get(case, {})]
            if runs:
                out.append(Series(runner, metric, case, tuple(runs),
                                  tuple(records[i].cases[case][metric.key] for i in runs)))
    return out


def _notes(metric: Metric, before: HistoryRecord, after: HistoryRecord) -> tuple[str, ...]:
    notes = []
    if is_exact(metric):
        changed = [f"{k} {before.stack.get(k)} -> {after.stack.get(k)}" for k in K.COUNTED_STACK
                   if before.stack.get(k) != after.stack.get(k)]
        if changed:
            notes.append(f"counted stack changed: {', '.join(changed)}")
    elif (before.cpu, before.usable_cores) != (after.cpu, after.usable_cores):
        notes.append(f"machine changed: {before.cpu} x{before.usable_cores} -> {after.cpu} x{after.usable_cores}")
    dirty = [r.commit[:10] for r in (before, after) if r.dirty]
    if dirty:
        notes.append(f"dirty tree measured at {', '.join(dirty)}")
    return tuple(notes)


def statistical_family(series: Sequence[Series]) -> int:
    """How many series the statistical rule judges in one summary: its Bonferroni family."""
    return sum(1 for s in series if not is_exact(s.metric) and len(s.values) >= MIN_RUNS)


def change_points(records: Sequence[HistoryRecord], series: Sequence[Series], th: Thresholds,
                  family_size: int, alpha: float = ALPHA) -> list[ChangePoint]:
    """The change points of every series, each placed on its commits (see the module docstring)."""
    out = []
    for s in series:
        if is_exact(s.metric):
            steps = exact_steps(s.metric, s.values, th.cost)
        else:
            steps = statistical_steps(s.metric, s.values, family_size, alpha)
        for step in steps:
            after, before = records[s.runs[step.at]], records[s.runs[step.at - 1]]
            out.append(ChangePoint(s, step, after, before, _notes(s.metric, before, after)))
    return out

