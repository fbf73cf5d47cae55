"""Verdicts per case for a baseline and a current run: the gate's own, so the report and CI never disagree.

The report draws and lists verdicts but decides none: :func:`gate_verdicts` runs the two-file gate
(:func:`lfw.gate.compare_runs`) on the same loaded runs and turns its comparisons into one verdict per case. A
case regressed if the gate found any of its metrics regressed (the detail names them); it improved if its
throughput metric (efficiency) rose by more than the gate's minimum effect. Cases are matched as the gate
matches them (:func:`lfw.results.pair_cases`); a verdict names the current case by ``fullname``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lfw.gate.compare import Comparison, GateReport, compare_runs
from lfw.gate.thresholds import Thresholds
from lfw.results import Run

LABELS = ("regressed", "improved", "unchanged", "not compared", "new", "missing")


def judged_by(th: Thresholds) -> str:
    """The rule behind the verdicts in one line, from the thresholds the gate applied."""
    return (f"lfw.gate, two files: instruction counts +{th.cost:.0%}, efficiency (gross, -{th.efficiency:.0%}), "
            "time to first batch (gross), memory floors (python -m lfw.gate --help)")


JUDGED_BY = judged_by(Thresholds())


@dataclass(frozen=True)
class Verdict:
    """What the gate says about one case: a label from :data:`LABELS`, the change and a one-line reason."""

    case: str  # the case's fullname (file::test[params])
    label: str
    change: float | None = None  # relative change of the case's throughput metric, current / base - 1
    detail: str = ""


def describe(c: Comparison) -> str:
    """``efficiency 0.41 -> 0.29 (-29.3%), minimum effect -35%``: one gate comparison in words."""
    change = f"{c.change:+.1%}" if c.metric.kind == "relative" else f"{c.change:+.2f}{c.metric.unit}"
    return f"{c.metric.label} {c.baseline:,.4g} -> {c.current:,.4g} ({change}), minimum effect {c.rule}"


def gate_verdicts(base: Run, current: Run, thresholds: Thresholds | None = None) -> tuple[list[Verdict], GateReport]:
    """One verdict per case of ``current`` (and per case missing from it), from the two-file gate."""
    th = thresholds or Thresholds()
    gate = compare_runs(base, current, th)
    by_case: dict[str, list[Comparison]] = {}
    for comparison in gate.comparisons:
        by_case.setdefault(comparison.case, []).append(comparison)
    verdicts = []
    for case in current.cases:
        if case.fullname in gate.new_cases:
            verdicts.append(Verdict(case.fullname, "new", None, "not in the baseline"))
            continue
        comparisons = by_case.get(case.fullname)
        if not comparisons:
            verdicts.append(Verdict(case.fullname, "not compared", None, "no metric the gate compares"))
            continue
        throughput = next((c for c in comparisons if c.metric.family == "throughput"), None)
        change = throughput.change if throughput is not None else None
        regressed = [c for c in comparisons if c.regressed]
        if regressed:
            label, shown = "regressed", regressed
        else:
            improved = change is not None and change > th.efficiency
            label, shown = ("improved" if improved else "unchanged"), [throughput] if throughput else []
        detail = "; ".join(describe(c) for c in shown) or "no throughput compared"
        verdicts.append(Verdict(case.fullname, label, change, detail))
    verdicts += [Verdict(m.case, "missing", None, m.why) for m in gate.missing]
    return verdicts, gate
