"""Verdicts per case for two runs: the seam between the report and the regression gate.

The report draws and lists verdicts but does not decide them: a *judge* (``Judge``: two runs in, one
:class:`Verdict` per case out) does. :func:`gate_judge` asks the noise-aware gate (``lfw.gate``), so the
report and the CI gate never disagree about what regressed; :func:`heuristic_judge` is a plain, labelled
stand-in used only when the gate cannot be imported. Cases are matched on ``fullname``, as the gate does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lfw.report.load import Case, Run
from lfw.spread import coefficient_of_variation

MIN_EFFECT = 0.10
NOISE_FACTOR = 2.0
LABELS = ("regressed", "improved", "unchanged", "not compared", "new", "missing")


@dataclass(frozen=True)
class Verdict:
    """What a judge says about one case: a label from :data:`LABELS`, the change and a one-line reason."""

    case: str  # the case's fullname (file::test[params])
    label: str
    change: float | None = None  # relative change of the judged metric, current / base - 1
    detail: str = ""


Judge = Callable[[Run, Run], list[Verdict]]


def pair_cases(base: Run, current: Run) -> tuple[list[tuple[Case, Case]], list[Case], list[Case]]:
    """Cases matched on ``fullname``, plus those only in current (new) and only in base (missing)."""
    base_by_name = {c.fullname: c for c in base.cases}
    current_names = {c.fullname for c in current.cases}
    pairs = [(base_by_name[c.fullname], c) for c in current.cases if c.fullname in base_by_name]
    new = [c for c in current.cases if c.fullname not in base_by_name]
    missing = [c for c in base.cases if c.fullname not in current_names]
    return pairs, new, missing


def heuristic_judge(base: Run, current: Run) -> list[Verdict]:
    """Median images/s change against a threshold of ``max(10%, 2 x the larger CV)``.

    A stand-in, not a statistical test: with 3 rounds per case no rank test can reach significance, so a
    change is only called when it is both large and well outside the round-to-round noise of either run.
    """
    pairs, new, missing = pair_cases(base, current)
    verdicts = []
    for old, now in pairs:
        before, after = old.number("images_per_s"), now.number("images_per_s")
        if not before or after is None:
            verdicts.append(Verdict(now.fullname, "not compared", None, "no images/s on both sides"))
            continue
        change = after / before - 1
        noise = max(_cv(old), _cv(now))
        threshold = max(MIN_EFFECT, NOISE_FACTOR * noise)
        label = "regressed" if change < -threshold else "improved" if change > threshold else "unchanged"
        detail = (f"images/s {before:,.0f} -> {after:,.0f} ({change:+.1%}), "
                  f"threshold ±{threshold:.0%} (CV {noise:.1%})")
        verdicts.append(Verdict(now.fullname, label, change, detail))
    return verdicts + _one_sided([c.fullname for c in new], [c.fullname for c in missing])


def _one_sided(new: list[str], missing: list[str]) -> list[Verdict]:
    return ([Verdict(name, "new", None, "not in the baseline") for name in new]
            + [Verdict(name, "missing", None, "in the baseline, not in this run") for name in missing])


def gate_judge(base: Run, current: Run) -> list[Verdict]:
    """The regression gate's decision, ``lfw.gate.compare_runs``, as one verdict per case.

    A case regressed if the gate found any of its metrics regressed (the detail names them); it improved if
    its throughput metric (images/s, or efficiency across machines) rose by more than the gate's throughput
    threshold. The gate re-reads both files with its own loader, so both tools judge the same data.
    """
    from lfw.gate import Thresholds, compare_runs
    from lfw.gate import load_run as gate_load

    gate = compare_runs(gate_load(base.path), gate_load(current.path))
    by_case: dict[str, list] = {}
    for comparison in gate.comparisons:
        by_case.setdefault(comparison.case, []).append(comparison)
    verdicts = []
    for case in current.cases:
        comparisons = by_case.get(case.fullname)
        if case.fullname in gate.new_cases:
            continue
        if not comparisons:
            verdicts.append(Verdict(case.fullname, "not compared", None, "no metric the gate compares"))
            continue
        throughput = next((c for c in comparisons if c.metric.family == "throughput"), None)
        change = throughput.change if throughput is not None else None
        regressed = [c for c in comparisons if c.regressed]
        if regressed:
            label, shown = "regressed", regressed
        else:
            improved = change is not None and change > Thresholds().throughput
            label, shown = ("improved" if improved else "unchanged"), [throughput] if throughput else []
        detail = "; ".join(_gate_detail(c) for c in shown) or "no throughput compared"
        verdicts.append(Verdict(case.fullname, label, change, detail))
    return verdicts + _one_sided(list(gate.new_cases), list(gate.missing_cases))


def _gate_detail(c: Any) -> str:
    """``images/s 277 -> 194 (-30.0%), p=0.050 (3v3)``: one gate comparison in words."""
    change = f"{c.change:+.1%}" if c.metric.kind == "relative" else f"{c.change:+.2f}{c.metric.unit}"
    evidence = f"p={c.p_value:.3f} ({c.n_baseline}v{c.n_current})" if c.p_value is not None \
        else f"{c.n_baseline}v{c.n_current} rounds: effect size only"
    return f"{c.metric.label} {c.baseline:,.4g} -> {c.current:,.4g} ({change}), {evidence}"


gate_judge.description = (  # type: ignore[attr-defined]
    "lfw.gate: change beyond its minimum effect size and, where the rounds allow, a one-sided "
    "Mann-Whitney U test (python -m lfw.gate --help)")


def default_judge() -> Judge:
    """The gate when it can be imported, else the labelled heuristic."""
    try:
        import lfw.gate  # noqa: F401
    except ImportError:
        return heuristic_judge
    return gate_judge


heuristic_judge.description = (  # type: ignore[attr-defined]
    f"heuristic: median images/s change beyond max({MIN_EFFECT:.0%}, {NOISE_FACTOR:g} x CV); "
    "not the gate's statistical test")


def _cv(case: Case) -> float:
    saved = case.number("images_per_s_cv")
    if saved is not None:
        return saved
    return coefficient_of_variation(case.rounds("images_per_s"))


def describe_judge(judge: Judge) -> str:
    """The judge's ``description`` attribute, else its qualified name: printed beside every verdict."""
    return str(getattr(judge, "description", getattr(judge, "__qualname__", repr(judge))))
