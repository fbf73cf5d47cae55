"""History charts: every judged metric against commits, one PNG per runner class and metric family.

A family is one figure with one panel per metric, each case a line over the runs in commit order; cases with a
change point are coloured and named, the others thin and grey, so a figure of forty cases still shows which
moved. Relative metrics are drawn as a ratio to each case's first run, so cases of very different size share a
panel. What a chart shows: docs/history.md, "Charts and the summary".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lfw.cli.figures import colour_map, new_figure, save_figure
from lfw.gate.metrics import Metric
from lfw.history.series import ChangePoint, Series, is_exact
from lfw.history.store import HistoryRecord

MAX_TICKS = 24
MAX_LEGEND = 8


def _ticks(ax: Axes, records: Sequence[HistoryRecord]) -> None:
    every = max(1, -(-len(records) // MAX_TICKS))
    positions = list(range(0, len(records), every))
    ax.set_xticks(positions)
    ax.set_xticklabels([records[i].short for i in positions], rotation=60, ha="right", fontsize=7,
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
    unit = "x first run" if relative else metric.unit.strip() or "value"
    rule = "exact steps" if is_exact(metric) else "PELT + Welch"
    ax.set_title(f"{metric.label} ({len(moved)} of {len(series)} cases moved; {rule})", fontsize=10)
    ax.set_ylabel(unit)
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
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    families = list(dict.fromkeys(s.metric.family for s in series))
    for family in families:
        metrics = list(dict.fromkeys(s.metric for s in series if s.metric.family == family))
        fig = family_figure(runner, family, metrics, series, points, records)
        paths += save_figure(fig, out_dir, f"{runner}-{family}", ("png",))
    return paths
