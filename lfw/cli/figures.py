"""Shared figure plumbing: the Agg backend, one look for every chart, saving PNG and SVG. Charts are
:class:`matplotlib.figure.Figure` objects, never pyplot's global state, so none is leaked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import matplotlib
import numpy as np

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.transforms import ScaledTranslation, Transform

from lfw.cli.saving import write_figure

matplotlib.rcParams["svg.hashsalt"] = "lfw-bench"  # stable SVG ids: the same run gives the same file

FORMATS = ("png", "svg")
DPI = 110
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


class ErrorbarStyle(TypedDict):
    """The keyword arguments every errorbar shares, typed so ``**ERRORBAR`` is checked against ``Axes.errorbar``."""

    capsize: float
    elinewidth: float
    markersize: float
    linewidth: float


ERRORBAR: ErrorbarStyle = {"capsize": 4, "elinewidth": 1.2, "markersize": 6, "linewidth": 1.8}


@dataclass(frozen=True)
class ChartSpec:
    """A chart the report may draw: ``draw(run)`` gives a figure, or None when the run lacks its data."""

    stem: str
    title: str
    shows: str  # one sentence for the summary page: what to read off the chart
    needs: str  # what the run must hold, named in the summary when the chart is skipped
    draw: Callable[..., Figure | None]


def new_figure(width: float = 10.0, height: float = 4.8, ncols: int = 1, nrows: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure with ``nrows`` x ``ncols`` axes (row by row), a light grid and constrained layout."""
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = [fig.add_subplot(nrows, ncols, i + 1) for i in range(nrows * ncols)]
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.set_axisbelow(True)
    return fig, axes


def colour_map(values: Iterable[Any]) -> dict[Any, str]:
    """A stable colour per value (e.g. per transform), so one transform has one colour in every chart."""
    return {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(dict.fromkeys(values))}


def dodge(fig: Any, index: int, count: int, step_pt: float = 5.0) -> Transform:
    """A sideways shift in points for series ``index`` of ``count`` (the x data stay the measured values)."""
    return ScaledTranslation((index - (count - 1) / 2) * step_pt / 72, 0, fig.dpi_scale_trans)


def dodged_errorbar(ax: Axes, index: int, count: int, xs: Sequence[float], points: Sequence[tuple[float, ...]],
                    **style: Any) -> ErrorbarContainer:
    """``ax.errorbar`` of (mean, sd) or (centre, down, up) points at ``xs``, shifted by :func:`dodge`; the data
    limits are added by hand (matplotlib does not autoscale an artist with its own transform)."""
    means, below, above = (np.array([p[i] for p in points], dtype=float) for i in (0, 1, -1))
    shift = dodge(ax.figure, index, count) if count > 1 else None
    container = ax.errorbar(xs, means, yerr=[below, above], transform=ax.transData + shift if shift else ax.transData,
                            **style)
    finite = np.isfinite(means)
    xs_arr = np.asarray(xs, dtype=float)[finite]
    ax.update_datalim(np.column_stack([np.r_[xs_arr, xs_arr], np.r_[means[finite] - below[finite],
                                                                    means[finite] + above[finite]]]))
    ax.autoscale_view()
    return container


def save_figure(fig: Figure, out_dir: Path, stem: str, formats: Iterable[str] = FORMATS) -> list[Path]:
    """Write ``<stem>.<fmt>`` for each format into ``out_dir`` and return the paths."""
    paths = []
    for fmt in formats:
        metadata = {"Date": None} if fmt == "svg" else {"Software": "lfw-bench"}
        paths.append(write_figure(fig, out_dir / f"{stem}.{fmt}", dpi=DPI, format=fmt, metadata=metadata))
    return paths


def label_rows(ax: Axes, labels: Sequence[str], groups: Sequence[str | None] = (), **tick_style: Any) -> None:
    """Label the rows of a horizontal chart, y = 0, 1, ... from the top; where ``groups`` differ, a rule and the
    group's name between them (test ids repeat across groups)."""
    ax.set_yticks(range(len(labels)), labels, **tick_style)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    if len(set(groups)) < 2:
        return
    for row, group in enumerate(groups):
        if row == 0 or group != groups[row - 1]:
            if row:
                ax.axhline(row - 0.5, color="grey", linewidth=0.8)
            ax.text(0.995, row - 0.45, str(group), transform=ax.get_yaxis_transform(), ha="right", va="top",
                    fontsize=8, style="italic", color="#555555",
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})


def bar_height(n_rows: int, per_row: float = 0.32, minimum: float = 3.2) -> float:
    """Figure height for a horizontal bar chart of ``n_rows`` cases, so labels never overlap."""
    return max(minimum, 1.4 + per_row * n_rows)
