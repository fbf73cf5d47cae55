"""The recommended num_workers per transform: the knee, decided on paired ratios, with its uncertainty.

The knee is the fewest workers within ``tolerance`` (5%) of the best. Each count's paired ratio to the best
(:mod:`lfw.results.ratios`) is *within* when its interval lies at or above ``1 - tolerance``, *worse* below it,
*unresolved* when it straddles it. The fewest *within* wins if every count with fewer workers is *worse*; otherwise
**no clear winner**, naming the counts not separated. Unrotated runs fall back to medians (docs/reports.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import NUM_WORKERS
from lfw.results.ratios import Ratio, ratio
from lfw.stats.variation import KNEE_TOLERANCE, first_within

GROUP = "workers-transform"
Standing = Literal["best", "within", "worse", "unresolved", "unpaired"]  # see the module docstring


@dataclass(frozen=True)
class Candidate:
    """One worker count: its case, its ratio to the best (None when unpaired) and how it compares."""

    workers: int
    case: Case
    ratio: Ratio | None
    standing: Standing


@dataclass(frozen=True)
class Recommendation:
    """The knee of one transform: ``workers`` (None: no clear winner), the tied counts, every candidate."""

    transform: str
    workers: int | None
    best: Candidate
    candidates: list[Candidate]
    tied: list[int] = field(default_factory=list)
    paired: bool = True

    def verdict(self) -> str:
        """``2`` or ``no clear winner (0, 2)`` ."""
        if self.workers is None:
            return f"no clear winner ({', '.join(map(str, self.tied))})"
        return str(self.workers)

    def evidence(self) -> str:
        """Each candidate's ratio to the best with its interval, fewest workers first."""
        return "; ".join(f"{c.workers}: " + ("best" if c.standing == "best" else c.ratio.text() if c.ratio else
                                               "unpaired") for c in self.candidates)


def scaling_cases(run: Run) -> dict[str, list[Case]]:
    """Cases of the workers group by transform, each list ordered by worker count."""
    by_transform: dict[str, list[Case]] = {}
    for case in run.group(GROUP):
        if case.knob(NUM_WORKERS) is not None and case.number(K.IMAGES_PER_S) is not None:
            by_transform.setdefault(str(case.knob(KN.TRANSFORM, "none")), []).append(case)
    return {t: sorted(cs, key=lambda c: c.knob(NUM_WORKERS, 0)) for t, cs in by_transform.items()}


def standing_to_best(r: Ratio | None, tolerance: float) -> Standing:
    if r is None:
        return "unpaired"
    if r.low >= 1 - tolerance:
        return "within"
    return "worse" if r.high < 1 - tolerance else "unresolved"


def recommend(transform: str, cases: Iterable[Case], tolerance: float = KNEE_TOLERANCE) -> Recommendation | None:
    """The knee of one transform's worker sweep (see the module docstring); None for fewer than two worker
    counts measured (a small /dev/shm may leave only ``workers0``): there is nothing to choose between."""
    cases = sorted(cases, key=lambda c: c.knob(NUM_WORKERS, 0))
    if len(cases) < 2:
        return None
    best_case = max(cases, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0)
    candidates = []
    for case in cases:
        r = None if case is best_case else ratio(case, best_case)
        standing: Standing = "best" if case is best_case else standing_to_best(r, tolerance)
        candidates.append(Candidate(case.knob(NUM_WORKERS, 0), case, r, standing))
    best = next(c for c in candidates if c.standing == "best")
    if any(c.standing == "unpaired" for c in candidates):  # no paired rounds: the knee by medians
        knee = candidates[first_within([c.case.number(K.IMAGES_PER_S) or 0.0 for c in candidates], tolerance)]
        return Recommendation(transform, knee.workers, best, candidates, paired=False)
    tied: list[int] = []
    for c in candidates:
        if c.standing in ("within", "best"):
            if tied:
                return Recommendation(transform, None, best, candidates, [*tied, c.workers])
            return Recommendation(transform, c.workers, best, candidates)
        if c.standing == "unresolved":
            tied.append(c.workers)
    raise AssertionError("the best configuration is always within tolerance of itself")


def recommendations(run: Run, tolerance: float = KNEE_TOLERANCE) -> list[Recommendation]:
    """One recommendation per transform of the workers group, in the order the transforms ran."""
    found = [recommend(t, cs, tolerance) for t, cs in scaling_cases(run).items()]
    return [r for r in found if r is not None]
