"""Chart 5: a distributed run (``python -m lfw.distributed``): images/s per rank, the straggler marked.

Beside it, each rank's share of the epochs spent waiting at the collective.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from lfw.cli.figures import new_figure
from lfw.results import Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.stats.variation import mean_sd

GROUP = "distributed"
STRAGGLER, OTHERS = "#d62728", "#1f77b4"


def distributed_chart(run: Run) -> Figure | None:
    ranks = sorted((c for c in run.group(GROUP) if isinstance(c.knob(KN.RANK), int)),
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
    shares = []
    for c in ranks:
        waits, walls = c.rounds(K.COLLECTIVE_WAIT_S), list(c.seconds)
        shares.append(100 * sum(waits) / sum(walls) if walls and sum(walls) > 0 else 0.0)
    ax_wait.bar(labels, shares, color=colours)
    ax_wait.set_ylabel("% of the epochs spent waiting at the collective")
    ax_wait.set_ylim(0, max(10.0, max(shares) * 1.3))
    ratio, covered = ranks[0].number(K.STRAGGLER_RATIO), ranks[0].value(K.COVERAGE_OK)
    total = next((c.number(K.IMAGES_PER_S) for c in run.group(GROUP) if c.knob(KN.RANK) == "total"), None)
    fig.suptitle(f"{len(ranks)} ranks: straggler rank {straggler} in red, load-time ratio "
                 f"{ratio:.2f}" + (f", total {total:,.0f} images/s" if total else "")
                 + f", coverage {'ok' if covered else 'FAILED'}", fontweight="bold")
    return fig
