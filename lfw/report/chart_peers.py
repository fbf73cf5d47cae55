"""Chart: the loaders users switch to, each at its best setting, beside DataLoader's best pipeline of the same rotation.

Left: images/s with the paired ratio to DataLoader's best (:mod:`lfw.report.peers`); right: the process tree's
CPU ms per image.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from lfw.cli.figures import bar_height, label_rows, new_figure
from lfw.report.peers import PeerRows
from lfw.results import Run
from lfw.results import keys as K
from lfw.stats.variation import mean_sd

DATALOADER_COLOUR, PEER_COLOUR = "#3182bd", "#fd8d3c"


def peers_chart(run: Run, peers: PeerRows) -> Figure | None:
    """``peers`` (:func:`~lfw.report.peers.peer_rows` of ``run``) as bars; None without a peer."""
    best, rows = peers
    if best is None or not rows:
        return None
    cases = [best, *(r.case for r in rows)]
    notes = ["DataLoader's best", *(f"x {r.ratio.text()}" if r.ratio else "unpaired" for r in rows)]
    fig, (rate_ax, cpu_ax) = new_figure(11.0, bar_height(len(cases)), ncols=2)
    rows_y = range(len(cases))
    colours = [DATALOADER_COLOUR, *[PEER_COLOUR] * len(rows)]
    stats = [mean_sd([float(v) for v in c.rounds(K.IMAGES_PER_S) or [c.number(K.IMAGES_PER_S) or 0.0]])
             for c in cases]
    rate_ax.barh(list(rows_y), [m for m, _ in stats], xerr=[sd for _, sd in stats], color=colours, capsize=3)
    for y, (mean, sd), note in zip(rows_y, stats, notes, strict=True):  # beside the error bar, not on it
        rate_ax.annotate(note, (mean + sd, y), xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
    rate_ax.set_xlim(0, 1.45 * max(mean + sd for mean, sd in stats))
    label_rows(rate_ax, [c.label for c in cases])
    rate_ax.set_xlabel("images/s (mean ± sd over rounds)")
    rate_ax.set_title("Images/s, each peer at its best setting")
    cpu_ax.barh(list(rows_y), [c.number(K.CPU_MS_PER_IMAGE) or 0.0 for c in cases], color=colours)
    label_rows(cpu_ax, [""] * len(cases))
    cpu_ax.set_xlabel("CPU ms per image (whole process tree)")
    cpu_ax.set_title("CPU per image")
    return fig
