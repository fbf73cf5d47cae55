"""Chart 4: a baseline run and a current run, case by case, with each case's verdict.

Paired points per case, both scaled to the baseline's mean images/s, so a 30% change reads the same for a
100 images/s case as for a 4,000 images/s one: the baseline in grey at 100%, the current run coloured by its
verdict, each with its standard deviation over rounds, so a reader sees both the change and the noise.
"""

from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from lfw.report.figures import ERRORBAR, bar_height, mark_groups, new_figure
from lfw.report.load import Run
from lfw.report.verdict import Verdict, pair_cases
from lfw.spread import mean_sd

VERDICT_COLOURS = {"regressed": "#d62728", "improved": "#2ca02c", "unchanged": "#1f77b4"}
BASE_COLOUR = "#8c8c8c"
OFFSET = 0.17


def compare_chart(base: Run, current: Run, verdicts: list[Verdict], judged_by: str = "") -> Figure | None:
    """Baseline vs current images/s per case matched on ``fullname``, as % of the baseline mean."""
    pairs, _, _ = pair_cases(base, current)
    pairs = [(b, c) for b, c in pairs if mean_sd(b.rounds("images_per_s"))[0] > 0]
    if not pairs:
        return None
    by_case = {v.case: v for v in verdicts}
    labels = [by_case[c.fullname].label if c.fullname in by_case else "unchanged" for _, c in pairs]
    fig, (ax,) = new_figure(10.0, bar_height(len(pairs), per_row=0.3))
    ys = np.arange(len(pairs))
    for y, (old, now), label in zip(ys, pairs, labels, strict=True):
        scale = 100 / mean_sd(old.rounds("images_per_s"))[0]
        (m0, s0), (m1, s1) = mean_sd(old.rounds("images_per_s")), mean_sd(now.rounds("images_per_s"))
        ax.errorbar([m0 * scale], [y - OFFSET], xerr=[s0 * scale], color=BASE_COLOUR, marker="o", **ERRORBAR)
        ax.errorbar([m1 * scale], [y + OFFSET], xerr=[s1 * scale], color=VERDICT_COLOURS.get(label, "#7f7f7f"),
                    marker="D", **ERRORBAR)
    ticks = []
    for (_, case), label in zip(pairs, labels, strict=True):
        verdict = by_case.get(case.fullname)
        change = f" {verdict.change:+.0%}" if verdict and verdict.change is not None else ""
        ticks.append(f"{case.label}: {label}{change}" if label != "unchanged" else f"{case.label}{change}")
    ax.set_yticks(ys, ticks, fontsize=8)
    for tick, label in zip(ax.get_yticklabels(), labels, strict=True):
        if label in ("regressed", "improved"):
            tick.set_color(VERDICT_COLOURS[label])
            tick.set_fontweight("bold")
    ax.set_ylim(len(pairs) - 0.5, -0.5)
    mark_groups(ax, [c.group for _, c in pairs])
    ax.axvline(100, color="black", linewidth=0.8)
    ax.set_xlabel("images/s as % of the baseline mean (mean ± sd over rounds; higher is better)")
    handles = [Line2D([], [], color=BASE_COLOUR, marker="o", label=f"baseline: {base.path.name}")]
    handles += [Line2D([], [], color=c, marker="D", label=f"current {current.path.name}, {k}")
                for k, c in VERDICT_COLOURS.items() if k in labels]
    ax.legend(handles=handles, loc="best", fontsize=8)
    title = "Baseline vs current images/s per case (the verdict covers every metric the judge checks)"
    if judged_by:
        title += "\n" + "\n".join(textwrap.wrap(f"verdict: {judged_by}", 110))
    fig.suptitle(title, fontweight="bold", fontsize=10)
    return fig
