"""Plain-text rendering of a :class:`GateReport`: what CI logs show and what a reviewer reads.

Each regressed row names the case, the metric, both medians, the change, and the noise it was judged
against (the p-value with the round counts, and the baseline's own spread), so a reader can tell a real
slowdown from a verdict on thin evidence without opening the JSON.
"""

from __future__ import annotations

from lfw.gate.compare import GateReport
from lfw.gate.stats import Comparison, Thresholds

HEADERS = ("case", "metric", "baseline", "current", "change", "judged against", "verdict")


def short_case(fullname: str) -> str:
    """``benchmarks/test_x.py::test_y[p]`` as ``test_y[p]``, the name pytest-benchmark's own tables show."""
    return fullname.rpartition("::")[2] or fullname


def fmt_value(c: Comparison, value: float) -> str:
    if c.metric.family in ("memory", "slope"):
        return f"{value:.1f}{c.metric.unit}"
    if c.metric.key == "images_per_s":
        return f"{value:.1f}"
    return f"{value:.3f}{c.metric.unit}"


def fmt_change(c: Comparison) -> str:
    if c.metric.kind == "relative":
        return f"{c.change * 100:+.1f}%"
    return f"{c.change:+.1f}{c.metric.unit}" if c.metric.family in ("memory", "slope") else f"{c.change:+.3f}"


def fmt_noise(c: Comparison) -> str:
    rounds = f"{c.n_baseline}v{c.n_current}"
    test = f"p={c.p_value:.3f} ({rounds})" if c.p_value is not None else f"{rounds} rounds: effect size only"
    if c.metric.kind == "relative":
        return f"{test}, base CV {c.baseline_spread * 100:.1f}%"
    return f"{test}, base range {fmt_value(c, c.baseline_spread)}"


def verdict(c: Comparison) -> str:
    if c.regressed:
        return "REGRESSED"
    return "large, not evidenced" if c.large else "ok"


def render_rows(rows: list[Comparison]) -> str:
    cells = [HEADERS] + [
        (short_case(c.case), c.metric.label, fmt_value(c, c.baseline), fmt_value(c, c.current), fmt_change(c),
         fmt_noise(c), verdict(c))
        for c in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def thresholds_line(th: Thresholds) -> str:
    return (f"thresholds: throughput {th.throughput:.0%}, ttfb {th.ttfb:.0%}, memory +{th.memory_floor_mib:g} MiB "
            f"and {th.memory_ratio:.0%}, slope +{th.slope_floor_mib:g} MiB/epoch, wait +{th.wait_floor:g} and "
            f"{th.wait_ratio:.0%}, alpha {th.alpha:g}")


def render(report: GateReport, th: Thresholds, *, show_all: bool = False) -> str:
    """The full text the CLI prints to stdout (warnings about machine info go to stderr separately)."""
    out = [f"metrics: {report.metrics_note}", thresholds_line(th)]
    for label, names in (("new cases, in current only (not gated)", report.new_cases),
                         ("missing cases, in baseline only (not run)", report.missing_cases)):
        if names:
            out.append(f"{label}: {len(names)}")
            out.extend(f"  {short_case(n)}" for n in names)
    out.extend(f"note: {n}" for n in report.notes)
    regressed = report.regressions
    summary = f"{len(report.comparisons)} comparisons in {report.case_count} cases"
    if regressed:
        out.append(f"REGRESSED: {len(regressed)} of {summary}")
    else:
        out.append(f"no regression: {summary}")
    rows = report.comparisons if show_all else regressed
    if rows:
        out.append(render_rows(rows))
    return "\n".join(out)
