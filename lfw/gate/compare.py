"""Two-file comparison: a current run against a baseline, case by case, layer by layer.

Cases are matched on ``fullname`` (``file::test[params]``). Cases present on one side only are listed, never
dropped: pytest-benchmark's own ``--benchmark-compare-fail`` skips a case missing from the baseline silently,
which is how a renamed benchmark escapes its gate.

Each side is one session, and rounds of one session share its speed, so there is no valid test over rounds: a
metric regressed when its change (of the medians over rounds) is beyond the metric's minimum effect
(:class:`~lfw.gate.thresholds.Thresholds`). The machine decides what may be compared: two runs from the same
runner class compare every layer; from different machines, only efficiency and memory (instruction counts depend
on the CPU features the libraries detect; absolute time does not port). A layer that cannot be judged is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Literal

from lfw import keys as K
from lfw.gate.metrics import INSTRUCTIONS, NOT_JUDGED, PORTABLE, SAME_MACHINE, Metric
from lfw.gate.thresholds import Thresholds
from lfw.results import Run, short_name
from lfw.spread import coefficient_of_variation

# machine_info keys whose difference changes the numbers; the first two make the runs different machines.
MACHINE_KEYS = ("runner_class", "cpu_model", "usable_cores", "torch", "pillow", "jpeg_library", "dataset_kind",
                "dataset_files", "bench_profile", "cache_mode", "valgrind")
# A different CPU model is another machine too: the libraries pick code paths by CPU feature (AVX2, AVX-512), so
# instruction counts differ, as hosted runners of one class drawing different CPUs would show.
PORTABILITY_KEYS = ("runner_class", "cpu_model", "usable_cores")
COST_LAYER = "cost layer"
WALL_CLOCK_MIN_ROUNDS = 3  # a single round (start-method in quick) has no median to speak of: not judged
Mode = Literal["auto", "absolute", "portable"]


@dataclass(frozen=True)
class Comparison:
    """One metric of one case: medians over rounds, the change, the rule applied and the verdict."""

    case: str
    metric: Metric
    baseline: float
    current: float
    change: float  # relative (+0.12 = 12% higher) for relative metrics, current - baseline otherwise
    rule: str  # the minimum effect in words, e.g. "-35%" or "+100 MiB and 25%"
    baseline_spread: float  # CV (relative metrics) or range (absolute) of the baseline's rounds
    regressed: bool

    @property
    def worse_by(self) -> float:
        """The change in the metric's bad direction (positive = worse)."""
        return self.change if self.metric.worse == "higher" else -self.change


@dataclass
class GateReport:
    """Everything the two-file gate found; ``exit_code`` is 1 if any comparison regressed, else 0."""

    comparisons: list[Comparison]
    new_cases: list[str]
    missing_cases: list[str]
    machine_diffs: dict[str, tuple[Any, Any]]
    portable: bool
    metrics_note: str
    unjudged: dict[str, str] = field(default_factory=dict)  # layer -> why it was not judged
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.regressed]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    @property
    def case_count(self) -> int:
        return len({c.case for c in self.comparisons})

    def to_dict(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "portable": self.portable, "metrics_note": self.metrics_note,
                "machine_diffs": {k: list(v) for k, v in self.machine_diffs.items()},
                "new_cases": self.new_cases, "missing_cases": self.missing_cases, "unjudged": self.unjudged,
                "notes": self.notes,
                "comparisons": [{"case": c.case, "metric": c.metric.key, "baseline": c.baseline,
                                 "current": c.current, "change": c.change, "rule": c.rule,
                                 "regressed": c.regressed} for c in self.comparisons]}


def machine_diffs(baseline: Run, current: Run) -> dict[str, tuple[Any, Any]]:
    """The machine_info keys that matter and differ, with (baseline, current) values."""
    b, c = baseline.machine, current.machine
    return {k: (b.get(k), c.get(k)) for k in MACHINE_KEYS if b.get(k) != c.get(k)}


def choose_metrics(diffs: Mapping[str, tuple[Any, Any]], mode: Mode) -> tuple[bool, tuple[Metric, ...], str]:
    """(portable?, metrics, a sentence saying what is compared and why)."""
    crossed = [k for k in PORTABILITY_KEYS if k in diffs]
    portable = mode == "portable" or (mode == "auto" and bool(crossed))
    if not portable:
        why = "forced by --mode absolute" if crossed else "same runner class and usable cores"
        return False, SAME_MACHINE, f"every layer compared ({why})"
    why = f"{', '.join(crossed)} differ" if crossed and mode == "auto" else "forced by --mode portable"
    return True, PORTABLE, (f"efficiency and memory only ({why}: instruction counts and absolute time do not port "
                            "across machines)")


def spread(metric: Metric, values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    return coefficient_of_variation(values) if metric.kind == "relative" else max(values) - min(values)


def judge(case: str, metric: Metric, baseline: list[float], current: list[float], th: Thresholds) -> Comparison:
    """Compare the medians of one metric of one case under its family's minimum effect."""
    base, cur = float(median(baseline)), float(median(current))
    if metric.kind == "relative":
        change = cur / base - 1.0 if base else 0.0
        limit = th.relative(metric)
        worse = change if metric.worse == "higher" else -change
        regressed = worse > limit
        rule = f"{'+' if metric.worse == 'higher' else '-'}{limit:.0%}"
    else:
        change = cur - base
        floor, ratio = th.absolute(metric)
        increase = change if metric.worse == "higher" else -change
        regressed = increase > floor and increase > ratio * abs(base)
        rule = f"+{floor:g}{metric.unit} and {ratio:.0%}"
    return Comparison(case, metric, base, cur, change, rule, spread(metric, baseline), regressed)


def cost_layer_reason(baseline: Run, current: Run, portable: bool) -> str | None:
    """Why the cost layer cannot be judged between these runs (None when it can)."""
    has = {name: any(c.number(INSTRUCTIONS.key) is not None for c in run.cases)
           for name, run in (("baseline", baseline), ("current", current))}
    if portable:
        return "the runs come from different machines, whose instruction counts differ (CPU features)"
    if not has["baseline"]:
        return (f"the baseline {baseline.path} has no instruction counts (recorded without the cost group); "
                "refresh it on this runner: make baseline FORCE=1")
    if not has["current"]:
        why = current.machine.get(K.COST_LAYER_SKIPPED) or "the cost group did not run (--bench-cost not given?)"
        return f"the current run has no instruction counts: {why}"
    return None


def compare_runs(baseline: Run, current: Run, thresholds: Thresholds | None = None,
                 mode: Mode = "auto") -> GateReport:
    """Compare ``current`` against ``baseline`` case by case; see the module docstring for the rule."""
    th = thresholds or Thresholds()
    base_cases, cur_cases = baseline.by_name(), current.by_name()
    diffs = machine_diffs(baseline, current)
    portable, metrics, note = choose_metrics(diffs, mode)
    report = GateReport([], sorted(set(cur_cases) - set(base_cases)), sorted(set(base_cases) - set(cur_cases)),
                        diffs, portable, note)
    reason = cost_layer_reason(baseline, current, portable)
    if reason:
        report.unjudged[COST_LAYER] = reason
    few_rounds = []
    skipped_by_group: dict[tuple[str | None, str], list[str]] = {}
    controls = []
    for name in sorted(set(base_cases) & set(cur_cases)):
        b_case, c_case = base_cases[name], cur_cases[name]
        if c_case.value(K.POSITIVE_CONTROL) is True:
            controls.append(name)  # judged by its own test: the check must flag it
            continue
        for metric in metrics:
            b, c = b_case.rounds(metric.key), c_case.rounds(metric.key)
            if not b and not c:
                continue  # not measured by this case
            if (c_case.group, metric.key) in NOT_JUDGED:
                skipped_by_group.setdefault((c_case.group, metric.key), []).append(name)
                continue
            if metric.family in ("throughput", "ttfb") and min(len(b), len(c)) < WALL_CLOCK_MIN_ROUNDS:
                few_rounds.append(name)
                continue
            if not b or not c:
                if metric is not INSTRUCTIONS and not metric.optional:  # the cost layer is reported once, above
                    side = "current" if not b else "baseline"
                    report.notes.append(f"{short_name(name)}: {metric.label} only in the {side} run, not compared")
                continue
            report.comparisons.append(judge(name, metric, b, c, th))
    if controls:
        report.notes.append(f"not compared, positive controls (their own test asserts the check flags them; how much "
                            f"they leak is their design): {', '.join(short_name(n) for n in controls)}")
    for (group, key), names in skipped_by_group.items():
        report.notes.append(f"{key} not judged for the {len(names)} cases of group {group}: "
                            f"{NOT_JUDGED[(group, key)]}")
    if few_rounds:
        names = ", ".join(short_name(n) for n in dict.fromkeys(few_rounds))
        report.notes.append(f"wall clock not judged for cases with fewer than {WALL_CLOCK_MIN_ROUNDS} rounds: {names}")
    return report
