"""Paired ratios between two configurations of one rotation: the comparison the report draws and recommends by.

Round r of one case pairs with round r of another (:mod:`lfw.measure.rotation`): the Hodges-Lehmann estimate of
their log ratios and its signed-rank interval (:mod:`lfw.stats.paired`) at :data:`CONFIDENCE`, its real confidence kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lfw.results import Case
from lfw.results import keys as K
from lfw.stats.paired import hodges_lehmann, signed_rank_interval
from lfw.stats.variation import coefficient_of_variation


def share_text(case: Case, key: str) -> str:
    """``93% (rounds 91%-95%)``: a share's median and the range of its rounds (the median alone with one round)."""
    rounds = case.rounds(key)
    spread = f" (rounds {min(rounds):.0%}-{max(rounds):.0%})" if len(rounds) > 1 else ""
    return f"{case.number(key) or 0.0:.0%}{spread}"


CONFIDENCE = 0.85  # 5 rounds: 2nd-smallest to 2nd-largest Walsh average, 87.5% (90%: the full range)
MIN_ROUNDS = 3  # fewer paired rounds give an interval with no useful confidence (2 rounds: 50%)


@dataclass(frozen=True)
class Ratio:
    """``case`` over ``reference``, paired by round: estimate, interval and the interval's real confidence."""

    estimate: float
    low: float
    high: float
    confidence: float
    rounds: int

    def text(self) -> str:
        return f"{self.estimate:.2f} [{self.low:.2f}, {self.high:.2f}]"


def rotation_of(case: Case) -> tuple[object, ...] | None:
    """What identifies the rotation a case ran in (group, seed, rounds, members), or None if it was not rotated."""
    info = case.extra.get(K.ROTATION)
    if not isinstance(info, dict):
        return None
    return (info.get("group"), info.get("seed"), info.get(K.ROUNDS), tuple(info.get("members") or ()))


def paired(a: Case, b: Case) -> bool:
    """True when ``a`` and ``b`` ran in the same rotation, so their rounds pair up one to one."""
    rotation = rotation_of(a)
    return rotation is not None and rotation == rotation_of(b) and len(a.rounds(K.IMAGES_PER_S)) == len(
        b.rounds(K.IMAGES_PER_S))


def ratio(case: Case, reference: Case, metric: str = K.IMAGES_PER_S, confidence: float = CONFIDENCE) -> Ratio | None:
    """The paired ratio ``case / reference`` of ``metric``; None unless the two cases are paired by round."""
    if not paired(case, reference):
        return None
    a, b = case.rounds(metric), reference.rounds(metric)
    if len(a) < MIN_ROUNDS or len(a) != len(b) or min(a + b) <= 0:
        return None
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    interval = signed_rank_interval(logs, confidence)
    return Ratio(math.exp(hodges_lehmann(logs)), math.exp(interval.low), math.exp(interval.high),
                 interval.confidence, len(logs))


def ratio_cv(case: Case, reference: Case, metric: str = K.IMAGES_PER_S) -> float | None:
    """Coefficient of variation of the per-round ratios (the paired noise), None unless paired."""
    if not paired(case, reference) or case is reference:
        return None
    values = [x / y for x, y in zip(case.rounds(metric), reference.rounds(metric), strict=True) if y > 0]
    return coefficient_of_variation(values) if len(values) >= 2 else None
