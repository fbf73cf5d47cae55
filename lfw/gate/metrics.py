"""What the gate compares, which way is worse, and the minimum effect family of each metric.

Families: ``cost`` (counts under callgrind, deterministic, so judged tightly two-file), ``throughput`` and
``ttfb`` (wall clock: two-file only gross regressions, since the machine's speed drifts between sessions; A/B
judges them finely), ``memory``, ``worker-memory`` and ``slope`` (stable between sessions: a floor in MiB and a
share of the baseline), ``wait`` (the data-wait fraction, which drifts like throughput). What each measures, and
why tree USS growth and RSS are not gated: docs/gating.md, "The layers".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from lfw.results import keys as K

Worse = Literal["lower", "higher"]
Kind = Literal["relative", "absolute"]
Family = Literal["cost", "throughput", "ttfb", "memory", "worker-memory", "slope", "wait"]


@dataclass(frozen=True)
class Metric:
    """One gated ``extra_info`` key: its direction, kind and the threshold family that applies."""

    key: str
    label: str
    worse: Worse
    kind: Kind
    family: Family
    unit: str = ""
    optional: bool = False  # recorded only in some rounds or runs (an in-pass sample); absence is not news

    @property
    def sign(self) -> int:
        """+1 when a higher value is worse (time, instructions), -1 when lower is (images/s): a change times this
        is positive when worse."""
        return 1 if self.worse == "higher" else -1

    def change(self, before: float, after: float) -> float:
        """Relative change for relative metrics (``inf`` from zero to non-zero), difference for absolute ones."""
        if self.kind == "absolute":
            return after - before
        if before == 0:
            return 0.0 if after == 0 else math.copysign(math.inf, after)
        return after / before - 1.0


INSTRUCTIONS = Metric(K.INSTRUCTIONS_PER_IMAGE, "instructions/image", "higher", "relative", "cost")
# What the pipeline moves per image (lfw.measure.moves), counted beside the instructions: deterministic, judged
# like them. Optional: baselines recorded before these counts existed do not have them.
FILES_OPENED = Metric(K.FILES_OPENED_PER_IMAGE, "files opened/image", "higher", "relative", "cost", optional=True)
READ_CALLS = Metric(K.READ_CALLS_PER_IMAGE, "read calls/image", "higher", "relative", "cost", optional=True)
BYTES_READ = Metric(K.BYTES_READ_PER_IMAGE, "bytes read/image", "higher", "relative", "cost", optional=True)
BATCH_BYTES = Metric(K.BATCH_BYTES_PER_IMAGE, "batch bytes/image", "higher", "relative", "cost", optional=True)
# The counts that depend on the counted stack (valgrind, Python, the libraries): compared where it matches.
COUNTED = (INSTRUCTIONS, FILES_OPENED, READ_CALLS, BYTES_READ, BATCH_BYTES)
IMAGES_PER_S = Metric(K.IMAGES_PER_S, "images/s", "lower", "relative", "throughput")
EFFICIENCY = Metric(K.EFFICIENCY, "efficiency", "lower", "relative", "throughput")
# A decode pipeline's rate over the PIL path's ceiling of the same rounds: its efficiency (it may exceed 1).
PIL_SHARE = Metric(K.PIL_CEILING_SHARE, "share of the PIL ceiling", "lower", "relative", "throughput")
# Remote cases: what crossed the proxy per image. Deterministic (one GET per image), so the cost threshold applies:
# an extra HEAD per GET is +100%.
REQUESTS = Metric(K.REQUESTS_PER_IMAGE, "requests/image", "higher", "relative", "cost")
# A remote case's rate over min(endpoint ceiling, in-flight limit / latency) of the same round: a case held back
# by latency does not speed up with the machine, while the endpoint's ceiling does.
BOUND_SHARE = Metric(K.REMOTE_BOUND_SHARE, "share of the remote bound", "lower", "relative", "throughput")
TTFB = Metric(K.TTFB_S, "time to first batch", "higher", "relative", "ttfb", " s")
PSS_GROWTH = Metric(K.PSS_GROWTH_MIB, "tree PSS growth", "higher", "absolute", "memory", " MiB")
PSS_PEAK = Metric(K.PSS_PEAK_MIB, "tree PSS peak in pass", "higher", "absolute", "memory", " MiB", optional=True)
WORKER_USS = Metric(K.WORKER_USS_END_MIB, "worker USS", "higher", "absolute", "worker-memory", " MiB")
WORKER_USS_GROWTH = Metric(K.WORKER_USS_GROWTH_MIB, "worker USS growth", "higher", "absolute", "worker-memory",
                           " MiB")
LEAK_STEP_USS = Metric(K.MEDIAN_STEP_USS, "leak step, tree USS", "higher", "absolute", "slope", " MiB/epoch")
LEAK_STEP_PSS = Metric(K.MEDIAN_STEP_PSS, "leak step, tree PSS", "higher", "absolute", "slope", " MiB/epoch")
DATA_WAIT = Metric(K.DATA_WAIT_FRACTION, "data-wait fraction", "higher", "absolute", "wait")

# Metrics a group's cases are not judged on two-file, with the reason the gate prints.
NOT_JUDGED: dict[tuple[str | None, str], str] = {
    ("remote", K.TTFB_S): "the proxy injects a heavy-tailed delay, and a first batch waits for its slowest request: "
                          "a tail in 2 of 3 rounds moves the median by multiples"}
# Groups the gate never judges, each with the reason every verdict prints once: decided here and only here, read
# by the two-file gate (lfw.gate.compare) and the history (lfw.history.store), which keeps their figures as
# reference rows instead.
REFERENCE_GROUPS: dict[str, str] = {
    "peers": "reference rows: other projects' loaders (SPDL, DALI, Grain, WebDataset, LitData) and the DataLoader "
             "pipelines they ran beside, measured to compare loaders, not this project's own code; their changes "
             "are shown in the report and the history (docs/peers.md)"}
MEMORY = (PSS_GROWTH, PSS_PEAK, WORKER_USS, WORKER_USS_GROWTH, LEAK_STEP_USS, LEAK_STEP_PSS)
# Two files from the same runner class: every layer. From different machines time to first batch does not
# port. Instruction counts join either set wherever the counted stack matches (lfw.gate.compare decides).
SAME_MACHINE = (*COUNTED, REQUESTS, EFFICIENCY, PIL_SHARE, BOUND_SHARE, TTFB, *MEMORY, DATA_WAIT)
PORTABLE = (*COUNTED, REQUESTS, EFFICIENCY, PIL_SHARE, BOUND_SHARE, *MEMORY, DATA_WAIT)
# Pass-interleaved A/B: the wall-clock figures the two-file gate cannot judge finely.
AB = (IMAGES_PER_S, TTFB)

# What the gate judges, each metric once, in the gate's order (SAME_MACHINE, then A/B's images/s): the one list the
# two-file comparison (lfw.gate.compare) and the history (lfw.history.store) both read.
JUDGED: tuple[Metric, ...] = tuple(dict.fromkeys((*SAME_MACHINE, *AB)))
JUDGED_BY_KEY: dict[str, Metric] = {m.key: m for m in JUDGED}
WALL_CLOCK_MIN_ROUNDS = 3  # a single round (start-method in quick) has no median to speak of: not judged
COST_LAYER = "cost layer"  # the layer of the counted metrics (COUNTED), named as such in every verdict


def too_few_rounds(metric: Metric, rounds: int) -> bool:
    """Whether ``rounds`` rounds are too few for the gate to judge ``metric``: wall clock (throughput, time to first
    batch) needs :data:`WALL_CLOCK_MIN_ROUNDS`; every other family is judged from one round."""
    return metric.family in ("throughput", "ttfb") and rounds < WALL_CLOCK_MIN_ROUNDS


def reference_group(group: str | None) -> str | None:
    """Why the gate never judges any case of ``group`` (:data:`REFERENCE_GROUPS`); None when it judges them."""
    return REFERENCE_GROUPS.get(group or "")


def group_excludes(group: str | None, metric: Metric) -> str | None:
    """Why the gate never judges ``metric`` for cases of ``group`` (:data:`NOT_JUDGED`); None when it does."""
    return NOT_JUDGED.get((group, metric.key))
