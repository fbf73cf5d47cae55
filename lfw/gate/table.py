"""Plain-text rendering of the gate's verdicts: what CI logs show and what a reviewer reads.

Two-file rows name the case, the metric, both medians, the change and the minimum effect it was judged
against. A/B rows give both sides' medians, the ratio current/base with its interval over process pairs, the
Holm-adjusted p-value and the verdict, so a reader can tell a measured slowdown from a noisy run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lfw.cli.table import table
from lfw.gate.compare import Comparison, GateReport
from lfw.gate.paired_rule import INCONCLUSIVE, REGRESSED, PairedComparison
from lfw.gate.thresholds import Thresholds
from lfw.results import short_name


def fmt_value(metric_key: str, unit: str, value: float) -> str:
    if unit.strip().startswith("MiB"):
        return f"{value:,.1f}{unit}"
    if metric_key == "instructions_per_image":
        return f"{value / 1e6:,.3f} M"
    if metric_key == "images_per_s":
        return f"{value:,.1f}"
    return f"{value:.3f}{unit}"


def fmt_delta(kind: str, unit: str, change: float) -> str:
    """A change as shown: ``+5.0%`` for a relative metric (``from 0``: a step from zero), ``+12.3 MiB`` or
    ``+0.012`` for an absolute one."""
    if kind == "relative":
        return "from 0" if math.isinf(change) else f"{change * 100:+.1f}%"
    return f"{change:+.1f}{unit}" if "MiB" in unit else f"{change:+.3f}"


def cells(c: Comparison, note: str = "") -> tuple[str, str, str, str]:
    """A comparison's metric, both medians and the change (``note`` appended), as the text tables show them."""
    m = c.metric
    return (m.label, fmt_value(m.key, m.unit, c.baseline), fmt_value(m.key, m.unit, c.current),
            fmt_delta(m.kind, m.unit, c.change) + note)


def thresholds_line(th: Thresholds) -> str:
    return (f"minimum effects: cost +{th.cost:.0%}, efficiency -{th.efficiency:.0%}, time to first batch "
            f"+{th.ttfb:.0%}, memory +{th.memory_floor_mib:g} MiB and {th.memory_ratio:.0%}, worker memory "
            f"+{th.worker_floor_mib:g} MiB, leak step +{th.slope_floor_mib:g} MiB/epoch, wait +{th.wait_floor:g} "
            f"and {th.wait_ratio:.0%}")


def machine_diff_text(report: GateReport) -> str | None:
    """The machine_info keys that matter and differ, ``key (baseline -> current)``; None when none do."""
    if not report.machine_diffs:
        return None
    return ", ".join(f"{k} ({b!r} -> {c!r})" for k, (b, c) in report.machine_diffs.items())


def verdict_line(report: GateReport) -> str:
    """The two-file verdict in one line; "no regression" only when comparisons ran and nothing is missing."""
    summary = f"{len(report.comparisons)} comparisons in {report.case_count} cases"
    if report.regressions:
        return f"REGRESSED: {len(report.regressions)} of {summary}"
    if not report.comparisons:
        return "INCOMPLETE: nothing compared (no case and metric on both sides); that is never a pass"
    if report.gaps:
        return f"INCOMPLETE: {len(report.gaps)} baseline cases missing; no regression in {summary}"
    return f"no regression: {summary}"


def render(report: GateReport, th: Thresholds, *, show_all: bool = False) -> str:
    """The two-file gate's text (machine-info warnings go to stderr separately)."""
    out = [f"compared: {report.metrics_note}", thresholds_line(th)]
    for layer, why in report.unjudged.items():
        out.append(f"not judged: {layer}: {why}")
    if report.new_cases:
        out.append(f"new cases, in current only (not gated): {len(report.new_cases)}")
        out.extend(f"  {short_name(n)}" for n in report.new_cases)
    if report.narrowed:
        out.append(f"left out on purpose, not compared: {len(report.narrowed)}")
        out.extend(f"  {short_name(m.case)}: {m.why}" for m in report.narrowed)
    if report.gaps:
        out.append(f"MISSING: {len(report.gaps)} baseline cases this run should have held:")
        out.extend(f"  {short_name(m.case)}: {m.why}" for m in report.gaps)
    out.extend(f"note: {n}" for n in report.notes)
    out.append(verdict_line(report))
    rows = report.comparisons if show_all else report.regressions
    if rows:
        out.append(table(("case", "metric", "baseline", "current", "change", "minimum effect", "verdict"), [
            (short_name(c.case), *cells(c), c.rule, "REGRESSED" if c.regressed else "ok") for c in rows]))
    return "\n".join(out)


def fmt_ratio(c: PairedComparison) -> str:
    return (f"{(c.ratio - 1) * 100:+.1f}% [{(c.ratio_low - 1) * 100:+.1f}, {(c.ratio_high - 1) * 100:+.1f}]")


def fmt_threshold(c: PairedComparison) -> str:
    return f"{'-' if c.metric.worse == 'lower' else '+'}{c.threshold:.0%}"


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


def render_paired(comparisons: Sequence[PairedComparison], *, header: str, counts: Sequence[Comparison] = (),
                  counts_unjudged: str | None = None) -> str:
    """The A/B verdict table: every comparison (an A/B run has few), the paired wall-clock rows and the instruction
    counts of both sides (exact: no interval, no pairs, no p-value) in one table."""
    confidence = min((c.confidence for c in comparisons), default=0.9)
    body = table(("case", "metric", "base", "current", f"change [{confidence:.0%} interval]", "threshold",
                  "pairs", "p (Holm)", "verdict"), [
        *[(short_name(c.case), c.metric.label, fmt_value(c.metric.key, c.metric.unit, c.base_median),
           fmt_value(c.metric.key, c.metric.unit, c.current_median), fmt_ratio(c),
           fmt_threshold(c), str(c.pairs), f"{c.p_holm:.4f}",
           c.verdict.upper() if c.verdict == REGRESSED else c.verdict) for c in comparisons],
        *[(c.case, *cells(c, " (exact count)"), c.rule, "-", "-", "REGRESSED" if c.regressed else "ok")
          for c in counts]])
    lines = [header, paired_verdict_line(comparisons, counts), body]
    if counts_unjudged:
        lines.append(f"not judged: cost layer: {counts_unjudged}")
    return "\n".join(lines)
