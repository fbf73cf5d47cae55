"""Chart: images/s per decode pipeline against the machine's two ceilings, and where its CPU went.

Left: images/s per pipeline, fastest first, with the PIL and decode-free memmap ceilings of the same rotation.
Right: CPU ms per image by stage, the unclaimed rest hatched, the tree's measured CPU as a tick.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lfw.cli.figures import bar_height, colour_map, label_rows, new_figure
from lfw.report.pipelines import GROUP
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.stats.variation import mean_sd

STAGE_COLOURS = {"read": "#9ecae1", "decode": "#3182bd", "transform": "#fdae6b", "collate": "#e6550d",
                 "receive": "#756bb1"}
GAPS = (("workers", "//"), ("main", ".."))  # CPU no stage claimed, and its hatch
TICK = "measured CPU per image"


def _own(case: Case) -> str:
    share = case.number(K.OWN_DECODER_SHARE)
    if share is None:
        return f"{case.number(K.PIL_CEILING_SHARE) or 0:.0%} of PIL"
    return f"{share:.0%} of " + ("the memmap's own" if case.value(K.STORAGE) == "memmap" else "own decoder")


def stage_panel(ax: Axes, cases: list[Case], cores: int) -> None:
    """Stacked stage ms per image, the unclaimed gap hatched, and the measured CPU per image as a tick."""
    legend: dict[str, Any] = {}  # label -> the first artist drawn with it
    for row, case in enumerate(cases):
        stages = case.extra.get(K.STAGE_MS_PER_IMAGE) or {}
        gaps = case.extra.get(K.STAGE_GAP_MS_PER_IMAGE) or {}
        parts: list[tuple[str, float, dict[str, Any]]] = [
            (name, stages.get(name, 0.0), {"color": colour}) for name, colour in STAGE_COLOURS.items()]
        parts += [(f"not in a stage ({where})", gaps.get(where, 0.0), {"color": "white", "edgecolor": "grey",
                                                                      "hatch": hatch}) for where, hatch in GAPS]
        left = 0.0
        for label, width, style in parts:
            if float(width) > 0:
                legend.setdefault(label, ax.barh(row, float(width), left=left, **style))
                left += float(width)
        measured = case.number(K.CPU_MS_PER_IMAGE)
        if measured is not None:
            tick = ax.plot([measured, measured], [row - 0.4, row + 0.4], color="black", linewidth=2)
            legend.setdefault(TICK, tick[0])
        coverage, util = case.number(K.STAGE_COVERAGE), case.number(K.CPU_UTILIZATION)
        words = ([f"stages {coverage:.0%} of CPU"] if coverage is not None else []) + (
            [f"{util:.0%} of {cores} cores busy"] if util is not None else [])
        ax.text(max(left, measured or 0.0) * 1.02 + 0.01, row, ", ".join(words), va="center", fontsize=8)
    label_rows(ax, [""] * len(cases))
    widest = max((c.number(K.CPU_MS_PER_IMAGE) or 0.0) for c in cases)
    ax.set_xlim(0, max(widest, 0.1) * 1.7)
    ax.set_xlabel("CPU ms per image, by stage (tick: the process tree's measured CPU per image)")
    order = [k for k in [*STAGE_COLOURS, *(f"not in a stage ({w})" for w, _ in GAPS), TICK] if k in legend]
    ax.legend([legend[k] for k in order], order, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4,
              fontsize=7, frameon=False)


def decoders_chart(run: Run) -> Figure | None:
    cases = sorted((c for c in run.group(GROUP) if c.number(K.MEMMAP_CEILING_SHARE) is not None),
                   key=lambda c: -(c.number(K.IMAGES_PER_S) or 0.0))
    if not cases:
        return None
    fig, (rate_ax, cpu_ax) = new_figure(13.0, bar_height(len(cases), 0.38) + 0.9, ncols=2)  # legends below
    kinds = [c.knob(KN.DECODER) if c.value(K.STORAGE) != "memmap" else "memmap" for c in cases]
    colours = colour_map(kinds)
    rows = range(len(cases))
    points = [mean_sd(c.rounds(K.IMAGES_PER_S)) for c in cases]
    bars = rate_ax.barh(rows, [m for m, _ in points], xerr=[s for _, s in points], capsize=3,
                        color=[colours[k] for k in kinds])
    rate_ax.bar_label(bars, [f"{c.number(K.IMAGES_PER_S) or 0:,.0f} ({_own(c)})" for c in cases], padding=4,
                      fontsize=8)
    cores = int(cases[0].number(K.USABLE_CORES) or 1)
    pil = median(c.number(K.PIL_CEILING_IMAGES_PER_S) or 0.0 for c in cases)
    memmap = median(c.number(K.MEMMAP_CEILING_IMAGES_PER_S) or 0.0 for c in cases)
    rate_ax.axvline(pil, color="black", linestyle="--", linewidth=1.2,
                    label=f"{cores} x PIL path single-core rate: {pil:,.0f}")
    highest = max(m + s for m, s in points)
    right = max(pil, min(memmap, 2.2 * highest), highest) * 1.3
    rate_ax.axvline(memmap, color="grey", linestyle=":", linewidth=1.5,
                    label=f"{cores} x decoded memmap (no decode): {memmap:,.0f}"
                          + (" (off the chart)" if memmap > right else ""))
    label_rows(rate_ax, [c.label for c in cases])
    rate_ax.set_xlim(0, right)
    rate_ax.set_xlabel("images/s (labels: median, share of cores x its own decoder's single-core rate)")
    rate_ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1, fontsize=8, frameon=False)
    stage_panel(cpu_ax, cases, cores)
    fig.suptitle("Decode pipelines: images/s against the machine's ceilings (mean ± sd over rounds), and where "
                 "each image's CPU went", fontweight="bold")
    return fig
