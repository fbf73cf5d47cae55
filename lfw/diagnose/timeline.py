"""The pipeline timeline: a row per worker, the prefetch queue's depth, the training loop and its stalls.

One panel per run, side by side (measured next to simulated) on one time axis; each batch keeps its worker's
colour from the loader row to the compute bar; the loop's row shows stalls in red and hand-overs in grey. Drawn
on matplotlib's Agg canvas without pyplot (no display, no global backend state); the GIF sweeps a "now" line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.animation import FuncAnimation, PillowWriter
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from tqdm import tqdm

from lfw.cli.saving import write_figure
from lfw.diagnose.events import MAIN_PROCESS, BatchRecord, queue_depth

STALL_COLOR = "tab:red"
COPY_COLOR = "0.6"
MIN_STALL_S = 1e-3
LEGEND_SPACE = 0.1  # share of the figure height kept free below the panels for the legend
WORKER_PALETTE = (0, 1, 2, 4, 5, 6, 8, 9)  # tab10 without red (stalls) and grey (hand-over)


@dataclass
class Panel:
    """One column of the chart: a run's records and what to call it."""

    title: str
    records: Sequence[BatchRecord]
    workers: int
    capacity: int | None = None  # prefetch_factor x workers, drawn as a dashed line on the queue row


def _worker_color(worker: int) -> tuple[float, float, float, float]:
    cmap = matplotlib.colormaps["tab10"]
    return cmap(WORKER_PALETTE[worker % len(WORKER_PALETTE)]) if worker != MAIN_PROCESS else (0.3, 0.3, 0.3, 1.0)


def _clip(start: float, end: float, until: float) -> tuple[float, float] | None:
    """The part of [start, end] before ``until``, as (start, width); None if nothing is left."""
    if math.isnan(start) or start > until:
        return None
    stop = until if math.isnan(end) else min(end, until)
    return (start, stop - start) if stop > start else None


def _rows(panel: Panel) -> list[int]:
    return sorted({r.worker for r in panel.records}) or list(range(max(panel.workers, 1)))


def _draw_workers(ax: Axes, panel: Panel, until: float) -> None:
    rows = _rows(panel)
    for r in panel.records:
        span = _clip(r.load_start, r.load_end, until)
        if span is None:
            continue
        y = rows.index(r.worker)
        done = not math.isnan(r.load_end) and r.load_end <= until
        ax.broken_barh([span], (y - 0.4, 0.8), facecolors=_worker_color(r.worker), alpha=1.0 if done else 0.45,
                       edgecolor="white", linewidth=0.5)
        if done and len(panel.records) <= 60:
            ax.text(span[0] + span[1] / 2, y, str(r.index), ha="center", va="center", fontsize=6, color="white")
    ax.set_yticks(range(len(rows)), ["main" if w == MAIN_PROCESS else f"worker {w}" for w in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_ylabel("loader")


def _draw_queue(ax: Axes, panel: Panel, until: float, t_max: float) -> None:
    times = np.linspace(0.0, t_max, 1500)
    times = times[times <= until]
    depth = queue_depth(panel.records, times)
    ax.step(times, depth, where="post", color="black", linewidth=1.0)
    if panel.capacity:
        ax.axhline(panel.capacity, color="0.5", linestyle="--", linewidth=0.8)
    ax.set_ylim(0, max(panel.capacity or 0, int(depth.max()) if depth.size else 0, 1) + 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("queue depth\n(batches)")


def _draw_consumer(ax: Axes, panel: Panel, until: float) -> None:
    for r in panel.records:
        # Red while the batch is still loading; grey from when it is loaded (or asked for, if later) to the
        # step: the hand-over from the worker and any copy, whether inside next() (measured) or after it.
        ready = r.got if math.isnan(r.load_end) else max(r.ask, min(r.load_end, r.got))
        step_style = {"facecolors": _worker_color(r.worker), "edgecolor": "white", "linewidth": 0.5}
        for start, end, shortest, style in ((r.ask, ready, MIN_STALL_S, {"facecolors": STALL_COLOR}),
                                            (ready, r.step_start, 0.0, {"facecolors": COPY_COLOR}),
                                            (r.step_start, r.step_end, 0.0, step_style)):
            span = _clip(start, end, until)
            if span and span[1] > shortest:
                ax.broken_barh([span], (-0.4, 0.8), **style)
    ax.set_yticks([0], ["training\nloop"])
    ax.set_ylim(-0.6, 0.6)
    ax.set_xlabel("time since the pass started (s)")


def _legend(fig: Figure) -> None:
    """One legend for the whole figure, below the panels, so it never hides a stall."""
    handles = [
        Patch(color=_worker_color(0), label="loading (number: batch index)"),
        Patch(color=_worker_color(1), label="step (colour: batch's worker)"),
        Patch(color=STALL_COLOR, label="stall: waiting for data"),
        Line2D([], [], color="black", linewidth=1.0, label="queue: loaded, not yet taken"),
        Line2D([], [], color="0.5", linestyle="--", linewidth=0.8, label="queue capacity"),
        Patch(color=COPY_COLOR, label="hand-over / copy"),
    ]
    for old in list(fig.legends):
        old.remove()
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, frameon=False)


def _draw(fig: Figure, axes: np.ndarray, panels: Sequence[Panel], title: str, until: float, t_max: float) -> None:
    """Draw every panel up to ``until`` (``t_max`` for the whole run; unfinished intervals end there)."""
    for col, panel in enumerate(panels):
        for row in range(3):
            axes[row, col].clear()
        _draw_workers(axes[0, col], panel, until)
        _draw_queue(axes[1, col], panel, until, t_max)
        _draw_consumer(axes[2, col], panel, until)
        axes[0, col].set_title(panel.title, fontsize=10)
        axes[2, col].set_xlim(0, t_max)
        if until < t_max:
            for row in range(3):
                axes[row, col].axvline(until, color="black", linewidth=0.8)
    fig.suptitle(title)
    _legend(fig)


def _laid_out(panels: Sequence[Panel], out: str | Path, title: str) -> tuple[Path, Figure, np.ndarray, float]:
    """The output path (its folder made), and the figure with the whole run drawn and laid out once."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    heights = [max(1.2, 0.35 * max(len(_rows(p)) for p in panels)), 1.1, 0.6]
    fig = Figure(figsize=(7 * len(panels), sum(heights) + 1.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(3, len(panels), squeeze=False, gridspec_kw={"height_ratios": heights}, sharex=True)
    ends = [t for p in panels for r in p.records for t in (r.step_end, r.load_end) if not math.isnan(t)]
    t_max = max(ends, default=1.0) * 1.02
    _draw(fig, axes, panels, title, t_max, t_max)
    fig.tight_layout(rect=(0, LEGEND_SPACE, 1, 1))
    return out, fig, axes, t_max


def draw_timeline(panels: Sequence[Panel], out: str | Path, title: str) -> Path:
    """Write the chart as a PNG and return its path."""
    out, fig, _, _ = _laid_out(panels, out, title)
    return write_figure(fig, out, dpi=110)


def animate_timeline(panels: Sequence[Panel], out: str | Path, title: str, frames: int = 48,
                     fps: int = 8, progress: bool = True) -> Path:
    """Write the GIF: the same chart, in its layout, drawn up to a moving "now", ``frames`` steps over the run."""
    out, fig, axes, t_max = _laid_out(panels, out, title)

    def frame(i: int) -> list:
        _draw(fig, axes, panels, title, t_max * (i + 1) / frames, t_max)
        return []

    with tqdm(total=frames, unit="frame", desc=f"drawing {out.name}", disable=not progress, leave=False) as bar:
        FuncAnimation(fig, frame, frames=frames, blit=False).save(
            out, writer=PillowWriter(fps=fps), dpi=70, progress_callback=lambda i, n: bar.update(1))
    return out
