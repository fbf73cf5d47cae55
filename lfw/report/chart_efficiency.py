"""Chart 2e: efficiency of every configuration against its physical ceiling.

The ceiling: the same session's single-core rate x ``min(max(workers, 1), usable cores)``.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from lfw.cli.figures import bar_height, colour_map, label_rows, new_figure
from lfw.results import Run
from lfw.results import keys as K
from lfw.stats.variation import mean_sd


def efficiency_chart(run: Run) -> Figure | None:
    """Horizontal bars of efficiency (%) per case, coloured and labelled by group, with the 100% ceiling."""
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
    fig.suptitle("Efficiency against the ceiling per configuration: mean ± sd over rounds",
                 fontweight="bold")
    return fig
