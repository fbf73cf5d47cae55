"""Spread over rounds (free of torch): :func:`mean_sd` from the saved per-round values, so every metric gets its
error bars the same way, and the knee rule every sweep shares (:func:`first_within`)."""

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


KNEE_TOLERANCE = 0.05  # a rate within 5% of the best is as good as the best: the knee's rule


def first_within(values: Sequence[float], tolerance: float = KNEE_TOLERANCE) -> int:
    """Index of the first of ``values`` at least ``1 - tolerance`` times the largest: in a sweep ordered by cost
    (worker counts, say), the cheapest that is as good as the best. ``values`` must not be empty."""
    top = max(values)
    return next(i for i, v in enumerate(values) if v >= (1 - tolerance) * top)
