"""Bar charts: efficiency per configuration, the decode pipelines against the machine's ceilings, the loaders users
switch to beside DataLoader's best, and the ranks of a distributed run.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from lfw.cli.figures import bar_height, colour_map, label_rows, new_figure
from lfw.report.peers import PeerRows
from lfw.report.pipelines import GROUP as DECODERS
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.stats.variation import mean_sd

DISTRIBUTED = "distributed"
STRAGGLER, OTHERS = "#d62728", "#1f77b4"
DATALOADER_COLOUR, PEER_COLOUR = "#3182bd", "#fd8d3c"
STAGE_COLOURS = {"read": "#9ecae1", "decode": "#3182bd", "transform": "#fdae6b", "collate": "#e6550d",
                 "receive": "#756bb1"}
GAPS = (("workers", "//"), ("main", ".."))  # CPU no stage claimed, and its hatch
TICK = "measured CPU per image"


def efficiency_chart(run: Run) -> Figure | None:
    """Horizontal bars of efficiency (%) per case, coloured and labelled by group, with the 100% ceiling: the same
    session's single-core rate x ``min(max(workers, 1), usable cores)``."""
    cases = [c for c in run.cases if c.number(K.EFFICIENCY) is not None]
    if not cases:
        return None
    fig, (ax,) = new_figure(11.0, bar_height(len(cases)))
    colours = colour_map(c.group for c in cases)
    points = [mean_sd([v * 100 for v in c.rounds(K.EFFICIENCY)]) for c in cases]
    bars = ax.barh(range(len(cases)), [m for m, _ in points], xerr=[s for _, s in points], capsize=3,
                   color=[colours[c.group] for c in cases])
    notes = [f"{c.number(K.IMAGES_PER_S) or 0:,.0f} of {c.number(K.CEILING_IMAGES_PER_S) or 0:,.0f} img/s"
             for c in cases]
    ax.bar_label(bars, notes, padding=4, fontsize=8)
    ax.axvline(100, color="black", linestyle="--", linewidth=1.2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "ceiling" if v == 100 else f"{v:g}%"))
    ax.set_xlim(0, max(110.0, max(m + s for m, s in points) * 1.35))
    ax.set_xlabel("images/s as % of the ceiling = single-core rate × min(workers, usable cores); "
                  "labels: median measured of ceiling")
    label_rows(ax, [c.label for c in cases], [c.group for c in cases])
    fig.suptitle("Efficiency against the ceiling per configuration: mean ± sd over rounds", fontweight="bold")
    return fig


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
        words = [f"stages {coverage:.0%} of CPU"] if coverage is not None else []
        words += [f"{util:.0%} of {cores} cores busy"] if util is not None else []
        ax.text(max(left, measured or 0.0) * 1.02 + 0.01, row, ", ".join(words), va="center", fontsize=8)
    label_rows(ax, [""] * len(cases))
    ax.set_xlim(0, max(0.1, *(c.number(K.CPU_MS_PER_IMAGE) or 0.0 for c in cases)) * 1.7)
    ax.set_xlabel("CPU ms per image, by stage (tick: the process tree's measured CPU per image)")
    order = [k for k in [*STAGE_COLOURS, *(f"not in a stage ({w})" for w, _ in GAPS), TICK] if k in legend]
    ax.legend([legend[k] for k in order], order, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4,
              fontsize=7, frameon=False)


def decoders_chart(run: Run) -> Figure | None:
    """Images/s per decode pipeline, fastest first, against the PIL and decode-free memmap ceilings of the same
    rotation (left), and :func:`stage_panel` (right); None without a decoders case with a memmap ceiling."""
    cases = sorted((c for c in run.group(DECODERS) if c.number(K.MEMMAP_CEILING_SHARE) is not None),
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


def peers_chart(run: Run, peers: PeerRows) -> Figure | None:
    """``peers`` (:func:`~lfw.report.peers.peer_rows` of ``run``) as bars: images/s labelled with the paired ratio to
    DataLoader's best of the same rotation, and the process tree's CPU ms per image; None without a peer."""
    best, rows = peers
    if best is None or not rows:
        return None
    cases = [best, *(r.case for r in rows)]
    notes = ["DataLoader's best", *(f"x {r.ratio.text()}" if r.ratio else "unpaired" for r in rows)]
    fig, (rate_ax, cpu_ax) = new_figure(11.0, bar_height(len(cases)), ncols=2)
    rows_y = list(range(len(cases)))
    colours = [DATALOADER_COLOUR, *[PEER_COLOUR] * len(rows)]
    stats = [mean_sd([float(v) for v in c.rounds(K.IMAGES_PER_S) or [c.number(K.IMAGES_PER_S) or 0.0]])
             for c in cases]
    rate_ax.barh(rows_y, [m for m, _ in stats], xerr=[sd for _, sd in stats], color=colours, capsize=3)
    for y, (mean, sd), note in zip(rows_y, stats, notes, strict=True):  # beside the error bar, not on it
        rate_ax.annotate(note, (mean + sd, y), xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
    rate_ax.set_xlim(0, 1.45 * max(mean + sd for mean, sd in stats))
    label_rows(rate_ax, [c.label for c in cases])
    rate_ax.set_xlabel("images/s (mean ± sd over rounds)")
    rate_ax.set_title("Images/s, each peer at its best setting")
    cpu_ax.barh(rows_y, [c.number(K.CPU_MS_PER_IMAGE) or 0.0 for c in cases], color=colours)
    label_rows(cpu_ax, [""] * len(cases))
    cpu_ax.set_xlabel("CPU ms per image (whole process tree)")
    cpu_ax.set_title("CPU per image")
    return fig


def distributed_chart(run: Run) -> Figure | None:
    """A distributed run (``python -m lfw.distributed``): images/s and the share of the epochs waiting at the collective
    per rank, the straggler in red."""
    ranks = sorted((c for c in run.group(DISTRIBUTED) if isinstance(c.knob(KN.RANK), int)),
                   key=lambda c: c.value(KN.RANK.key))
    if not ranks:
        return None
    straggler = ranks[0].value(K.STRAGGLER_RANK)
    fig, (ax_rate, ax_wait) = new_figure(11.0, 4.6, ncols=2)
    labels = [f"rank {c.knob(KN.RANK)}" for c in ranks]
    colours = [STRAGGLER if c.knob(KN.RANK) == straggler else OTHERS for c in ranks]
    points = [mean_sd(c.rounds(K.IMAGES_PER_S)) for c in ranks]
    bars = ax_rate.bar(labels, [m for m, _ in points], yerr=[s for _, s in points], capsize=4, color=colours)
    ax_rate.bar_label(bars, fmt="{:,.0f}", padding=2, fontsize=8)
    ax_rate.set_ylabel("images/s of the rank (mean ± sd over epochs)")
    shares = [100 * sum(c.rounds(K.COLLECTIVE_WAIT_S)) / sum(c.seconds) if sum(c.seconds) > 0 else 0.0 for c in ranks]
    ax_wait.bar(labels, shares, color=colours)
    ax_wait.set_ylabel("% of the epochs spent waiting at the collective")
    ax_wait.set_ylim(0, max(10.0, max(shares) * 1.3))
    ratio, covered = ranks[0].number(K.STRAGGLER_RATIO), ranks[0].value(K.COVERAGE_OK)
    total = next((c.number(K.IMAGES_PER_S) for c in run.group(DISTRIBUTED) if c.knob(KN.RANK) == "total"), None)
    fig.suptitle(f"{len(ranks)} ranks: straggler rank {straggler} in red, load-time ratio "
                 f"{ratio:.2f}" + (f", total {total:,.0f} images/s" if total else "")
                 + f", coverage {'ok' if covered else 'FAILED'}", fontweight="bold")
    return fig
