"""Change points in a history: where a judged figure stepped, and the first commit after the step.

Two rules, chosen by what the gate knows about each metric family (:mod:`lfw.gate.metrics`), both described and
measured in docs/history.md, "The change-point rules":

- **Counts** (family ``cost``) repeat within 0.06% for the same code, so a step is exact: consecutive runs that
  differ by more than the gate's cost threshold, either way (:func:`exact_steps`).
- **Wall clock and memory** are noisy, and one run gives one value (its median), so a change point needs several
  runs on each side: PELT proposes (:func:`propose`, SIC penalty from a robust noise σ) and Welch's t-test
  confirms at ``alpha / (m (n - 1))`` (:func:`confirm`). The penalty alone names a step in a good share of
  pure-noise series, and a summary judges hundreds; the confirmation holds the chance of one false step in a
  whole summary near ``alpha``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from lfw.gate.metrics import Metric

EXACT, PELT = "exact step", "PELT"
ALPHA = 0.05  # chance of naming one false step in a summary's statistical series
MIN_SEGMENT = 2  # runs on each side of a statistical change point
MIN_RUNS = 2 * MIN_SEGMENT


@dataclass(frozen=True)
class Step:
    """A change point at ``at`` (the index of the first run on the new level) of one series.

    ``before``/``after`` are the two consecutive values (exact rule) or the medians of the two neighbouring
    segments (PELT), over ``runs_before`` and ``runs_after`` runs; ``change`` is relative (``after / before - 1``)
    for relative metrics and a difference in the metric's unit for absolute ones; ``p_value`` is the
    confirmation's (None for exact steps).
    """

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
    """σ of the noise, from the median absolute first difference: steps are few, so they barely move it.

    The normal-scaled MAD of the first differences over √2 (a difference holds two runs' noise); NaN for fewer
    than 2 values, which have no difference.
    """
    if len(x) < 2:
        return math.nan
    return float(stats.median_abs_deviation(np.diff(x), scale="normal")) / math.sqrt(2)


def welch_p(left: np.ndarray, right: np.ndarray) -> float:
    """Two-sided p-value of Welch's t-test (``scipy.stats.ttest_ind`` with unequal variances).

    Two constant segments have no variance to test: they are a certain step (0.0) if their levels differ and
    none (1.0) if they agree. One constant segment is an exact level, not the near-identical data that scipy's
    precision-loss warning is about, so that warning is silenced.
    """
    if float(left.var()) + float(right.var()) == 0:
        return 0.0 if float(left.mean()) != float(right.mean()) else 1.0
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        return float(stats.ttest_ind(left, right, equal_var=False).pvalue)


def propose(x: np.ndarray) -> list[int]:
    """PELT's change points of ``x`` (indices where a new segment starts), SIC penalty from the noise σ."""
    import ruptures as rpt  # type: ignore[import-untyped]

    n = len(x)
    sigma = max(noise_sigma(x), 1e-12 * max(1.0, float(np.abs(x).max())))
    penalty = 2 * sigma ** 2 * math.log(n)
    # KernelCPD with the linear kernel is PELT with the l2 cost, in C: the same change points as
    # rpt.Pelt(model="l2"), and a 1,000-run series in milliseconds instead of seconds (docs/history.md).
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
        before = float(np.median(raw[bounds[i]:start]))
        after = float(np.median(raw[start:bounds[i + 2]]))
        steps.append(Step(start, before, after, metric.change(before, after), PELT, p, start - bounds[i],
                          bounds[i + 2] - start))
    return steps
