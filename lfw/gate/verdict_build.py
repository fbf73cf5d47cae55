"""The :class:`~lfw.gate.verdict.Verdict` of a gate run, built once from the gate's own objects.

Two files: from the :class:`~lfw.gate.compare.GateReport`; A/B: from the :class:`~lfw.gate.ab.ABRun`; a run
that ended without a verdict: the headline and the reason only. The layer table is decided here (docs/gating.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lfw.gate.compare import Comparison, GateReport
from lfw.gate.metrics import COST_LAYER, FRESH_INTERPRETERS, HOST_USS, LAYER_OF, MEMORY, PSS_PEAK, SAME_MACHINE, Metric
from lfw.gate.paired_rule import INCONCLUSIVE, PairedComparison
from lfw.gate.table import machine_diff_text, paired_verdict_line, verdict_line
from lfw.gate.thresholds import Thresholds
from lfw.gate.verdict import (
    AB,
    TWO_FILE,
    CaseNote,
    LayerRow,
    RecommendationRow,
    Row,
    RunIdentity,
    Verdict,
    case_verdicts,
    file_sha256,
)
from lfw.results import Run
from lfw.results.recommend import GROUP, recommendations

if TYPE_CHECKING:
    from lfw.gate.ab import ABRun

# The two-file layers (docs/gating.md), each with the metrics its layer or family puts there (COST_LAYER: unjudged's)
LAYER_NAMES = {"cost": COST_LAYER, "requests": "requests per image (remote)",
               "memory": f"memory a loader adds ({'; '.join(m.label for m in MEMORY)})",
               "wall clock": "wall clock, gross (efficiency, time to first batch)", "data wait": "data wait"}
TWO_FILE_LAYERS: dict[str, tuple[Metric, ...]] = {
    name: tuple(m for m in SAME_MACHINE if (m.layer or LAYER_OF[m.family]) == layer)
    for layer, name in LAYER_NAMES.items()}
AB_LAYER = "wall clock, A/B (images/s, time to first batch, paired over process pairs)"
# What hosts the loaders: reported, never judged (lfw.gate.compare.host_note).
NOT_THE_LOADER = LayerRow(f"memory of the host ({HOST_USS.label}; {PSS_PEAK.label}; the tree PSS of a case with "
                          f"{' or '.join(FRESH_INTERPRETERS)} workers)", "no", "-",
                          "the process the loaders run in (its imports, the libraries its CPU model selects) and the "
                          "library pages fresh-interpreter workers share with it, not a loader: a change of the host "
                          "beyond the memory floor is a note")
# The layers the other mode judges, named as not judged with where they are.
NOT_IN_TWO_FILE = LayerRow(AB_LAYER, "no", "-",
                           "not part of a two-file run: `make gate-ab` measures both revisions in one job")
NOT_IN_AB = LayerRow("memory, data wait, gross wall clock", "no", "-",
                     "not part of an A/B run: `make gate` judges them two-file against the committed baseline")


def judged_by(th: Thresholds) -> str:
    """The two-file rule behind the verdicts in one line, from the thresholds the gate applied."""
    return (f"lfw.gate, two files: instruction counts +{th.cost:.0%}, efficiency (gross, -{th.efficiency:.0%}), "
            "time to first batch (gross), memory floors (python -m lfw.gate --help)")


def identify(run: Run | None) -> RunIdentity | None:
    """The identity of a loaded run: its path, the SHA-256 of the file's bytes, commit and runner class."""
    if run is None:
        return None
    commit, runner = run.commit.get("id"), run.machine.get("runner_class")
    return RunIdentity(str(run.path), file_sha256(Path(run.path)), len(run.cases),
                       str(commit) if commit else None, bool(run.commit.get("dirty")),
                       str(runner) if runner else None)


def row_of(c: Comparison) -> Row:
    """A two-file (or exact-count) comparison as a verdict row."""
    m = c.metric
    return Row(c.case, m.key, m.label, m.unit, m.kind, m.family, c.baseline, c.current, c.change, c.rule,
               c.regressed, c.improved, c.improvement_rule)


def paired_row(c: PairedComparison) -> Row:
    """An A/B wall-clock comparison as a verdict row: medians of both sides, the ratio with its interval."""
    m = c.metric
    interval = f"{(c.ratio - 1) * 100:+.1f}% [{(c.ratio_low - 1) * 100:+.1f}, {(c.ratio_high - 1) * 100:+.1f}]"
    return Row(c.case, m.key, m.label, m.unit, m.kind, m.family, c.base_median, c.current_median, c.ratio - 1.0,
               f"{m.sign * c.threshold:+.0%}", c.regressed, c.improved, f"{c.improvement_bound - 1:+.0%}", interval,
               c.pairs, c.p_holm, c.verdict == INCONCLUSIVE)


def recommendation_rows(current: Run | None) -> tuple[RecommendationRow, ...]:
    """The recommended num_workers per preset, as the report decides it, when the run holds a worker sweep."""
    if current is None:
        return ()
    found = [r for r in recommendations(current) if len(r.candidates) > 1]  # one worker count is no sweep
    return tuple(RecommendationRow(r.transform, r.verdict(), r.evidence() if r.paired else
                                   f"{r.evidence()} (medians: rounds not paired)") for r in found)


def two_file_layers(report: GateReport) -> tuple[LayerRow, ...]:
    """The layer table of a two-file run: each layer judged or not, with the count or the reason."""
    rows = []
    for layer, metrics in TWO_FILE_LAYERS.items():
        judged = sum(c.metric in metrics for c in report.comparisons)
        if layer in report.unjudged:
            rows.append(LayerRow(layer, "no", "-", report.unjudged[layer]))
        elif judged:
            rows.append(LayerRow(layer, "yes", str(judged), ""))
        else:
            rows.append(LayerRow(layer, "no", "0",
                                 "no case measured it in both runs (see the cases left out or missing)"))
    rows += [LayerRow(layer, "no", "-", why) for layer, why in report.unjudged.items() if layer not in TWO_FILE_LAYERS]
    return (*rows, NOT_THE_LOADER, NOT_IN_TWO_FILE)


def two_file_verdict(report: GateReport, baseline: Run, current: Run, th: Thresholds, *, exit_code: int,
                     error: str | None = None) -> Verdict:
    """The verdict of a two-file run; ``exit_code`` and ``error`` are the command's (e.g. --require-cost-layer)."""
    rows = tuple(row_of(c) for c in report.comparisons)
    missing = [CaseNote(m.case, m.why) for m in report.missing]
    return Verdict(
        TWO_FILE, exit_code, verdict_line(report), identify(baseline), identify(current), error,
        f"compared: {report.metrics_note}", judged_by(th), rows,
        tuple(case_verdicts([c.fullname for c in current.cases], rows, report.new_cases, missing)),
        tuple(CaseNote(m.case, m.why) for m in report.gaps), tuple(CaseNote(m.case, m.why) for m in report.narrowed),
        tuple(report.new_cases), two_file_layers(report), dict(report.unjudged), tuple(report.notes),
        machine_diff_text(report), GROUP, recommendation_rows(current))


def ab_verdict(run: ABRun, base: Run | None, current: Run | None, th: Thresholds) -> Verdict:
    """The verdict of an A/B run; ``base`` and ``current`` are its sides as written (identities, recommendation)."""
    tree = "the working tree (uncommitted changes included)" if run.current_dirty else "the working tree"
    confidence = min((c.confidence for c in run.verdicts), default=0.9)
    setup = (f"base {run.plan.base_rev} ({run.sha[:10]}) vs {tree}; {run.pairs} process pairs (looks at "
             f"{', '.join(map(str, run.looks))}), seed {run.seed}; intervals at {confidence:.0%}; runs and verdicts "
             f"in {run.out}")
    rows = (*(paired_row(c) for c in run.verdicts), *(row_of(c) for c in run.counts))
    layer = f"{COST_LAYER} (both revisions counted in this job)"
    counted = (LayerRow(layer, "yes", str(len(run.counts)), "") if run.counts else
               LayerRow(layer, "no", "-", run.counts_unjudged or "no preset counted on both sides"))
    layers = (LayerRow(AB_LAYER, "yes" if run.verdicts else "no", str(len(run.verdicts)), ""), counted, NOT_IN_AB)
    cases = list(dict.fromkeys(r.case for r in rows))
    return Verdict(
        AB, run.exit_code, paired_verdict_line(run.verdicts, run.counts), identify(base), identify(current), None,
        setup, "", rows, tuple(case_verdicts([*cases, *run.new_cases], rows, run.new_cases, [])),
        new_cases=tuple(run.new_cases), layers=layers,
        unjudged={COST_LAYER: run.counts_unjudged} if run.counts_unjudged else {},
        recommendation_group=GROUP, recommendation=recommendation_rows(current))


def failure_verdict(mode: str, exit_code: int, message: str, sides: Sequence[Run | None] = (None, None)) -> Verdict:
    """The verdict of a run that ended without one (a measurement failure, an incomplete run): judges nothing."""
    baseline, current = sides
    return Verdict(mode, exit_code, f"no verdict: {message}", identify(baseline), identify(current),
                   setup="Nothing was judged; the job's log has the details.")
