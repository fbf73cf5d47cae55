"""Spread over rounds, shared by the summaries, the gate and the report (kept free of torch imports).

The report's error bars are the sample standard deviation over rounds (:func:`mean_sd`), computed from the saved
per-round values rather than taken from pytest-benchmark's ``stddev``, so that images/s, time to first batch and
memory all get their bars the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean, stdev


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single round: no spread is known, none is drawn)."""
    if not values:
        return float("nan"), 0.0
    return mean(values), (stdev(values) if len(values) > 1 else 0.0)


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample standard deviation over the absolute mean (0 for fewer than two values or a zero mean)."""
    if len(values) < 2:
        return 0.0
    centre, sd = mean_sd(values)
    return sd / abs(centre) if centre else 0.0
