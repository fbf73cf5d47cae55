"""Charts 1 and 2, the DataLoader's knobs: num_workers (:func:`workers_chart`), and one other knob at a time (batch
size, pin_memory, prefetch_factor, start method, ...): images/s and time to first batch (mean ± sd over rounds), each
value's paired images/s ratio to a reference value with its signed-rank interval; numeric knobs as lines, others as
grouped bars. Legends name the varying knobs in words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lfw.cli.figures import ERRORBAR, bar_height, colour_map, dodge, dodged_errorbar, label_rows, new_figure
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import BATCH_SIZE, NUM_WORKERS, PIN_MEMORY, PREFETCH_FACTOR, START_METHOD
from lfw.results.ratios import Ratio, ratio
from lfw.results.recommend import Recommendation, scaling_cases
from lfw.stats.variation import mean_sd

METRICS = {
    K.IMAGES_PER_S: ("images/s (higher is better)", 1.0),
    K.TTFB_S: ("time to first batch, ms (lower is better)", 1000.0),
    K.DATA_WAIT_FRACTION: ("share of the pass spent waiting for data, %", 100.0),
    K.H2D_GB_S: ("host-to-device copy, GB/s (higher is better)", 1.0),
}
DEFAULT_METRICS = (K.IMAGES_PER_S, K.TTFB_S)


def varying_keys(cases: Iterable[Case], exclude: Iterable[str] = ()) -> list[str]:
    """Param names that take more than one value over ``cases``: what a legend must tell apart."""
    cases = list(cases)
    skip = set(exclude)
    keys = dict.fromkeys(k for c in cases for k in c.params if k not in skip)
    return [k for k in keys if len({repr(c.params.get(k)) for c in cases}) > 1]


def describe(case: Case, keys: Iterable[str]) -> str:
    """``num_workers=2, transform=heavy`` for the given keys (the case label when there are none)."""
    return ", ".join(f"{k}={format_value(case.value(k))}" for k in keys) or case.label


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "default" if value is None else str(value)


def sort_key(value: Any) -> tuple[int, Any]:
    """Order knob values numbers first (numerically), then the rest by text; None (the default) first."""
    if value is None:
        return (0, 0)
    if isinstance(value, int | float):
        return (1, value)
    return (2, str(value))


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
    return [(c, r) for c in members if (r := ratio(c, ref)) is not None] if ref is not None else []


def draw_ratios(ax: Axes, xs: Sequence[float], found: Sequence[Ratio], reference: Any, **style: Any) -> None:
    """Estimates with asymmetric interval bars, and the line of no difference."""
    bars = np.array([[r.estimate - r.low for r in found], [r.high - r.estimate for r in found]])
    ax.errorbar(xs, np.array([r.estimate for r in found]), yerr=bars, linestyle="none", **style)
    ax.axhline(1.0, color="black", linewidth=0.8)
    confidence = min(r.confidence for r in found)
    ax.set_ylabel(f"images/s ratio to {format_value(reference)}\n(paired by round, {confidence:.1%} interval)")


def knob_chart(run: Run, group: str, key: str, *, xlabel: str, title: str, numeric: bool, log2: bool = False,
               metrics: Sequence[str] = DEFAULT_METRICS, reference: Any = None) -> Figure | None:
    """Metrics per value of one knob, a colour per combination of the other varying params, and ratios."""
    cases = [c for c in run.group(group)
             if not numeric or (isinstance(c.value(key), int | float) and not isinstance(c.value(key), bool))]
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


def workers_chart(run: Run, knees: Sequence[Recommendation]) -> Figure | None:
    """Chart 1, the course exercise's experiment: seconds per pass (left) and images/s (right) against num_workers,
    one line per transform (mean ± sd over rounds), each of ``knees``' worker counts ringed."""
    series = scaling_cases(run)
    if not series:
        return None
    fig, (ax_sec, ax_rate) = new_figure(12.0, 5.0, ncols=2)
    colours = colour_map(series)
    knee_at = {r.transform: r.workers for r in knees if r.workers is not None}
    for i, (transform, cases) in enumerate(series.items()):
        workers = [c.knob(NUM_WORKERS, 0) for c in cases]
        seconds = [mean_sd(c.seconds) for c in cases]
        rates = [mean_sd(c.rounds(K.IMAGES_PER_S)) for c in cases]
        sizes = {n for c in cases if (n := c.number(K.IMAGES)) is not None}
        label = f"{transform} ({int(sizes.pop()):,} img/pass)" if len(sizes) == 1 else transform
        style = {"color": colours[transform], "marker": "o", "label": label, **ERRORBAR}
        dodged_errorbar(ax_sec, i, len(series), workers, seconds, **style)
        dodged_errorbar(ax_rate, i, len(series), workers, rates, **style)
        if (knee := knee_at.get(transform)) is not None:
            shift = ax_rate.transData + dodge(fig, i, len(series))  # inside the limits its errorbar set
            ax_rate.plot([knee], [rates[workers.index(knee)][0]], marker="o", markersize=15, linestyle="none",
                         markerfacecolor="none", markeredgecolor=colours[transform], markeredgewidth=2,
                         transform=shift)
    all_workers = sorted({w for cases in series.values() for w in (c.knob(NUM_WORKERS, 0) for c in cases)},
                         key=sort_key)
    images = {n for cases in series.values() for c in cases if (n := c.number(K.IMAGES)) is not None}
    per_pass = f" ({int(images.pop()):,} images)" if len(images) == 1 else ""
    cores = run.machine.get(K.USABLE_CORES)
    for ax in (ax_sec, ax_rate):
        ax.set_xticks(all_workers)
        ax.set_xlabel("num_workers (DataLoader worker processes)")
        ax.set_ylim(bottom=0)
        if isinstance(cores, int) and min(all_workers) <= cores <= max(all_workers):
            ax.axvline(cores, color="grey", linestyle=":", linewidth=1.2)
            ax.text(cores, 0.99, f" {cores} usable cores", transform=ax.get_xaxis_transform(), color="grey",
                    va="top", fontsize=9)
    ax_sec.set_ylabel(f"seconds per pass{per_pass}")
    ax_sec.set_title("Time per pass (lower is better)")
    ax_rate.set_ylabel("images/s")
    ax_rate.set_title("Throughput (higher is better); ring: recommended workers")
    ax_sec.legend(title="transform", loc="best")
    rounds = max(len(c.seconds) for cases in series.values() for c in cases)
    fig.suptitle(f"DataLoader scaling with num_workers: mean ± standard deviation over {rounds} rounds",
                 fontweight="bold")
    return fig


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
