"""Two-file comparison: a current run against a baseline, case by case, layer by layer.

Cases are matched on group and test id (:func:`lfw.results.pair_cases`). A baseline case the run should have held
but did not is a gap (exit 5); cases left out on purpose (its :class:`~lfw.results.Selection`) are named. A metric
regressed when its medians moved beyond its minimum effect (:class:`~lfw.gate.thresholds.Thresholds`); which
layers port across machines: docs/gating.md, "The layers".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from statistics import median
from typing import Any, Literal

from lfw.gate.metrics import (
    COST_LAYER,
    COUNTED,
    FRESH_INTERPRETERS,
    HOST_SHARED,
    HOST_USS,
    INSTRUCTIONS,
    PORTABLE,
    SAME_MACHINE,
    WALL_CLOCK_MIN_ROUNDS,
    Metric,
    fresh_interpreters,
    group_excludes,
    reference_group,
    too_few_rounds,
)
from lfw.gate.thresholds import Thresholds
from lfw.results import Case, Run, pair_cases, short_name
from lfw.results import keys as K

EXIT_INCOMPLETE = 5  # the gate compared less than the baseline holds (a gap), or nothing at all
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
    regressed: bool
    # A notable improvement: as large a change the good way (reported, never part of the verdict), and its rule
    improved: bool = False
    improvement_rule: str = ""


@dataclass(frozen=True)
class Missing:
    """A baseline case the current run does not hold, and why (a gap fails the gate; a narrowed case does not)."""

    case: str  # the baseline's full name
    why: str
    gap: bool


@dataclass
class GateReport:
    """Everything the two-file gate found; see :attr:`exit_code`."""

    comparisons: list[Comparison]
    new_cases: list[str]
    missing: list[Missing]
    machine_diffs: dict[str, tuple[Any, Any]]
    portable: bool
    metrics_note: str
    unjudged: dict[str, str] = field(default_factory=dict)  # layer -> why it was not judged
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.regressed]

    @property
    def gaps(self) -> list[Missing]:
        return [m for m in self.missing if m.gap]

    @property
    def narrowed(self) -> list[Missing]:
        return [m for m in self.missing if not m.gap]

    @property
    def exit_code(self) -> int:
        """1 a regression; else 5 a gap or nothing compared (:data:`EXIT_INCOMPLETE`); else 0."""
        if self.regressions:
            return 1
        return EXIT_INCOMPLETE if self.gaps or not self.comparisons else 0


def different_images(baseline: Run, current: Run) -> str | None:
    """Why two runs that skipped different numbers of unreadable images are not compared; None if as many."""
    (b, _), (c, names) = baseline.skipped_images, current.skipped_images
    if b == c:
        return None
    listed = f" ({', '.join(names)}{', ...' if c > len(names) else ''})" if names else ""
    return (f"the current run skipped {c:,} unreadable images{listed} and the baseline {b:,}: they read different "
            "images, so their figures do not compare; compare runs that skipped the same images (replace the files, "
            "or run both sides with the skip option)")


def machine_diffs(baseline: Run, current: Run) -> dict[str, tuple[Any, Any]]:
    """The machine_info keys of :data:`~lfw.results.keys.MACHINE_COMPARED` that differ: (baseline, current)."""
    b, c = baseline.machine, current.machine
    return {k: (b.get(k), c.get(k)) for k in K.MACHINE_COMPARED if b.get(k) != c.get(k)}


def choose_metrics(diffs: Mapping[str, tuple[Any, Any]], mode: Mode) -> tuple[bool, tuple[Metric, ...], str]:
    """(portable?, metrics, what is compared and why); the cost layer apart (:func:`cost_layer_reason`)."""
    crossed = [k for k in K.MACHINE_IDENTITY if k in diffs]
    portable = mode == "portable" or (mode == "auto" and bool(crossed))
    if not portable:
        why = "forced by --mode absolute" if crossed else "same runner class and usable cores"
        return False, SAME_MACHINE, f"every layer compared ({why})"
    why = f"{', '.join(crossed)} differ" if crossed and mode == "auto" else "forced by --mode portable"
    return True, PORTABLE, (f"counts, efficiency and memory a loader adds ({why}: absolute time, time to first "
                            "batch and memory that holds a process's own footprint do not port across machines)")


def stack_differences(baseline: Run, current: Run) -> tuple[list[str], list[str]]:
    """(parts of the counted stack that differ, parts recorded on one side only), each as ``name a -> b``."""
    differ, one_side = [], []
    for key in K.COUNTED_STACK:
        b, c = baseline.machine.get(key), current.machine.get(key)
        if b is None or c is None:
            if b != c:
                one_side.append(f"{key} ({b or 'not recorded'} -> {c or 'not recorded'})")
        elif b != c:
            differ.append(f"{key} {b} -> {c}")
    return differ, one_side


def host_pair(base: Case, current: Case) -> tuple[float, float] | None:
    """The host's USS before the pass in both cases, read the same way (:data:`~lfw.gate.metrics.HOST_USS`)."""
    both = [case.number(HOST_USS.key) for case in (base, current)]
    if any(v is None for v in both):
        both = [HOST_USS.derived(case) if HOST_USS.derived else None for case in (base, current)]
    b, c = both
    return None if b is None or c is None else (b, c)


def host_note(pairs: Sequence[tuple[Case, Case]], th: Thresholds) -> str | None:
    """A note on the host process's footprint before the passes (:data:`~lfw.gate.metrics.HOST_USS`) when its median
    change over the paired cases reaches the memory floor; None otherwise. Never a regression: the host is not the
    loader (its imports, the libraries the CPU model selects)."""
    changes = [pair for base, cur in pairs if (pair := host_pair(base, cur)) is not None]
    if not changes:
        return None
    before, after = median(b for b, _ in changes), median(c for _, c in changes)
    if abs(after - before) < th.memory_floor_mib:
        return None
    return (f"the host process holds {after - before:+,.0f} MiB before any loader starts ({HOST_USS.label}, median "
            f"of {len(changes)} cases: {before:,.0f} -> {after:,.0f} MiB): the process the loaders run in, not a "
            "loader; not judged (memory is judged as what each pass adds)")


def judge(case: str, metric: Metric, baseline: list[float], current: list[float], th: Thresholds,
          seconds: tuple[list[float], list[float]] | None = None) -> Comparison:
    """Compare the medians of one metric of one case under its family's minimum effect; an improvement (reported,
    never judged) mirrors the rule: the same factor the good way, or down by the floor and the share. A time to
    first batch (``seconds``: the baseline's and the current rounds in seconds) must also move by more than
    :attr:`Thresholds.ttfb_floor_ms`."""
    base, cur = float(median(baseline)), float(median(current))
    if metric.kind == "relative":
        change = cur / base - 1.0 if base else 0.0
        limit = th.relative(metric)
        better = 1 / (1 + metric.sign * limit) - 1  # limit < 1 (Thresholds): the same factor the good way
        moved = True
        rule, improvement_rule = f"{metric.sign * limit:+.0%}", f"{better:+.0%}"
        if metric.family == "ttfb" and seconds is not None:
            moved = abs(median(seconds[1]) - median(seconds[0])) * 1e3 > th.ttfb_floor_ms
            floor_text = f"{th.ttfb_floor_ms:g} ms"
            rule, improvement_rule = f"{rule} and +{floor_text}", f"{improvement_rule} and -{floor_text}"
        regressed = moved and metric.sign * change > limit
        improved = moved and bool(base) and metric.sign * change < metric.sign * better
    else:
        change = cur - base
        floor, ratio = th.absolute(metric)
        increase = metric.sign * change
        regressed = increase > floor and increase > ratio * abs(base)
        improved = -increase > floor and -increase > ratio * abs(base)
        rule = f"+{floor:g}{metric.unit} and {ratio:.0%}"
        improvement_rule = f"-{floor:g}{metric.unit} and {ratio:.0%}"
    return Comparison(case, metric, base, cur, change, rule, regressed, improved, improvement_rule)


def cost_layer_reason(baseline: Run, current: Run) -> str | None:
    """Why the cost layer cannot be judged between these runs (None when it can)."""
    has = {name: any(c.number(INSTRUCTIONS.key) is not None for c in run.cases)
           for name, run in (("baseline", baseline), ("current", current))}
    if not has["baseline"]:
        return (f"the baseline {baseline.path} has no instruction counts (recorded without the cost group); "
                "refresh it on this runner: make baseline FORCE=1")
    if not has["current"]:
        why = current.machine.get(K.COST_LAYER_SKIPPED) or "the cost group did not run (--bench-cost not given?)"
        return f"the current run has no instruction counts: {why}"
    differ, _ = stack_differences(baseline, current)
    if differ:
        return (f"the counted stack differs ({'; '.join(differ)}): instruction counts compare only where valgrind, "
                "Python and the libraries match; refresh the baseline with this stack: make baseline FORCE=1")
    return None


def match_missing(case: Case, current: Run, accept: Sequence[str]) -> Missing:
    """Why a baseline case is not in the current run and whether that is a gap (never for a reference group)."""
    missing = _missing(case, current, accept)
    if missing.gap and (reference := reference_group(case.group)) is not None:
        return Missing(missing.case, f"{missing.why} (a reference row, not a gap: {reference})", gap=False)
    return missing


def _missing(case: Case, current: Run, accept: Sequence[str]) -> Missing:
    key = case.key
    if any(fnmatchcase(key, p) or fnmatchcase(case.short_name, p) for p in accept):
        return Missing(case.fullname, "accepted as removed (--accept-missing)", gap=False)
    selection = current.selection
    if selection is None:
        return Missing(case.fullname, "not in the current run, which records no selection (not saved by this "
                                      "suite's plugin?), so it cannot have been left out on purpose", gap=True)
    outcome = selection.outcomes.get(key)
    if outcome is not None:
        if outcome.status == "narrowed":
            return Missing(case.fullname, f"left out by the run: {outcome.reason}", gap=False)
        if outcome.status == "passed":
            return Missing(case.fullname, "ran but saved no result (benchmarks disabled?)", gap=True)
        return Missing(case.fullname, f"{outcome.status}: {outcome.reason}", gap=True)
    if key in selection.deselected:
        how = f"-k {selection.keyword!r}" if selection.keyword else f"-m {selection.markexpr!r}"
        return Missing(case.fullname, f"deselected by {how}", gap=False)
    return Missing(case.fullname, "not collected by the current run: renamed or removed? (its group and test id "
                                  f"{key} match no case; accept it with --accept-missing, or refresh the baseline)",
                   gap=True)


def compare_runs(baseline: Run, current: Run, thresholds: Thresholds | None = None,
                 mode: Mode = "auto", accept_missing: Sequence[str] = ()) -> GateReport:
    """Compare ``current`` against ``baseline`` case by case; see the module docstring for the rule."""
    th = thresholds or Thresholds()
    pairing = pair_cases(baseline, current)
    diffs = machine_diffs(baseline, current)
    portable, metrics, note = choose_metrics(diffs, mode)
    missing = [match_missing(case, current, accept_missing) for case in sorted(pairing.missing, key=lambda c: c.key)]
    report = GateReport([], sorted(c.fullname for c in pairing.new), missing, diffs, portable, note)
    if host := host_note(pairing.pairs, th):
        report.notes.append(host)
    if reason := cost_layer_reason(baseline, current):
        report.unjudged[COST_LAYER] = reason
        metrics = tuple(m for m in metrics if m not in COUNTED)
    else:
        _, one_side = stack_differences(baseline, current)
        if "cpu_model" in diffs:
            report.notes.append(f"cost layer judged across CPU models ({diffs['cpu_model'][0]} -> "
                                f"{diffs['cpu_model'][1]}): the counted stack matches")
        if one_side:
            report.notes.append(f"counted stack recorded on one side only, compared on the rest: {', '.join(one_side)}"
                                "; refresh the baseline to record it")
    few_rounds, interpreters, controls = [], [], []
    skipped_by_group: dict[tuple[str | None, Metric], list[str]] = {}
    references: dict[str, list[str]] = {}
    for b_case, c_case in sorted(pairing.pairs, key=lambda pair: pair[1].key):
        name = c_case.fullname
        if b_case.fullname != c_case.fullname:
            report.notes.append(f"{short_name(name)}: matched by group and id across a move "
                                f"({b_case.fullname} -> {c_case.fullname})")
        if c_case.value(K.POSITIVE_CONTROL) is True:
            controls.append(name)  # judged by its own test: the check must flag it
            continue
        if reference_group(c_case.group) is not None:
            references.setdefault(str(c_case.group), []).append(name)
            continue
        for metric in metrics:
            b, c = metric.rounds_of(b_case), metric.rounds_of(c_case)
            if group_excludes(c_case.group, metric) and (b or c or c_case.rounds(metric.source)):
                skipped_by_group.setdefault((c_case.group, metric), []).append(name)
                continue
            if not b and not c:
                continue  # not measured by this case
            if metric in HOST_SHARED and (fresh_interpreters(c_case) or fresh_interpreters(b_case)):
                interpreters.append(name)
                continue
            if too_few_rounds(metric, min(len(b), len(c))):
                few_rounds.append(name)
                continue
            if not b or not c:
                if not metric.optional:
                    side = "current" if not b else "baseline"
                    report.notes.append(f"{short_name(name)}: {metric.label} only in the {side} run, not compared")
                continue
            seconds = (b_case.rounds(K.TTFB_S), c_case.rounds(K.TTFB_S)) if metric.family == "ttfb" else None
            report.comparisons.append(judge(name, metric, b, c, th, seconds if seconds and all(seconds) else None))
    if controls:
        report.notes.append(f"not compared, positive controls (their own test asserts the check flags them; how much "
                            f"they leak is their design): {', '.join(short_name(n) for n in controls)}")
    for ref_group, ref_cases in references.items():
        report.notes.append(f"not judged, the {len(ref_cases)} cases of group {ref_group}: "
                            f"{reference_group(ref_group)}")
    for (group, metric), skipped in skipped_by_group.items():
        report.notes.append(f"{metric.source or metric.key} not judged for the {len(skipped)} cases of group {group}: "
                            f"{group_excludes(group, metric)}")
    if interpreters:
        names = ", ".join(short_name(n) for n in dict.fromkeys(interpreters))
        report.notes.append(f"{' and '.join(m.label for m in HOST_SHARED)} not judged for {names}: its workers are "
                            f"fresh interpreters ({' or '.join(FRESH_INTERPRETERS)}), whose share of the libraries "
                            "they map with the host moves with the host; their worker USS is judged")
    if few_rounds:
        names = ", ".join(short_name(n) for n in dict.fromkeys(few_rounds))
        report.notes.append(f"wall clock not judged for cases with fewer than {WALL_CLOCK_MIN_ROUNDS} rounds: {names}")
    return report
