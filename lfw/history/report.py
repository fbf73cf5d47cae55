"""``history_report(SOURCE, OUT)``: charts of every judged metric against commits, change points, a text summary.

One PNG per runner class and metric family, a panel per metric; the summary names each change point the rules
found, never a step they did not. What each shows: docs/history.md, "Charts and the summary".
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lfw.cli.figures import colour_map, new_figure, save_figure
from lfw.cli.saving import write_atomic
from lfw.gate.metrics import Metric
from lfw.gate.table import fmt_delta, fmt_value
from lfw.gate.thresholds import Thresholds
from lfw.history import changepoints as cp
from lfw.history.changepoints import ALPHA, MIN_RUNS, MIN_SEGMENT, ChangePoint, Series, change_points, is_exact
from lfw.history.store import HistoryRecord, load_history
from lfw.results import keys as K

WIDTH = 120
MAX_TICKS = 24
MAX_LEGEND = 8


def _ticks(ax: Axes, records: Sequence[HistoryRecord]) -> None:
    every = max(1, -(-len(records) // MAX_TICKS))
    positions = list(range(0, len(records), every))
    ax.set_xticks(positions, [records[i].short for i in positions], rotation=60, ha="right", fontsize=7,
                  family="monospace")
    ax.set_xlim(-0.5, len(records) - 0.5)


def _panel(ax: Axes, metric: Metric, series: Sequence[Series], points: Sequence[ChangePoint],
           records: Sequence[HistoryRecord]) -> None:
    moved = list(dict.fromkeys(p.case for p in points))
    colours = colour_map(moved)
    relative = metric.kind == "relative"
    ys = {s.case: [v / s.values[0] for v in s.values] if relative and s.values[0] else list(s.values)
          for s in series}
    for s in sorted(series, key=lambda s: s.case in colours):  # coloured lines on top
        if s.case in colours:
            label = s.case if moved.index(s.case) < MAX_LEGEND else None
            ax.plot(s.runs, ys[s.case], marker="o", markersize=3.5, linewidth=1.6, color=colours[s.case],
                    label=label)
        else:
            ax.plot(s.runs, ys[s.case], linewidth=0.8, color="#9a9a9a", alpha=0.6)
    for p in points:
        ax.plot([p.series.runs[p.step.at]], [ys[p.case][p.step.at]], marker="D", markersize=7,
                markerfacecolor="none", markeredgecolor=colours[p.case], markeredgewidth=1.6)
    for run in sorted({p.series.runs[p.step.at] for p in points}):
        ax.axvline(run - 0.5, color="#d62728", linestyle="--", linewidth=1, alpha=0.8)
        ax.text(run - 0.45, 1.0, records[run].commit[:10], transform=ax.get_xaxis_transform(), rotation=90,
                ha="left", va="top", fontsize=7, color="#d62728", family="monospace")
    if relative:
        ax.axhline(1.0, color="black", linewidth=0.6, alpha=0.5)
    rule = "exact steps" if is_exact(metric) else "PELT + Welch"
    ax.set_title(f"{metric.label} ({len(moved)} of {len(series)} cases moved; {rule})", fontsize=10)
    ax.set_ylabel("x first run" if relative else metric.unit.strip() or "value")
    _ticks(ax, records)
    if moved:
        ax.legend(fontsize=7, loc="best", title=None if len(moved) <= MAX_LEGEND
                  else f"first {MAX_LEGEND} of {len(moved)} moved", title_fontsize=7)


def family_figure(runner: str, family: str, metrics: Sequence[Metric], series: Sequence[Series],
                  points: Sequence[ChangePoint], records: Sequence[HistoryRecord]) -> Figure:
    """One figure: a panel per metric of ``family`` that the history holds, stacked, sharing the commit axis."""
    fig, axes = new_figure(max(8.0, 0.32 * len(records) + 4), 3.4 * len(metrics), nrows=len(metrics))
    for ax, metric in zip(axes, metrics, strict=True):
        _panel(ax, metric, [s for s in series if s.metric == metric], [p for p in points if p.metric == metric],
               records)
    fig.suptitle(f"{runner}: {family} over {len(records)} runs (commit order; * = dirty tree)", fontsize=11)
    return fig


def draw_history(runner: str, records: Sequence[HistoryRecord], series: Sequence[Series],
                 points: Sequence[ChangePoint], out_dir: Path) -> list[Path]:
    """``<out_dir>/<runner>-<family>.png`` for every family with at least one series; returns the paths."""
    paths = []
    for family in dict.fromkeys(s.metric.family for s in series):
        metrics = list(dict.fromkeys(s.metric for s in series if s.metric.family == family))
        fig = family_figure(runner, family, metrics, series, points, records)
        paths += save_figure(fig, out_dir, f"{runner}-{family}", ("png",))
    return paths


@dataclass
class HistoryReport:
    """What :func:`history_report` wrote and found: the chart paths, the change points and the summary text
    (also written to ``<out>/history/summary.txt``)."""

    out_dir: Path
    charts: list[Path] = field(default_factory=list)
    points: list[ChangePoint] = field(default_factory=list)
    series_count: int = 0
    summary: str = ""


def point_line(p: ChangePoint) -> str:
    """One change point: first commit after it, the commit before, the step and what it was judged on."""
    m, s = p.metric, p.step
    values = f"{fmt_value(m.key, m.unit, s.before)} -> {fmt_value(m.key, m.unit, s.after)}"
    if s.p_value is not None:
        values += f", medians of {s.runs_before} and {s.runs_after} runs, p = {s.p_value:.1g}"
    return (f"  {p.case}: at {p.commit.short} (after {p.previous.short}): {fmt_delta(m.kind, m.unit, s.change)} "
            f"({values})" + "".join(f"; {n}" for n in p.notes))


def _listing(label: str, cases: Sequence[str]) -> list[str]:
    if not cases:
        return []
    return textwrap.wrap(f"{label} ({len(cases)} cases): {', '.join(cases)}", WIDTH, initial_indent="  ",
                         subsequent_indent="      ", break_on_hyphens=False)


def metric_block(metric: Metric, series: Sequence[Series], points: Sequence[ChangePoint], th: Thresholds) -> list[str]:
    """The summary lines of one metric of one runner: its rule, each change point, then the cases without."""
    rule = f"exact steps beyond {th.cost:.0%}" if is_exact(metric) else "PELT + Welch"
    lines = [f"{metric.label} [{metric.key}; {rule}]"]
    quiet: list[str] = []
    short: list[str] = []
    for s in series:
        mine = [p for p in points if p.series is s]
        lines += [point_line(p) for p in mine]
        if not mine:
            (short if not is_exact(metric) and len(s.values) < MIN_RUNS else quiet).append(s.case)
    lines += _listing("no change point", quiet)
    lines += _listing(f"too few runs to judge (fewer than {MIN_RUNS})", short)
    return lines


def runner_header(runner: str, records: Sequence[HistoryRecord]) -> str:
    commits = len({r.commit for r in records})
    machines = sorted({f"{r.cpu or 'CPU not recorded'}, {r.usable_cores or '?'} usable cores" for r in records})
    first, last = records[0], records[-1]
    return (f"runner {runner}: {len(records)} runs of {commits} commits, {first.short} ({first.date[:10]}) .. "
            f"{last.short} ({last.date[:10]}); {'; '.join(machines)}")


def rules_text(th: Thresholds, family_size: int) -> str:
    try:
        ruptures = f"ruptures {version('ruptures')}"
    except Exception:  # metadata missing: the import itself will say so
        ruptures = "ruptures"
    return textwrap.fill(
        f"rules: counts (instructions, moves and requests per image) step where consecutive runs differ by more "
        f"than the gate's cost threshold ({th.cost:.0%}); wall clock and memory: PELT ({ruptures}, l2 cost on log "
        f"values of relative metrics, SIC penalty 2 sigma^2 ln n, at least {MIN_SEGMENT} runs a side) confirmed "
        f"by Welch's t-test at {ALPHA:g} / ({family_size} series x (n - 1) places); a wall-clock change point may "
        "be the runner rather than the code: make gate-ab tells which", WIDTH, subsequent_indent="  ")


def reference_block(records: Sequence[HistoryRecord]) -> list[str]:
    """The reference rows (other projects' loaders, never judged) of one runner: each case's images/s run by run,
    oldest first, with the peer versions each run measured where they changed."""
    cases = list(dict.fromkeys(case for r in records for case in r.references))
    if not cases:
        return []
    lines = ["  reference rows, not judged (lfw.gate.metrics.REFERENCE_GROUPS): images/s by run"]
    for case in cases:
        values = [f"{r.short} {r.references[case][K.IMAGES_PER_S]:,.0f}" for r in records
                  if K.IMAGES_PER_S in r.references.get(case, {})]
        lines.append(f"    {case}: " + "; ".join(values))
    versions = [r for i, r in enumerate(records) if r.versions and (i == 0 or r.versions != records[i - 1].versions)]
    lines += [f"    versions at {r.short}: " + ", ".join(f"{k} {v}" for k, v in r.versions.items()) for r in versions]
    return lines


def history_report(source: Path, out: Path, thresholds: Thresholds | None = None) -> HistoryReport:
    """Read the history at ``source`` (:func:`lfw.history.store.load_history`), write one PNG per runner class
    and metric family and ``summary.txt`` into ``<out>/history/``, and return the report. Raises a one-line
    :class:`LFWError` when the source is missing or holds no history."""
    th = thresholds or Thresholds()
    history = load_history(source)
    out_dir = out / "history"
    report = HistoryReport(out_dir)
    per_runner = {name: cp.series_of(name, records) for name, records in history.runners.items()}
    family_size = sum(cp.statistical_family(s) for s in per_runner.values())
    blocks = []
    for runner, records in history.runners.items():
        series = per_runner[runner]
        points = change_points(records, series, th, family_size)
        report.points += points
        report.series_count += len(series)
        report.charts += draw_history(runner, records, series, points, out_dir)
        block = [runner_header(runner, records)]
        for metric in dict.fromkeys(s.metric for s in series):
            block += metric_block(metric, [s for s in series if s.metric == metric], points, th)
        block += reference_block(records)
        blocks.append("\n".join(block))
    exact = sum(1 for p in report.points if is_exact(p.metric))
    head = [*history.notes, rules_text(th, family_size), f"charts: {', '.join(str(p) for p in report.charts)}"]
    tail = (f"{len(report.points)} change points in {report.series_count} series ({exact} exact steps, "
            f"{len(report.points) - exact} by PELT + Welch)" if report.points
            else f"no change point in {report.series_count} series")
    report.summary = "\n\n".join(["\n".join(head), *blocks, tail])
    write_atomic(out_dir / "summary.txt", report.summary + "\n")
    return report
