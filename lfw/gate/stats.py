"""The decision rule: a metric regressed only if the change is both large and unlikely to be noise.

RULE_TEXT below is the rule as the CLI's --help prints it; the reasoning:

- *Effect size first.* On a shared 2-core VM the same code measured twice can differ by tens of percent
  between sessions (machine drift, neighbours), far more than the round-to-round spread inside one session
  suggests. A test on rounds alone would call such a shift "significant", so a change must first exceed a
  minimum size that a reviewer would care about.
- *Then evidence from the rounds.* A one-sided Mann-Whitney U test (rank-based, so one wild round cannot
  decide) asks whether the current rounds are worse than the baseline rounds. Its smallest possible p-value
  is ``1 / C(n_b + n_c, n_b)``: 0.05 for 3 vs 3 rounds (every current round worse than every baseline round),
  0.014 for 4 vs 4, 0.0003 for 7 vs 7. The test is used whenever it can reach ``alpha`` at all; with fewer
  rounds (the smoke profile's single round) the effect size decides alone and the table says so.
- *Memory and wait fraction are absolute.* Growth near 0 MiB makes ratios meaningless, so the increase of
  the median must exceed a floor in MiB (or in wait fraction) and a share of the baseline's magnitude.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from statistics import median

from scipy.stats import mannwhitneyu

from lfw.gate.metrics import Metric
from lfw.spread import coefficient_of_variation

RULE_TEXT = """\
decision rule, per case and metric (medians of the per-round values):
  regressed = large AND evidenced
  large:     throughput/efficiency: worse by more than --throughput-threshold (ratio of medians;
               10% between two files, 5% in --ab mode, where both sides share the machine's drift)
             time to first batch: worse by more than --ttfb-threshold
             memory growth: median grew by more than --memory-floor-mib AND by more than
               --memory-ratio x |baseline median| (ratios of growths near 0 MiB mean nothing)
             memory slope per epoch: --slope-floor-mib and --memory-ratio likewise
             data-wait fraction: grew by more than --wait-floor AND --wait-ratio x baseline
  evidenced: one-sided Mann-Whitney U on the rounds, p <= --alpha, whenever the rounds can reach
             --alpha at all (3 vs 3 rounds can reach p = 0.05 only if every current round is worse than
             every baseline round); with fewer rounds, effect size alone decides and the table says so"""


# A/B mode removes the between-session drift that dominates a two-file comparison, so it can afford half
# the minimum throughput effect: a 15% slower decode costs about 10% of throughput (decode is about 60% of
# the per-image work of the "none" preset here), which 10% would catch only half the time.
AB_THROUGHPUT = 0.05


@dataclass(frozen=True)
class Thresholds:
    """Minimum effect sizes and the test level; every field is a CLI flag.

    Defaults, from A/A and slowed pairs measured on the project's 2-core VM (README, regression gating):
    throughput 10% two-file (asv's default factor 1.1; sessions minutes apart drift more than that) and 5% in
    A/B mode; time to first batch +100% (it includes forking workers, the most contention-sensitive part of
    a pass: A/A pairs moved it by +50% to +230%, so only gross start-up regressions, such as spawn instead of
    fork or a heavy worker_init_fn, are gated); memory +100 MiB (A/A medians moved by up to 61 MiB, while the
    copy-on-access regression of a list index adds hundreds of MiB per worker).
    """

    throughput: float = 0.10
    ttfb: float = 1.00
    memory_floor_mib: float = 100.0
    memory_ratio: float = 0.25
    slope_floor_mib: float = 8.0
    wait_floor: float = 0.05
    wait_ratio: float = 0.25
    alpha: float = 0.05


@dataclass(frozen=True)
class Comparison:
    """One metric of one case: medians, change, the noise it was judged against, and the verdict."""

    case: str
    metric: Metric
    baseline: float
    current: float
    change: float  # relative (+0.12 = 12% higher) for relative metrics, current - baseline otherwise
    p_value: float | None  # None: too few rounds for the test to reach alpha
    n_baseline: int
    n_current: int
    baseline_spread: float  # CV of the baseline rounds (relative metrics) or their range (absolute)
    large: bool
    regressed: bool

    @property
    def worse_by(self) -> float:
        """The change in the metric's bad direction (positive = worse)."""
        return self.change if self.metric.worse == "higher" else -self.change


def min_p_value(n_baseline: int, n_current: int) -> float:
    """The smallest one-sided exact Mann-Whitney p-value these sample sizes can produce."""
    return 1.0 / math.comb(n_baseline + n_current, n_baseline)


def p_worse(metric: Metric, baseline: list[float], current: list[float]) -> float:
    """One-sided Mann-Whitney U p-value for "current is worse than baseline" (1.0 when undefined)."""
    alternative = "greater" if metric.worse == "higher" else "less"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-tied samples: p is nan, handled below
        p = float(mannwhitneyu(current, baseline, alternative=alternative).pvalue)
    return 1.0 if math.isnan(p) else p


def spread(metric: Metric, values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    if metric.kind == "absolute":
        return float(max(values) - min(values))
    return coefficient_of_variation(values)


def is_large(metric: Metric, base: float, cur: float, change: float, th: Thresholds) -> bool:
    """Whether the change is beyond the metric's minimum effect size, in its bad direction."""
    if metric.kind == "relative":
        worse = change if metric.worse == "higher" else -change
        return worse > (th.ttfb if metric.family == "ttfb" else th.throughput)
    increase = (cur - base) if metric.worse == "higher" else (base - cur)
    floor = {"memory": th.memory_floor_mib, "slope": th.slope_floor_mib, "wait": th.wait_floor}[metric.family]
    ratio = th.wait_ratio if metric.family == "wait" else th.memory_ratio
    return increase > floor and increase > ratio * abs(base)


def relative_change(base: float, cur: float) -> float:
    if base == 0:
        return 0.0 if cur == 0 else math.copysign(math.inf, cur)
    return cur / base - 1.0


def judge(case: str, metric: Metric, baseline: list[float], current: list[float],
          th: Thresholds | None = None) -> Comparison:
    """Compare one metric of one case under the rule in this module's docstring."""
    th = th or Thresholds()
    base, cur = float(median(baseline)), float(median(current))
    change = relative_change(base, cur) if metric.kind == "relative" else cur - base
    large = is_large(metric, base, cur, change, th)
    testable = min_p_value(len(baseline), len(current)) <= th.alpha
    p = p_worse(metric, baseline, current) if testable else None
    regressed = large and (p is None or p <= th.alpha)
    return Comparison(case, metric, base, cur, change, p, len(baseline), len(current),
                      spread(metric, baseline), large, regressed)
