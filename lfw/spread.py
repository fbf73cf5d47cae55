"""Spread over rounds, shared by the summaries, the gate and the report (kept free of torch imports)."""

from __future__ import annotations

from statistics import mean, stdev


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single round: no spread is known, none is drawn)."""
    if not values:
        return float("nan"), 0.0
    return mean(values), (stdev(values) if len(values) > 1 else 0.0)


def coefficient_of_variation(values: list[float]) -> float:
    """Sample standard deviation over the absolute mean (0 for fewer than two values or a zero mean)."""
    if len(values) < 2:
        return 0.0
    centre, sd = mean_sd(values)
    return sd / abs(centre) if centre else 0.0
