"""Chart: time to first batch against the pickled size of the dataset object each worker receives (``spawn`` and
``forkserver`` pickle it into every worker, ``fork`` does not); one line per start method x workers, log-log,
median over rounds with bars from the fastest to the slowest round.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from lfw.cli.figures import ERRORBAR, colour_map, dodged_errorbar, new_figure
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results.knobs import ENTRIES, NUM_WORKERS, START_METHOD

GROUP = "startup"
METHOD_ORDER = ("fork", "forkserver", "spawn")
STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))  # per worker count, in ascending order
MIB = 2**20


def by_start_method(cases: Sequence[Case]) -> dict[tuple[str, int], list[Case]]:
    """Cases by (start method, workers), each ordered by pickled size; keys fork, forkserver, spawn first."""
    series: dict[tuple[str, int], list[Case]] = {}
    for case in cases:
        series.setdefault((case.knob(START_METHOD, "default"), case.knob(NUM_WORKERS, 0)), []).append(case)
    order = sorted(series, key=lambda k: (METHOD_ORDER.index(k[0]) if k[0] in METHOD_ORDER else len(METHOD_ORDER),
                                          k[0], k[1]))
    return {k: sorted(series[k], key=lambda c: c.number(K.PICKLED_DATASET_BYTES) or 0.0) for k in order}


def median_and_range_ms(case: Case) -> tuple[float, float, float]:
    """Median time to first batch over rounds, and its distance down to the fastest and up to the slowest, ms."""
    values = [1e3 * v for v in case.rounds(K.TTFB_S)]
    mid = median(values)
    return mid, mid - min(values), max(values) - mid


def _size_ticks(ax: Axes, cases: Sequence[Case]) -> None:
    """One tick per index size: the median pickled MiB of its cases, labelled with MiB and entries."""
    by_entries: dict[int, list[float]] = {}
    for case in cases:
        entries = case.knob(ENTRIES)
        by_entries.setdefault(int(entries) if entries is not None else -1, []).append(
            (case.number(K.PICKLED_DATASET_BYTES) or 0.0) / MIB)
    ticks = sorted((median(sizes), entries) for entries, sizes in by_entries.items())
    ax.set_xticks([mib for mib, _ in ticks],
                  [f"{mib:,.1f} MiB" + (f"\n{entries:,} entries" if entries >= 0 else "") for mib, entries in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


def startup_chart(run: Run) -> Figure | None:
    """TTFB against pickled dataset MiB per start method x workers; None without a startup case with a size."""
    cases = [c for c in run.group(GROUP) if c.number(K.PICKLED_DATASET_BYTES) is not None and c.rounds(K.TTFB_S)]
    if not cases:
        return None
    series = by_start_method(cases)
    colours = colour_map(dict.fromkeys([*METHOD_ORDER, *(m for m, _ in series)]))
    worker_counts = sorted({w for _, w in series})
    fig, (ax,) = new_figure(11.0, 5.6)
    ax.set_xscale("log")  # before plotting: the dodged series' limits are computed in the axis' scale
    ax.set_yscale("log")
    for i, ((method, workers), members) in enumerate(series.items()):
        linestyle, marker = STYLES[worker_counts.index(workers) % len(STYLES)]
        xs = [(c.number(K.PICKLED_DATASET_BYTES) or 0.0) / MIB for c in members]
        dodged_errorbar(ax, i, len(series), xs, [median_and_range_ms(c) for c in members], color=colours[method],
                        linestyle=linestyle, marker=marker,
                        label=f"{method}, {workers} worker{'s' if workers != 1 else ''}", **ERRORBAR)
    _size_ticks(ax, cases)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.set_xlabel("pickled dataset, len(pickle.dumps(dataset)), MiB (log)")
    ax.set_ylabel("time to first batch, ms (log)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="start method, workers",
              title_fontsize=8)
    fig.suptitle("Start-up cost: time to first batch against the dataset object each worker receives\n"
                 "fork shares it; spawn and forkserver pickle it to every worker "
                 "(median over rounds, bars: fastest to slowest round)", fontweight="bold")
    return fig
