"""Chart 4: a baseline and a current run, case by case, as % of the baseline's mean (± sd over rounds), the current
one coloured by the gate's verdict; efficiency where both runs hold it, else images/s.
"""

from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from lfw.cli.figures import ERRORBAR, bar_height, label_rows, new_figure
from lfw.gate.verdict import CaseVerdict
from lfw.results import Case, Run, pair_cases
from lfw.results import keys as K
from lfw.stats.variation import mean_sd

NOT_JUDGED = "not judged"  # every case's label when no verdict judged the two runs
VERDICT_COLOURS = {"regressed": "#d62728", "improved": "#2ca02c", "unchanged": "#1f77b4", NOT_JUDGED: "#9467bd"}
BASE_COLOUR = "#8c8c8c"
OFFSET = 0.17


def drawn_metric(old: Case, now: Case) -> str:
    """Efficiency when both runs recorded it for the case, else images/s."""
    return K.EFFICIENCY if old.rounds(K.EFFICIENCY) and now.rounds(K.EFFICIENCY) else K.IMAGES_PER_S


def compare_chart(base: Run, current: Run, verdicts: list[CaseVerdict], judged_by: str = "",
                  not_judged: str = "") -> Figure | None:
    """Baseline vs current per case; with ``not_judged`` (why no verdict) every case is drawn as not judged."""
    pairs = [(b, c) for b, c in pair_cases(base, current).pairs if mean_sd(b.rounds(drawn_metric(b, c)))[0] > 0]
    if not pairs:
        return None
    by_case = {v.case: v for v in verdicts}
    default = NOT_JUDGED if not_judged else "unchanged"
    labels = [by_case[c.fullname].label if c.fullname in by_case else default for _, c in pairs]
    fig, (ax,) = new_figure(10.0, bar_height(len(pairs), per_row=0.3))
    ticks = []
    for y, (old, now), label in zip(np.arange(len(pairs)), pairs, labels, strict=True):
        metric = drawn_metric(old, now)
        (m0, s0), (m1, s1) = mean_sd(old.rounds(metric)), mean_sd(now.rounds(metric))
        scale = 100 / m0
        ax.errorbar([m0 * scale], [y - OFFSET], xerr=[s0 * scale], color=BASE_COLOUR, marker="o", **ERRORBAR)
        ax.errorbar([m1 * scale], [y + OFFSET], xerr=[s1 * scale], color=VERDICT_COLOURS.get(label, "#7f7f7f"),
                    marker="D", **ERRORBAR)
        verdict = by_case.get(now.fullname)
        change = f" {verdict.change:+.0%}" if verdict and verdict.change is not None else ""
        shown = "" if label in ("unchanged", NOT_JUDGED) else f": {label}"
        ticks.append(f"{now.label}{shown}{change}")
    label_rows(ax, ticks, [c.group for _, c in pairs], fontsize=8)
    for tick, label in zip(ax.get_yticklabels(), labels, strict=True):
        if label in ("regressed", "improved"):
            tick.set_color(VERDICT_COLOURS[label])
            tick.set_fontweight("bold")
    ax.axvline(100, color="black", linewidth=0.8)
    ax.set_xlabel("efficiency (images/s where no ceiling) as % of the baseline mean (mean ± sd over rounds; "
                  "higher is better)")
    handles = [Line2D([], [], color=BASE_COLOUR, marker="o", label=f"baseline: {base.path.name}")]
    handles += [Line2D([], [], color=c, marker="D", label=f"current {current.path.name}, {k}")
                for k, c in VERDICT_COLOURS.items() if k in labels]
    ax.legend(handles=handles, loc="best", fontsize=8)
    title = "Baseline vs current per case (the verdict covers every metric the gate checks)"
    if judged_by or not_judged:
        said = f"verdict: {judged_by}" if judged_by else f"{NOT_JUDGED}: {not_judged}"
        title += "\n" + "\n".join(textwrap.wrap(said, 110))
    fig.suptitle(title, fontweight="bold", fontsize=10)
    return fig
