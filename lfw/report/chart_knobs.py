"""Chart 2: one DataLoader knob at a time (batch size, pin_memory, prefetch_factor, start method, ...).

Panels: images/s and time to first batch (mean ± sd over rounds), and the paired ratio of each value's images/s
to a reference value with its signed-rank interval. Numeric knobs are lines, others grouped bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lfw.cli.figures import ERRORBAR, bar_height, colour_map, dodged_errorbar, label_rows, new_figure
from lfw.report.legend import describe, format_value, sort_key, varying_keys
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import BATCH_SIZE, NUM_WORKERS, PIN_MEMORY, PREFETCH_FACTOR, START_METHOD
from lfw.results.ratios import Ratio, ratio
from lfw.stats.variation import mean_sd

METRICS = {
    K.IMAGES_PER_S: ("images/s (higher is better)", 1.0),
    K.TTFB_S: ("time to first batch, ms (lower is better)", 1000.0),
    K.DATA_WAIT_FRACTION: ("share of the pass spent waiting for data, %", 100.0),
    K.H2D_GB_S: ("host-to-device copy, GB/s (higher is better)", 1.0),
}
DEFAULT_METRICS = (K.IMAGES_PER_S, K.TTFB_S)


def split_series(cases: Sequence[Case], key: str) -> dict[str, list[Case]]:
    """Cases by the values of the params other than ``key`` that vary: one legend entry each."""
    others = varying_keys(cases, exclude=[key])
    series: dict[str, list[Case]] = {}
    for case in cases:
        series.setdefault(describe(case, others) if others else "all cases", []).append(case)
    return series


def _scaled(case: Case, metric: str) -> tuple[float, float]:
    mean, sd = mean_sd(case.rounds(metric))
    return mean * METRICS[metric][1], sd * METRICS[metric][1]


def ratios_to(members: Sequence[Case], key: str, reference: Any) -> list[tuple[Case, Ratio]]:
    """Each member's paired images/s ratio to the member whose ``key`` is ``reference`` (none if unpaired)."""
    ref = next((c for c in members if c.value(key) == reference), None)
    if ref is None:
        return []
    return [(c, r) for c in members if (r := ratio(c, ref)) is not None]


def draw_ratios(ax: Axes, xs: Sequence[float], found: Sequence[Ratio], reference: Any, **style: Any) -> None:
    """Estimates with asymmetric interval bars, and the line of no difference."""
    estimates = np.array([r.estimate for r in found])
    bars = np.array([[r.estimate - r.low for r in found], [r.high - r.estimate for r in found]])
    ax.errorbar(xs, estimates, yerr=bars, linestyle="none", **style)
    ax.axhline(1.0, color="black", linewidth=0.8)
    confidence = min(r.confidence for r in found)
    ax.set_ylabel(f"images/s ratio to {format_value(reference)}\n(paired by round, {confidence:.1%} interval)")


def knob_chart(run: Run, group: str, key: str, *, xlabel: str, title: str, numeric: bool, log2: bool = False,
               metrics: Sequence[str] = DEFAULT_METRICS, reference: Any = None) -> Figure | None:
    """Metrics per value of one knob, a colour per combination of the other varying params, and ratios."""
    cases = [c for c in run.group(group) if not numeric or (isinstance(c.value(key), int | float)
                                                          and not isinstance(c.value(key), bool))]
    if not cases:
        return None
    values = sorted({c.value(key) for c in cases}, key=sort_key)
    series = split_series(cases, key)
    with_ratios = reference is not None and any(len(ratios_to(m, key, reference)) > 1 for m in series.values())
    fig, axes = new_figure(16.0 if with_ratios else 12.0, 4.8, ncols=len(metrics) + with_ratios)
    colours = colour_map(series)
    width = 0.8 / len(series)
    for ax in axes:
        if log2:  # before plotting: the dodged series compute their data limits in the axis' scale
            ax.set_xscale("log", base=2)
    for i, (label, members) in enumerate(series.items()):
        if numeric:
            drawn = sorted(members, key=lambda c: c.value(key))
            xs = [c.value(key) for c in drawn]
        else:
            by_value = {repr(c.value(key)): c for c in members}
            slots = [j for j, v in enumerate(values) if repr(v) in by_value]
            drawn = [by_value[repr(values[j])] for j in slots]
            xs = list(np.array(slots) + (i - (len(series) - 1) / 2) * width)
        for ax, metric in zip(axes, metrics, strict=False):
            points = [_scaled(c, metric) for c in drawn]
            if numeric:
                dodged_errorbar(ax, i, len(series), xs, points, label=label, marker="o", color=colours[label],
                                **ERRORBAR)
            else:
                bars = ax.bar(xs, [m for m, _ in points], width * 0.92, yerr=[s for _, s in points], capsize=4,
                              color=colours[label], label=label)
                ax.bar_label(bars, fmt="{:,.0f}", padding=2, fontsize=8)
        if with_ratios and (found := ratios_to(members, key, reference)):
            x_of = {repr(c.value(key)): x for c, x in zip(drawn, xs, strict=True)}
            draw_ratios(axes[-1], [x_of[repr(c.value(key))] for c, _ in found], [r for _, r in found], reference,
                        marker="o" if numeric else "D", color=colours[label], capsize=4)
    for ax, metric in zip(axes, metrics, strict=False):
        ax.set_ylabel(METRICS[metric][0])
        if numeric:
            ax.set_ylim(bottom=0)
        else:
            ax.margins(y=0.15)
    for ax in axes:
        ax.set_xticks(values if numeric else range(len(values)), [format_value(v) for v in values])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
    if len(series) > 1:
        axes[0].legend(loc="best", fontsize=9)
    fig.suptitle(f"{title}{constants(cases)}: mean ± standard deviation over rounds", fontweight="bold")
    return fig


def group_overview(run: Run, group: str | None) -> Figure | None:
    """A group without its own chart: bars per case of images/s and time to first batch where recorded, and data wait
    or copy rate if every case has it."""
    cases = run.group(group)
    if not cases:
        return None
    metrics = [*(m for m in DEFAULT_METRICS if any(c.number(m) is not None for c in cases)),
               *(m for m in METRICS if m not in DEFAULT_METRICS and all(c.number(m) is not None for c in cases))]
    if not metrics:
        return None
    fig, axes = new_figure(6.0 * len(metrics), bar_height(len(cases)), ncols=len(metrics))
    keys = varying_keys(cases)
    labels = [describe(c, keys) for c in cases]
    for ax, metric in zip(axes, metrics, strict=True):
        points = [_scaled(c, metric) for c in cases]
        bars = ax.barh(range(len(cases)), [m for m, _ in points], xerr=[s for _, s in points], capsize=3,
                       color=colour_map(["x"])["x"])
        ax.bar_label(bars, fmt="{:,.0f}", padding=3, fontsize=8)
        label_rows(ax, labels if ax is axes[0] else [""] * len(cases))
        ax.set_xlabel(METRICS[metric][0])
        ax.margins(x=0.15)
    name = f"Group '{group}'" if group is not None else "Cases without a group"
    fig.suptitle(f"{name}: each case, mean ± standard deviation over rounds", fontweight="bold")
    return fig


def constants(cases: Sequence[Case], keys: Sequence[str] = (BATCH_SIZE.key, NUM_WORKERS.key, KN.TRANSFORM.key)) -> str:
    """`` (batch_size=64, num_workers=2)``: the main knobs that are the same in every case, for the title."""
    fixed = [k for k in keys if len({repr(c.value(k)) for c in cases}) == 1 and cases[0].value(k) is not None]
    return f" ({describe(cases[0], fixed)})" if fixed else ""


# The knob charts of the report (lfw.report.render.dedicated_charts): one call of knob_chart each.
batch_size_chart = partial(knob_chart, group="batch-size", key=BATCH_SIZE.key, xlabel="batch size (images, log scale)",
                           title="Throughput against batch size", numeric=True, log2=True, reference=64)
pin_memory_chart = partial(knob_chart, group="pin-memory", key=PIN_MEMORY.key, xlabel="pin_memory",
                           title="pin_memory on and off", numeric=False, reference=False)
prefetch_chart = partial(knob_chart, group="prefetch", key=PREFETCH_FACTOR.key,
                         xlabel="prefetch_factor (batches per worker)", title="Throughput against prefetch_factor",
                         numeric=True, reference=2)
start_method_chart = partial(knob_chart, group="start-method", key=START_METHOD.key, xlabel="worker start method",
                             title="Time to first batch per start method", numeric=False,
                             metrics=(K.TTFB_S, K.IMAGES_PER_S), reference="fork")
