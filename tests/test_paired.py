"""Paired statistics: Hodges-Lehmann, the signed-rank interval and test, Holm, against known values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import wilcoxon

from lfw.stats.paired import hodges_lehmann, holm, signed_rank_interval, signed_rank_p, walsh_averages


def test_walsh_averages_and_hodges_lehmann() -> None:
    assert list(walsh_averages([1.0, 3.0])) == [1.0, 2.0, 3.0]
    # Walsh averages of 1, 2, 9: 1, 1.5, 2, 5, 5.5, 9 -> median 3.5 (the mean, 4, is pulled by the 9)
    assert hodges_lehmann([1.0, 2.0, 9.0]) == pytest.approx(3.5)
    with pytest.raises(ValueError):
        hodges_lehmann([])


def null_cdf(n: int, t: int) -> float:
    """P(T+ <= t) by enumerating all 2**n sign patterns: the definition, independent of the code's recursion."""
    return sum(sum(r for r in range(1, n + 1) if mask >> (r - 1) & 1) <= t for mask in range(2**n)) / 2**n


@pytest.mark.parametrize("n, confidence, k", [
    (10, 0.90, 11),  # tables: P(T+ <= 10) = 0.042 <= 0.05 < P(T+ <= 11) = 0.053
    (5, 0.85, 2),    # the report's level: second-smallest to second-largest Walsh average, 87.5%
    (5, 0.90, 1),    # 90% with 5 pairs: the whole range, 93.75%
    (3, 0.90, 1),    # out of reach: the widest interval and the confidence it really has, 75%
])
def test_signed_rank_interval_picks_the_order_statistics_of_the_tables(n: int, confidence: float, k: int) -> None:
    x = list(np.linspace(-1.0, 2.0, n) ** 3)
    walsh = walsh_averages(x)
    interval = signed_rank_interval(x, confidence)
    assert (interval.low, interval.high) == (walsh[k - 1], walsh[len(walsh) - k])
    assert interval.confidence == pytest.approx(1 - 2 * null_cdf(n, k - 1))


def test_signed_rank_interval_covers_the_centre_at_its_level() -> None:
    """Coverage by simulation: pairs centred on 0.1, the 90% interval contains 0.1 about 90% of the time."""
    rng = np.random.default_rng(3)
    hits = [signed_rank_interval(list(rng.standard_t(4, 12) + 0.1), 0.90) for _ in range(2000)]
    coverage = np.mean([i.low <= 0.1 <= i.high for i in hits])
    assert 0.88 <= coverage <= 0.95 and all(i.confidence >= 0.90 for i in hits)


def test_signed_rank_p_is_scipys_exact_test() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        x = list(rng.normal(0.3, 1.0, 9))
        for alternative in ("greater", "less"):
            expected = wilcoxon(x, alternative=alternative, method="exact").pvalue
            assert signed_rank_p(x, alternative) == pytest.approx(expected)


def test_signed_rank_p_extremes_and_ties() -> None:
    assert signed_rank_p([0.1] * 10, "greater") == pytest.approx(2 ** -10)  # all positive: the smallest p
    assert signed_rank_p([0.0, 0.0], "greater") == 1.0  # zeros carry no sign
    assert 0 < signed_rank_p([1.0, 1.0, -1.0, 2.0], "greater") < 1  # tied magnitudes get average ranks
    with pytest.raises(ValueError):
        signed_rank_p([1.0], "two-sided")


def test_holm_step_down() -> None:
    # sorted p: 0.01, 0.02, 0.03, 0.04 -> x4, x3, x2, x1 = 0.04, 0.06, 0.06 (monotone), 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.9, 0.8]) == [1.0, 1.0]
    assert not math.isnan(holm([0.0])[0])
