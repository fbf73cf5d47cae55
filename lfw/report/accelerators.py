"""The decoders group at scale: a findings item with a table (:func:`lfw.diagnose.feeds.feeds_table`, imported on
first use: it imports torch) of how many accelerators each decode pipeline keeps at AU >= 90% (docs/diagnose.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lfw.cli.sections import Item, Table
from lfw.results import Run

if TYPE_CHECKING:
    from lfw.diagnose.feeds import FeedRow, FeedsTable

GROUP = "decoders"
TITLE = "Accelerators fed at AU >= 90%"


def headline(table: FeedsTable) -> str:
    """``at <step> ms per step, `<pipeline>` feeds <N> accelerators`` (with what holds it below the rate alone)."""
    from lfw.diagnose.feeds import HEADLINE_STEP_MS, throughput_bound

    step = HEADLINE_STEP_MS if HEADLINE_STEP_MS in table.steps_ms else table.steps_ms[-1]
    best = table.best(step)
    if best is None:
        return "no decoding pipeline in this run (the memmap reference only)"
    i = table.column(step)
    n, alone = best.fed[i], best.throughput[i]
    text = f"at {step:g} ms per step, `{best.label}` feeds **{n} accelerator{'' if n == 1 else 's'}**"
    if alone > n:
        held = (f"the main process's hand-over of {best.feed.handover_s * 1e3:.1f} ms per batch"
                if best.closed_form[i] < alone else "uneven load times and in-order delivery")
        text += f" (its {best.feed.rate:,.0f} images/s alone would feed {alone}; held to {n} by {held})"
    if best.limit and best.limit > best.feed.rate:  # the headroom: what reaching its own decoder's limit would feed
        at_limit = throughput_bound(best.limit, step / 1e3, best.feed.batch, table.target)
        text += (f"; at its own decoder's limit ({best.limit:,.0f} images/s on this machine) the rate alone would "
                 f"feed {at_limit}")
    return text


def _row(row: FeedRow) -> tuple[str, ...]:
    what = f"`{row.label}`" + ("" if row.decodes else " (decode-free reference)")
    return (what, f"{row.feed.rate:,.0f}", *(str(n) for n in row.fed))


def accelerators_section(run: Run) -> list[Item]:
    """The findings item with its table; none when the run has no decoders case with a rate."""
    if not run.group(GROUP):
        return []
    from lfw.diagnose.feeds import feeds_table

    table = feeds_table(run)
    if table is None:
        return []
    text = (f"**{TITLE}:** {headline(table)}. Each cell: the accelerators one pipeline keeps at accelerator "
            "utilization >= 90% (compute / time, first step excluded), each taking a batch of 64 per step of the "
            "column's length; simulated from the measured images/s, workers, prefetch factor and the main "
            "process's time per batch, for a loop that blocks for its step. Without workers the loop loads and "
            "steps in turn, so a batch must load in under a ninth of the step (docs/diagnose.md).")
    header = ("pipeline", "images/s", *(f"{s:g} ms" for s in table.steps_ms))
    return [Item(text, [Table(header, [_row(r) for r in table.rows], right=range(1, len(header)))])]
