"""Plain-text rendering of the gate's verdicts: what CI logs show and what a reviewer reads. Its rows come from the
:class:`~lfw.gate.verdict.Verdict`'s by :func:`comparison_rows`, which the Markdown page (:mod:`lfw.gate.summary`)
and the report's HTML use too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lfw.cli.table import table
from lfw.gate.metrics import COST_LAYER
from lfw.gate.paired_rule import INCONCLUSIVE, REGRESSED
from lfw.gate.thresholds import Thresholds
from lfw.gate.verdict import Row, Verdict
from lfw.results import keys as K
from lfw.results import short_name

if TYPE_CHECKING:  # the comparison is not loaded by the pages that render a saved verdict
    from lfw.gate.compare import Comparison, GateReport
    from lfw.gate.paired_rule import PairedComparison

TWO_FILE_HEADER = ("case", "metric", "baseline", "current", "change", "minimum effect")
AB_HEADER = ("case", "metric", "base", "current", "change [interval]", "minimum effect", "pairs", "p (Holm)")


def fmt_value(metric_key: str, unit: str, value: float) -> str:
    """A value as its key's declaration writes it (:meth:`lfw.results.keys.Key.format`); ``unit`` for a key with
    none."""
    facts = K.facts(metric_key)
    return facts.format(value) if facts is not None else f"{value:.3f}{unit}"


def fmt_delta(kind: str, unit: str, change: float) -> str:
    """A change as shown: ``+5.0%`` for a relative metric (``from 0``: a step from zero), ``+12.3 MiB`` or
    ``+0.012`` for an absolute one."""
    if kind == "relative":
        return "from 0" if math.isinf(change) else f"{change * 100:+.1f}%"
    return f"{change:+.1f}{unit}" if "MiB" in unit else f"{change:+.3f}"


def machine_diff_text(report: GateReport) -> str:
    """The machine_info keys that matter and differ, ``key (baseline -> current)``; empty when none do."""
    return ", ".join(f"{k} ({b!r} -> {c!r})" for k, (b, c) in report.machine_diffs.items())


def verdict_line(report: GateReport) -> str:
    """The two-file verdict in one line; "no regression" only when comparisons ran and nothing is missing."""
    summary = f"{len(report.comparisons)} comparisons in {len({c.case for c in report.comparisons})} cases"
    if report.regressions:
        return f"REGRESSED: {len(report.regressions)} of {summary}"
    if not report.comparisons:
        return "INCOMPLETE: nothing compared (no case and metric on both sides); that is never a pass"
    if report.gaps:
        return f"INCOMPLETE: {len(report.gaps)} baseline cases missing; no regression in {summary}"
    return f"no regression: {summary}"


def comparison_rows(rows: Sequence[Row], improvements: bool = False, code: bool = True,
                    ab: bool = False) -> list[tuple[str, ...]]:
    """Table rows of comparisons: case (a Markdown code span when ``code``), metric, both sides, the change and the
    rule (the other way for a notable improvement); A/B rows add the interval, the pairs and Holm's p-value, and
    with ``ab`` an exact count (no interval, pairs or p-value) fills those columns with ``-``."""
    out: list[tuple[str, ...]] = []
    for r in rows:
        rule = r.improvement_rule if improvements else r.rule
        first = (f"`{short_name(r.case)}`" if code else short_name(r.case), r.metric_label,
                 fmt_value(r.metric_key, r.unit, r.baseline), fmt_value(r.metric_key, r.unit, r.current))
        if r.pairs is not None:
            out.append((*first, r.interval, rule, str(r.pairs), f"{r.p_holm:.4f}"))
        elif ab:
            out.append((*first, f"{fmt_delta(r.kind, r.unit, r.change)} (exact count)", rule, "-", "-"))
        else:
            out.append((*first, fmt_delta(r.kind, r.unit, r.change), rule))
    return out


def with_verdicts(rows: Sequence[Row], cells: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Each row's cells, then its verdict: REGRESSED, inconclusive or ok."""
    return [(*c, "REGRESSED" if r.regressed else INCONCLUSIVE if r.inconclusive else "ok")
            for r, c in zip(rows, cells, strict=True)]


def render(v: Verdict, th: Thresholds, *, show_all: bool = False) -> str:
    """The two-file gate's text, from its verdict (machine-info warnings go to stderr separately)."""
    out = [v.setup, f"minimum effects: cost +{th.cost:.0%}, efficiency -{th.efficiency:.0%}, time to first batch "
                    f"+{th.ttfb:.0%}, memory +{th.memory_floor_mib:g} MiB and {th.memory_ratio:.0%}, worker memory "
                    f"+{th.worker_floor_mib:g} MiB, leak step +{th.slope_floor_mib:g} MiB/epoch, wait "
                    f"+{th.wait_floor:g} and {th.wait_ratio:.0%}"]
    out += [f"not judged: {layer}: {why}" for layer, why in v.unjudged.items()]
    if v.new_cases:
        out.append(f"new cases, in current only (not gated): {len(v.new_cases)}")
        out.extend(f"  {short_name(n)}" for n in v.new_cases)
    if v.narrowed:
        out.append(f"left out on purpose, not compared: {len(v.narrowed)}")
        out.extend(f"  {short_name(m.case)}: {m.why}" for m in v.narrowed)
    if v.gaps:
        out.append(f"MISSING: {len(v.gaps)} baseline cases this run should have held:")
        out.extend(f"  {short_name(m.case)}: {m.why}" for m in v.gaps)
    out.extend(f"note: {n}" for n in v.notes)
    out.append(v.headline)
    rows = v.comparisons if show_all else v.regressions
    if rows:
        out.append(table((*TWO_FILE_HEADER, "verdict"), with_verdicts(rows, comparison_rows(rows, code=False))))
    return "\n".join(out)


def paired_verdict_line(comparisons: Sequence[PairedComparison], counts: Sequence[Comparison] = ()) -> str:
    """The A/B verdict in one line, wall-clock pairs and exact counts together."""
    regressed = [c for c in comparisons if c.verdict == REGRESSED]
    noisy = [c for c in comparisons if c.verdict == INCONCLUSIVE]
    counted_worse = [c for c in counts if c.regressed]
    total = len(comparisons) + len(counts)
    if regressed or counted_worse:
        return f"REGRESSED: {len(regressed) + len(counted_worse)} of {total} comparisons"
    if noisy:
        return (f"noisy: rerun: {len(noisy)} of {total} comparisons can neither rule out nor show "
                "a regression of the threshold's size")
    if not total:
        return "INCOMPLETE: nothing compared; that is never a pass"
    return f"no regression: {total} comparisons, each ruling out a change of its threshold's size"


def render_paired(v: Verdict, *, header: str) -> str:
    """The A/B verdict table, from its verdict: every comparison (an A/B run has few), the paired wall-clock rows
    and the instruction counts of both sides (exact: no interval, no pairs, no p-value) in one table."""
    cells = comparison_rows(v.comparisons, code=False, ab=True)
    body = table((*AB_HEADER[:5], "threshold", *AB_HEADER[6:], "verdict"), with_verdicts(v.comparisons, cells))
    lines = [header, v.headline, body]
    if COST_LAYER in v.unjudged:
        lines.append(f"not judged: {COST_LAYER}: {v.unjudged[COST_LAYER]}")
    return "\n".join(lines)
