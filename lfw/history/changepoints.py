"""Change points in a history: its series (one per judged metric and case, the runs that recorded it, in commit
order), where each stepped, and the first commit after the step.

Counts (family ``cost``) step exactly (:func:`exact_steps`); wall clock and memory need several runs a side: PELT
proposes (:func:`propose`) and Welch's t-test confirms at ``alpha / (m (n - 1))`` (:func:`confirm`), one
Bonferroni family per summary. The rules and their measured error rates: docs/history.md, "The change-point rules".
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lfw.gate.metrics import JUDGED, Metric
from lfw.gate.thresholds import Thresholds
from lfw.history.store import HistoryRecord
from lfw.results import keys as K

EXACT, PELT = "exact step", "PELT"
ALPHA = 0.05  # chance of naming one false step in a summary's statistical series
MIN_SEGMENT = 2  # runs on each side of a statistical change point
MIN_RUNS = 2 * MIN_SEGMENT


@dataclass(frozen=True)
class Step:
    """A change point at ``at`` (the first run on the new level): the two values (exact rule) or the medians of
    the neighbouring segments (PELT) over ``runs_before``/``runs_after`` runs, their change as the metric
    measures it, and the confirmation's ``p_value`` (None for exact steps)."""

    at: int
    before: float
    after: float
    change: float
    method: str
    p_value: float | None = None
    runs_before: int = 1
    runs_after: int = 1


def exact_steps(metric: Metric, values: Sequence[float], threshold: float) -> list[Step]:
    """Consecutive values that differ by more than ``threshold`` relative to the earlier one (either way)."""
    changes = [(i, metric.change(values[i - 1], values[i])) for i in range(1, len(values))]
    return [Step(i, values[i - 1], values[i], change, EXACT) for i, change in changes if abs(change) > threshold]


def noise_sigma(x: np.ndarray) -> float:
    """σ of the noise: the normal-scaled MAD of the first differences over √2 (few steps barely move it); NaN
    for fewer than 2 values."""
    if len(x) < 2:
        return math.nan
    return float(stats.median_abs_deviation(np.diff(x), scale="normal")) / math.sqrt(2)


def welch_p(left: np.ndarray, right: np.ndarray) -> float:
    """Two-sided p-value of Welch's t-test; two constant segments are a certain step (0.0) or none (1.0), and
    scipy's precision-loss warning about one constant segment is silenced."""
    if float(left.var()) + float(right.var()) == 0:
        return 0.0 if float(left.mean()) != float(right.mean()) else 1.0
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        return float(stats.ttest_ind(left, right, equal_var=False).pvalue)


def propose(x: np.ndarray) -> list[int]:
    """PELT's change points of ``x`` (indices where a new segment starts), SIC penalty from the noise σ."""
    import ruptures as rpt  # type: ignore[import-untyped]

    sigma = max(noise_sigma(x), 1e-12 * max(1.0, float(np.abs(x).max())))
    penalty = 2 * sigma ** 2 * math.log(len(x))
    # KernelCPD with the linear kernel: PELT with the l2 cost, in C (docs/history.md).
    ends = rpt.KernelCPD(kernel="linear", min_size=MIN_SEGMENT, jump=1).fit(x.reshape(-1, 1)).predict(pen=penalty)
    return [int(b) for b in ends[:-1]]


def confirm(x: np.ndarray, starts: list[int], level: float) -> list[tuple[int, float]]:
    """The proposed change points that pass Welch's test at ``level`` against their neighbouring segments, with
    their p-values; the least significant failure is dropped and the rest re-tested."""
    starts = sorted(starts)
    while starts:
        bounds = [0, *starts, len(x)]
        ps = [welch_p(x[bounds[i]:bounds[i + 1]], x[bounds[i + 1]:bounds[i + 2]]) for i in range(len(starts))]
        worst = int(np.argmax(ps))
        if ps[worst] <= level:
            return list(zip(starts, ps, strict=True))
        del starts[worst]
    return []


def statistical_steps(metric: Metric, values: Sequence[float], series_count: int,
                      alpha: float = ALPHA) -> list[Step]:
    """PELT-proposed, Welch-confirmed change points of a noisy series (module docstring); ``series_count`` is the
    number of series judged this way in the same summary (the Bonferroni family). Fewer than :data:`MIN_RUNS`
    values give none."""
    n = len(values)
    if n < MIN_RUNS:
        return []
    raw = np.asarray(values, dtype=float)
    logged = metric.kind == "relative" and bool((raw > 0).all())
    x = np.log(raw) if logged else raw
    level = alpha / (max(series_count, 1) * (n - 1))
    found = confirm(x, propose(x), level)
    steps = []
    bounds = [0, *(s for s, _ in found), n]
    for i, (start, p) in enumerate(found):
        before, after = float(np.median(raw[bounds[i]:start])), float(np.median(raw[start:bounds[i + 2]]))
        steps.append(Step(start, before, after, metric.change(before, after), PELT, p, start - bounds[i],
                          bounds[i + 2] - start))
    return steps


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
        steps = (exact_steps(s.metric, s.values, th.cost) if is_exact(s.metric)
                 else statistical_steps(s.metric, s.values, family_size, alpha))
        for step in steps:
            after, before = records[s.runs[step.at]], records[s.runs[step.at - 1]]
            out.append(ChangePoint(s, step, after, before, _notes(s.metric, before, after)))
    return out

