"""Chart 1, the course exercise's experiment: seconds per pass and images/s against num_workers.

One line per transform, mean ± sd over rounds; a ring marks the recommended worker count
(:mod:`lfw.results.recommend`, as the report found it).
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from lfw.cli.figures import ERRORBAR, colour_map, dodge, dodged_errorbar, new_figure
from lfw.report.legend import sort_key
from lfw.results import Run
from lfw.results import keys as K
from lfw.results.knobs import NUM_WORKERS
from lfw.results.recommend import Recommendation, scaling_cases
from lfw.stats.variation import mean_sd


def workers_chart(run: Run, knees: Sequence[Recommendation]) -> Figure | None:
    """Two panels sharing the worker axis: seconds per pass (left) and images/s (right), each of ``knees``' worker
    counts ringed."""
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
        if transform in knee_at:
            knee = knee_at[transform]
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
