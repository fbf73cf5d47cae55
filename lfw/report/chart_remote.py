"""Chart: images/s against injected latency, one line per strategy, with Little's-law bounds and the ceiling; one
panel per worker count, a case without a steady state ringed at its whole-pass rate.
"""

from __future__ import annotations

from statistics import median

from matplotlib.figure import Figure

from lfw.cli.figures import ERRORBAR, colour_map, dodged_errorbar, new_figure
from lfw.report.remote import remote_cases
from lfw.results import Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import LATENCY_MS, NUM_WORKERS
from lfw.stats.variation import mean_sd


def remote_chart(run: Run) -> Figure | None:
    cases = remote_cases(run)
    if not cases:
        return None
    strategies = list(dict.fromkeys(c.knob(KN.STRATEGY) for c in cases))
    workers = sorted({c.knob(NUM_WORKERS) or 0 for c in cases})
    colours = colour_map(strategies)
    latencies = sorted({c.knob(LATENCY_MS) or 0.0 for c in cases})
    position = {lat: i for i, lat in enumerate(latencies)}  # evenly spaced: 0, 5, 20, 100 ms all readable
    ceiling = median(c.number(K.ENDPOINT_CEILING_IMAGES_PER_S) or 0 for c in cases)
    fig, axes = new_figure(4.6 * len(workers), 5.0, ncols=len(workers))
    for ax, count in zip(axes, workers, strict=True):
        for i, strategy in enumerate(strategies):
            line = sorted((c for c in cases if c.knob(KN.STRATEGY) == strategy and (c.knob(NUM_WORKERS) or 0) == count),
                          key=lambda c: c.knob(LATENCY_MS) or 0.0)
            if not line:
                continue
            xs = [position[c.knob(LATENCY_MS) or 0.0] for c in line]
            in_flight = int(line[0].number(K.IN_FLIGHT_LIMIT) or 0)
            steady = [c.number(K.STEADY_IMAGES_PER_S) is not None for c in line]
            rates = [mean_sd(c.rounds(K.STEADY_IMAGES_PER_S if s else K.IMAGES_PER_S))
                     for c, s in zip(line, steady, strict=True)]
            dodged_errorbar(ax, i, len(strategies), xs, rates, color=colours[strategy], marker="o",
                            label=f"{strategy} (up to {in_flight} in flight)", **ERRORBAR)
            whole = [(x, r[0]) for x, r, s in zip(xs, rates, steady, strict=True) if not s]
            if whole:  # no steady state in these passes: the whole-pass rate, start-up included
                ax.plot([x for x, _ in whole], [r for _, r in whole], linestyle="none", marker="o", markersize=9,
                        markerfacecolor="white", markeredgecolor=colours[strategy])
            ax.plot(xs, [c.number(K.LITTLES_LAW_IMAGES_PER_S) or float("nan") for c in line],
                    color=colours[strategy], linestyle=":", linewidth=1.2)
        ax.axhline(ceiling, color="black", linestyle="--", linewidth=1.2, label=f"endpoint ceiling {ceiling:,.0f}")
        ax.set_xticks(range(len(latencies)), [f"{lat:g}" for lat in latencies])
        ax.set_xlabel("injected first-byte latency, ms")
        ax.set_yscale("log")
        ax.set_title(f"{count} workers" if count else "main process (0 workers)")
        ax.legend(fontsize=7, loc="lower left")
    limits = [ax.get_ylim() for ax in axes]
    for ax in axes:  # one scale for every panel, so worker counts compare at a glance
        ax.set_ylim(min(low for low, _ in limits), max(high for _, high in limits))
    axes[0].set_ylabel("steady images/s (log)")
    fig.suptitle("LFW from S3 through the latency proxy: steady images/s against latency (mean ± sd over rounds)\n"
                 "dotted: Little's-law bound; ringed: no steady state, the whole pass's rate", fontweight="bold")
    return fig
