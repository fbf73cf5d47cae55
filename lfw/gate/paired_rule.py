"""The A/B decision rule: per case and metric, a paired test over process pairs, a minimum effect, and Holm.

The unit of replication is a *process pair* (one fresh process per revision; why: docs/gating.md): its log
ratio over one randomized ABBA or BAAB quad is one observation. The rule is :data:`lfw.gate.thresholds.RULE_TEXT`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from lfw.gate.metrics import Metric
from lfw.stats.paired import Interval, hodges_lehmann, holm, signed_rank_interval, signed_rank_p

REGRESSED, OK, INCONCLUSIVE = "regressed", "ok", "inconclusive"


@dataclass(frozen=True)
class PairedInput:
    """One comparison's data: per-pair log ratios (current over base) and each side's per-pass values."""

    case: str
    metric: Metric
    log_ratios: tuple[float, ...]
    base_values: tuple[float, ...]
    current_values: tuple[float, ...]


@dataclass(frozen=True)
class PairedComparison:
    """The verdict on one comparison with the numbers behind it."""

    case: str
    metric: Metric
    pairs: int
    base_median: float
    current_median: float
    ratio: float  # Hodges-Lehmann estimate of current / base
    ratio_low: float
    ratio_high: float
    confidence: float
    p_value: float  # one-sided, "current is worse"
    p_holm: float
    threshold: float
    verdict: str

    @property
    def regressed(self) -> bool:
        return self.verdict == REGRESSED

    @property
    def improvement_bound(self) -> float:
        """The ratio current/base a notable improvement must pass: the threshold's factor the other way."""
        return math.exp(-self.metric.sign * worse_limit(self.metric, self.threshold))

    @property
    def improved(self) -> bool:
        """Reported, never judged: the estimate beyond :attr:`improvement_bound`, the interval on the better side."""
        sign = self.metric.sign
        estimate = sign * math.log(self.ratio)
        worst = max(sign * math.log(self.ratio_low), sign * math.log(self.ratio_high))
        return estimate < -worse_limit(self.metric, self.threshold) and worst < 0


def worse_limit(metric: Metric, threshold: float) -> float:
    """The threshold as a log worse-by: 10% slower is log(1/0.9), 25% later is log(1.25)."""
    return math.log1p(threshold) if metric.sign > 0 else -math.log1p(-threshold)


def decide(inputs: Sequence[PairedInput], thresholds: dict[str, float], *, alpha_look: float,
           confidence: float = 0.90) -> list[PairedComparison]:
    """Judge every comparison of one look; ``thresholds`` maps a metric family to its minimum effect."""
    signed = [[i.metric.sign * x for x in i.log_ratios] for i in inputs]
    p_values = [signed_rank_p(w, "greater") for w in signed]
    adjusted = holm(p_values)
    out = []
    for item, worse, p, p_adj in zip(inputs, signed, p_values, adjusted, strict=True):
        threshold = thresholds[item.metric.family]
        limit = worse_limit(item.metric, threshold)
        estimate = hodges_lehmann(worse)
        interval: Interval = signed_rank_interval(worse, confidence)
        verdict = (REGRESSED if p_adj <= alpha_look and estimate > limit
                   else OK if interval.high <= limit else INCONCLUSIVE)
        sign = item.metric.sign
        low, high = sorted((math.exp(sign * interval.low), math.exp(sign * interval.high)))
        out.append(PairedComparison(item.case, item.metric, len(worse), median(item.base_values),
                                    median(item.current_values), math.exp(sign * estimate), low, high,
                                    interval.confidence, p, p_adj, threshold, verdict))
    return out


def look_points(min_pairs: int, max_pairs: int, step: int) -> list[int]:
    """The pair counts at which the runner decides: ``min_pairs``, then every ``step``, ending at ``max_pairs``."""
    return sorted({*range(min_pairs, max_pairs, step), max_pairs})
