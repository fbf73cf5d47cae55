"""Minimum effects of the gate, the rule as ``--help`` prints it, and checks on user-given values.

The two-file defaults sit beyond the worst move of unchanged code in the calibration runs
(``benchmarks/gate_rates/calibration/gate.jsonl``, docs/gating.md); the A/B ones are finer (shared drift).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from lfw.errors import LFWError
from lfw.gate.metrics import Metric

RULE_TEXT = """\
decision rule

  two files (BASELINE.json CURRENT.json; each case decided by effect size against thresholds set from
  measured between-session drift: rounds of one session share its speed, so no test over rounds is valid)
    cost layer   instructions per image (callgrind; judged wherever the counted stack of valgrind, Python and
                 the libraries matches), and remote requests per image: higher by more than --cost-threshold
    wall clock   gross regressions only, cases with 3 or more rounds: efficiency (images/s over the same
                 round's ceiling) lower by more than --efficiency-threshold; time to first batch (x the
                 single-core rate of the same round) higher by more than --ttfb-threshold AND later by more
                 than --ttfb-floor-ms; finer changes need --ab
    memory       what each pass adds: tree PSS growth and peak over the tree before the pass, higher by more
                 than --memory-floor-mib AND --memory-ratio x |baseline|; worker USS and its growth: likewise
                 with --worker-floor-mib; leak check step per epoch: --slope-floor-mib. The host process
                 before the pass is not judged (a change beyond the floor is a note).
    data wait    fraction of a training loop spent waiting, over what the run's own rates predict for it
                 (the simulator, from the same round's single-core rate and parallel capacity, so a slower
                 machine is not a regression): higher by more than --wait-floor AND --wait-ratio x baseline
    A layer that cannot be judged (no instruction counts in a run, valgrind missing) is named on its own line;
    --require-cost-layer turns that into exit 2.

  A/B (--ab REV; pass-interleaved, the unit is a pair of fresh processes, one per revision)
    per case and metric: log ratio current/base of each pair (mean over its ABBA or BAAB quad)
    regressed     one-sided exact Wilcoxon signed-rank over the pairs, Holm-adjusted over all comparisons
                  of the run, p <= alpha / looks, AND Hodges-Lehmann estimate beyond the threshold
                  (--ab-throughput-threshold for images/s, --ab-ttfb-threshold for time to first batch)
    ok            the 90% signed-rank interval rules out a change as large as the threshold
    inconclusive  neither: "noisy: rerun", exit 3
    looks         decided after --min-pairs pairs and every --look-every pairs up to --max-pairs; stops at a
                  regression or when nothing is inconclusive; each look spends alpha / looks (Bonferroni)

  family-wise: A/B controls the false-alarm rate per gate run at --alpha (Holm over comparisons, Bonferroni
  over looks). Two-file decisions are thresholds, not tests; their per-run false-alarm rate is measured by
  `make gate-rates` (A/A runs against the committed baseline) and stated in docs/gating.md.

  nothing compared is never a pass: a baseline case the run should have held (collected, selected, not left
  out by its profile, layers or this machine) but does not hold is a gap, named with its outcome (not
  collected, failed, skipped and why); a gap, or zero comparisons, is exit 5; --accept-missing accepts a
  removal by name

exit codes: 0 no regression; 1 regression (the table names each); 2 unusable input (missing or corrupt
file, unknown revision, a layer that --require-cost-layer needs); 3 A/B inconclusive (noisy: rerun);
4 measurement failed (a side crashed or timed out, valgrind failed); 5 incomplete (a gap, nothing
compared, an incomplete run, or runs that skipped different numbers of unreadable images)"""


@dataclass(frozen=True)
class Thresholds:
    """Minimum effects and the test level; every field is a CLI flag (``--cost-threshold``, ...)."""

    cost: float = 0.03
    efficiency: float = 0.40
    ttfb: float = 1.50
    # A first batch must also come later by this much: one of a few ms moves by multiples (docs/gating-measured.md)
    ttfb_floor_ms: float = 50.0
    memory_floor_mib: float = 100.0
    memory_ratio: float = 0.25
    worker_floor_mib: float = 64.0
    slope_floor_mib: float = 4.0  # the leak check's own threshold (lfw.measure.leak.LEAK_THRESHOLD_MIB_PER_EPOCH)
    wait_floor: float = 0.10  # over the predicted fraction; its calibration: docs/gating-measured.md
    wait_ratio: float = 0.50
    ab_throughput: float = 0.05
    ab_ttfb: float = 0.25
    alpha: float = 0.05

    def __post_init__(self) -> None:
        bad = [k for k, v in asdict(self).items() if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0)]
        if bad:
            raise LFWError(f"thresholds must be finite numbers >= 0: check {', '.join(bad)}")
        if not 0 < self.alpha < 1:
            raise LFWError(f"--alpha must be between 0 and 1, got {self.alpha:g}")
        too_big = [k for k in ("efficiency", "ab_throughput") if getattr(self, k) >= 1]
        if too_big:
            raise LFWError(f"a throughput threshold is a share of the baseline, below 1: check {', '.join(too_big)}")

    def relative(self, metric: Metric) -> float:
        """The two-file minimum effect of a relative metric (a share of the baseline)."""
        return {"cost": self.cost, "throughput": self.efficiency, "ttfb": self.ttfb}[metric.family]

    def absolute(self, metric: Metric) -> tuple[float, float]:
        """(floor, ratio) of an absolute metric: the increase must exceed both floor and ratio x |baseline|."""
        return {"memory": (self.memory_floor_mib, self.memory_ratio),
                "worker-memory": (self.worker_floor_mib, self.memory_ratio),
                "slope": (self.slope_floor_mib, self.memory_ratio),
                "wait": (self.wait_floor, self.wait_ratio)}[metric.family]

    def ab(self) -> dict[str, float]:
        """A/B minimum effects by metric family."""
        return {"throughput": self.ab_throughput, "ttfb": self.ab_ttfb}
