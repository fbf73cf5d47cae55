"""Chart 3: memory of the process tree, over time, as growth per case and across epochs; PSS and USS show the
copy-on-access that RSS hides with forked workers (docs/methodology.md).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lfw.cli.figures import bar_height, colour_map, label_rows, new_figure
from lfw.report.chart_knobs import describe, varying_keys
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results.knobs import INDEX
from lfw.stats.variation import mean_sd

TIMELINE_GROUPS = ("memory-index", "index")
GROWTH_GROUPS = ("memory-index", "index", "leak")
GROWTH_METRICS = {
    K.RSS_GROWTH_MIB: ("tree RSS", "#9e9e9e"),
    K.PSS_GROWTH_MIB: ("tree PSS", "#1f77b4"),
    K.USS_GROWTH_MIB: ("tree USS", "#ff7f0e"),
    K.WORKER_USS_GROWTH_MIB: ("USS per worker (mean)", "#d62728"),
}
SERIES_LABELS = {K.USS_MIB_EPOCHS: "tree USS", K.PSS_MIB_EPOCHS: "tree PSS", K.WORKER_USS_MIB_EPOCHS: "worker USS"}


def timeline(case: Case) -> dict[str, list[float]]:
    """The sampled timeline of a case (time in the pass, "before" at t = 0), or ``{}`` with fewer than 2 points."""
    raw = case.extra.get(K.TIMELINE)
    if not isinstance(raw, dict) or not isinstance(raw.get("t"), list) or len(raw["t"]) < 2:
        return {}
    return {k: [float(x) for x in v] for k, v in raw.items() if isinstance(v, list) and len(v) == len(raw["t"])}


def timeline_cases(run: Run) -> list[Case]:
    """Cases of the first memory group that has sampled timelines (the list-vs-numpy index cases)."""
    found = ([c for c in run.group(group) if timeline(c)] for group in TIMELINE_GROUPS)
    return next((cases for cases in found if cases), [])


def timeline_chart(run: Run) -> Figure | None:
    """Tree PSS (solid) and RSS (dotted) on the left, worker USS on the right, against time in the pass."""
    cases = timeline_cases(run)
    if not cases:
        return None
    fig, (ax_pss, ax_uss) = new_figure(12.0, 5.0, ncols=2)
    keys = varying_keys(cases) or [INDEX.key]
    colours = colour_map(describe(c, keys) for c in cases)
    worker_key = next((k for c in cases for k in timeline(c) if "worker" in k), None)
    uss_key = worker_key or "uss"
    for case in cases:
        points, label = timeline(case), describe(case, keys)
        colour = colours[label]
        if "pss" in points:
            ax_pss.plot(points["t"], points["pss"], color=colour, linewidth=2, marker=".", label=f"{label}: PSS")
        if "rss" in points:
            ax_pss.plot(points["t"], points["rss"], color=colour, linewidth=1.2, linestyle=":", label=f"{label}: RSS")
        if uss_key in points:
            ax_uss.plot(points["t"], points[uss_key], color=colour, linewidth=2, marker=".", label=label)
    ax_pss.set_title("Tree PSS (solid) vs RSS (dotted): RSS misses copy-on-access")
    ax_pss.set_ylabel("memory of main process + workers, MiB")
    ax_uss.set_title("USS per worker" if worker_key else "Tree USS (no per-worker USS in the timeline)")
    ax_uss.set_ylabel("private memory (USS), MiB")
    for ax in (ax_pss, ax_uss):
        ax.set_xlabel("time since the pass started, s")
        ax.legend(loc="best", fontsize=9)
    fig.suptitle(f"Memory over one pass, sampled in the background (group '{cases[0].group}')", fontweight="bold")
    return fig


def growth_cases(run: Run) -> list[Case]:
    """Cases of the memory groups when the run has them (growth is their point), else every case sampled."""
    sampled = [c for c in run.cases if c.number(K.PSS_GROWTH_MIB) is not None]
    return [c for c in sampled if c.group in GROWTH_GROUPS] or sampled


def growth_chart(run: Run) -> Figure | None:
    """Grouped horizontal bars per case: RSS, PSS, USS growth (and per-worker USS) over one pass."""
    cases = growth_cases(run)
    if not cases:
        return None
    metrics = [m for m in GROWTH_METRICS if any(c.number(m) is not None for c in cases)]
    fig, (ax,) = new_figure(11.0, bar_height(len(cases), per_row=0.08 * len(metrics) + 0.15))
    height = 0.8 / len(metrics)
    for i, metric in enumerate(metrics):
        name, colour = GROWTH_METRICS[metric]
        points = [mean_sd(c.rounds(metric)) if c.number(metric) is not None else (np.nan, 0.0) for c in cases]
        ys = np.arange(len(cases)) + (i - (len(metrics) - 1) / 2) * height
        ax.barh(ys, [m for m, _ in points], height * 0.92, xerr=[s for _, s in points], capsize=2,
                color=colour, label=name)
    label_rows(ax, [c.label for c in cases], [c.group for c in cases])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("growth from first batch to end of pass, MiB (mean ± sd over rounds)")
    ax.legend(loc="best", fontsize=9)
    fig.suptitle("Memory growth per case: PSS/USS show copy-on-access that RSS hides", fontweight="bold")
    return fig


def leak_series(case: Case) -> dict[str, list[float]]:
    """The leak check's end-of-epoch memory series (:data:`lfw.results.keys.EPOCH_SERIES`), MiB, those the case has."""
    series = {key: case.extra.get(key) for key in K.EPOCH_SERIES}
    return {key: [float(v) for v in values] for key, values in series.items()
            if isinstance(values, list) and len(values) >= 2 and all(isinstance(v, int | float) for v in values)}


def leak_chart(run: Run, group: str = "leak") -> Figure | None:
    """The leak group's per-epoch memory series as growth since epoch 1 (so levels far apart share an axis):
    colour per case, line style per series, the recorded slope in the legend."""
    cases = [c for c in run.group(group) if leak_series(c)]
    if not cases:
        return None
    fig, (ax,) = new_figure(11.0, 5.2)
    keys = varying_keys(cases)
    colours = colour_map(c.name for c in cases)
    styles = ["-", "--", ":", "-."]
    for case in cases:
        for i, (key, values) in enumerate(leak_series(case).items()):
            slope = case.number(K.SLOPE_OF[key])
            ax.plot(range(1, len(values) + 1), [v - values[0] for v in values], marker="o", linewidth=1.8,
                    color=colours[case.name], linestyle=styles[i % len(styles)],
                    label=f"{describe(case, keys)}: {SERIES_LABELS[key]}"
                          + (f" (slope {slope:+.2f} MiB/epoch)" if slope is not None else ""))
    ax.set_xlabel("epoch (persistent workers)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("growth since the end of epoch 1, MiB")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.legend(loc="upper left", fontsize=8)
    fig.suptitle("Memory across epochs: a leak climbs every epoch (slope in MiB/epoch in the legend)",
                 fontweight="bold")
    return fig
