"""Paired statistics on a 1-D array of per-pair log ratios (a pair: one round of a rotation, one ABBA quad), exactly:
the Hodges-Lehmann estimate, its distribution-free interval and the one-sided test from the exact null
distribution of the Wilcoxon signed-rank statistic (Hollander & Wolfe), and Holm's adjustment. Free of torch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.stats import rankdata


def walsh_averages(x: Sequence[float]) -> np.ndarray:
    """All ``(x_i + x_j) / 2`` for ``i <= j``, sorted."""
    a = np.asarray(x, dtype=float)
    i, j = np.triu_indices(len(a))
    return np.sort((a[i] + a[j]) / 2)


def hodges_lehmann(x: Sequence[float]) -> float:
    """The Hodges-Lehmann estimate of the centre of ``x``: the median of its Walsh averages."""
    if len(x) == 0:
        raise ValueError("no pairs")
    return float(np.median(walsh_averages(x)))


@cache
def _null_counts(ranks: tuple[int, ...]) -> tuple[int, ...]:
    """How many of the ``2**len(ranks)`` sign patterns give each value ``0..sum(ranks)`` of the signed-rank sum
    T+ (the sum of the positive pairs' ranks: 1..n, or doubled average ranks where magnitudes tie)."""
    top = sum(ranks)
    counts = [1] + [0] * top
    for rank in ranks:
        for total in range(top, rank - 1, -1):
            counts[total] += counts[total - rank]
    return tuple(counts)


def _cdf(n: int, t: int) -> float:
    """P(T+ <= t) for ``n`` pairs without ties under the null hypothesis (symmetry about zero), exactly."""
    return sum(_null_counts(tuple(range(1, n + 1)))[: max(0, t + 1)]) / 2**n


@dataclass(frozen=True)
class Interval:
    """A confidence interval for the centre of the pairs and the confidence it really has."""

    low: float
    high: float
    confidence: float


def signed_rank_interval(x: Sequence[float], confidence: float = 0.90) -> Interval:
    """The Walsh-average interval ``[W_(k), W_(M+1-k)]`` with the largest ``k`` whose coverage is >= ``confidence``.

    ``M = n(n+1)/2``; the coverage of ``k`` is ``1 - 2 P(T+ <= k-1)``. When no ``k`` reaches ``confidence``
    (fewer than 5 pairs for 90%), the widest interval (``k = 1``, min and max of the Walsh averages) is given
    with the lower confidence it has.
    """
    n = len(x)
    if n == 0:
        raise ValueError("no pairs")
    walsh = walsh_averages(x)
    tail = (1 - confidence) / 2
    k = 1
    while k < len(walsh) // 2 + 1 and _cdf(n, k) <= tail:  # k + 1 still keeps each tail within ``tail``
        k += 1
    return Interval(float(walsh[k - 1]), float(walsh[len(walsh) - k]), 1 - 2 * _cdf(n, k - 1))


def signed_rank_p(x: Sequence[float], alternative: str = "greater") -> float:
    """Exact one-sided p-value of the Wilcoxon signed-rank test that the pairs' centre is > 0 (or < 0); zeros
    dropped, tied magnitudes on average ranks (the null distribution over doubled integer ranks)."""
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', not {alternative!r}")
    a = np.asarray(x, dtype=float)
    a = a[a != 0]
    n = len(a)
    if n == 0:
        return 1.0
    ranks2 = np.rint(2 * rankdata(np.abs(a))).astype(int)  # doubled average ranks are integers
    t_plus = int(ranks2[a > 0].sum())
    counts = _null_counts(tuple(sorted(int(r) for r in ranks2)))
    return sum(counts[t_plus:] if alternative == "greater" else counts[: t_plus + 1]) / 2**n


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: compare each to the family's alpha, and the family-wise error stays <= alpha."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return [float(v) for v in adjusted]
