"""Chart: images/s per decode pipeline against the machine's two ceilings, and where its CPU went.

Left: images/s per pipeline (mean ± sd over rounds), fastest first, with the two ceilings of the same rotation as
vertical lines: usable cores x the PIL path's single-core rate, and usable cores x the decoded memmap's
(decode-free) rate. Right: the process tree's CPU utilization during the pass (cores busy / cores) beside the
CPU time per image, the two measurements that say what stops a pipeline (:mod:`lfw.report.pipelines`).
"""

from __future__ import annotations

from statistics import median

from matplotlib.figure import Figure

from lfw.report.figures import bar_height, colour_map, new_figure
from lfw.report.pipelines import GROUP
from lfw.results import Run
from lfw.results import keys as K
from lfw.stats.variation import mean_sd


def decoders_chart(run: Run) -> Figure | None:
    cases = sorted((c for c in run.group(GROUP) if c.number(K.MEMMAP_CEILING_SHARE) is not None),
                   key=lambda c: -(c.number(K.IMAGES_PER_S) or 0.0))
    if not cases:
        return None
    fig, (rate_ax, cpu_ax) = new_figure(13.0, bar_height(len(cases), 0.38), ncols=2)
    colours = colour_map(c.value(K.DECODER) if c.value(K.STORAGE) != "memmap" else "memmap" for c in cases)
    rows = range(len(cases))
    points = [mean_sd(c.rounds(K.IMAGES_PER_S)) for c in cases]
    bars = rate_ax.barh(rows, [m for m, _ in points], xerr=[s for _, s in points], capsize=3,
                        color=[colours[c.value(K.DECODER) if c.value(K.STORAGE) != "memmap" else "memmap"]
                               for c in cases])
    rate_ax.bar_label(bars, [f"{c.number(K.IMAGES_PER_S) or 0:,.0f} ({c.number(K.PIL_CEILING_SHARE) or 0:.0%})"
                             for c in cases], padding=4, fontsize=8)
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
    rate_ax.set_yticks(rows, [c.label for c in cases])
    rate_ax.set_ylim(len(cases) - 0.5, -0.5)
    rate_ax.set_xlim(0, right)
    rate_ax.set_xlabel("images/s (labels: median, share of the PIL ceiling)")
    rate_ax.legend(loc="lower right", fontsize=8)
    utilization = [100 * (c.number(K.CPU_UTILIZATION) or 0.0) for c in cases]
    bars = cpu_ax.barh(rows, utilization, color="#9ecae1")
    cpu_ax.bar_label(bars, [f"{u:.0f}%, {c.number(K.CPU_MS_PER_IMAGE) or 0:.2f} ms/img"
                                            for u, c in zip(utilization, cases, strict=True)], padding=4,
                     fontsize=8)
    cpu_ax.axvline(100, color="black", linestyle="--", linewidth=1.2)
    cpu_ax.set_yticks(rows, [""] * len(cases))
    cpu_ax.set_ylim(len(cases) - 0.5, -0.5)
    cpu_ax.set_xlim(0, 150)
    cpu_ax.set_xlabel(f"CPU utilization of the process tree, % of {cores} cores (labels: CPU ms per image)")
    fig.suptitle("Decode pipelines: images/s against the machine's ceilings (mean ± sd over rounds), and where the "
                 "CPU went", fontweight="bold")
    return fig
