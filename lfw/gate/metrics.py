"""What the gate compares, which way is worse, and the minimum effect family of each metric (:data:`Family`; what
each measures, how it is judged, and why tree USS growth and RSS are not gated: docs/gating.md, "The layers").

Memory is judged as what a loader adds (:data:`MEMORY`); the host process before the pass, the tree's absolute
peak and the tree's PSS of a case with fresh-interpreter workers (:data:`FRESH_INTERPRETERS`) are judged nowhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from lfw.results import Case
from lfw.results import keys as K
from lfw.results.knobs import BATCH_SIZE, NUM_WORKERS, PREFETCH_FACTOR, START_METHOD, STEP_MS

Kind = Literal["relative", "absolute"]
Family = Literal["cost", "throughput", "ttfb", "memory", "worker-memory", "slope", "wait"]
Layer = Literal["cost", "requests", "memory", "wall clock", "data wait"]
LAYER_OF: dict[Family, Layer] = {"cost": "cost", "throughput": "wall clock", "ttfb": "wall clock", "memory": "memory",
                                 "worker-memory": "memory", "slope": "memory", "wait": "data wait"}


@dataclass(frozen=True)
class Metric:
    """One gated key: its kind and threshold family (its label, unit and direction: :mod:`lfw.results.keys`)."""

    key: str
    kind: Kind
    family: Family
    optional: bool = False  # recorded only in some rounds or runs (an in-pass sample); absence is not news
    # Runs recorded before the key existed: its value from the keys they hold (None where they lack those too)
    derived: Callable[[Case], float | None] | None = None
    layer: Layer | None = None  # the two-file layer, where it is not its family's (LAYER_OF)
    # A figure the gate derives from each round of a case (never saved): its per-round values, [] where it cannot
    computed: Callable[[Case], list[float]] | None = None
    source: str = ""  # the saved key a computed figure derives from: what its notes name and exemptions match

    @property
    def label(self) -> str:
        return K.FACTS[self.key].label

    @property
    def unit(self) -> str:  # the saved value's, as the gate appends it: " MiB", or empty
        return f" {unit}" if (unit := K.FACTS[self.key].unit) else ""

    def rounds_of(self, case: Case) -> list[float]:
        """The metric's per-round values in ``case``, or the single value :attr:`derived` from older keys; ``[]``
        when the case has neither."""
        if self.computed is not None:
            return self.computed(case)
        values = case.rounds(self.key)
        if values or self.derived is None:
            return values
        value = self.derived(case)
        return [] if value is None else [value]

    @property
    def sign(self) -> int:
        """+1 when a higher value is worse (time, instructions), -1 when lower is (images/s): a change times this
        is positive when worse."""
        return -1 if K.FACTS[self.key].better == "higher" else 1

    def change(self, before: float, after: float) -> float:
        """Relative change for relative metrics (``inf`` from zero to non-zero), difference for absolute ones."""
        if self.kind == "absolute":
            return after - before
        if before == 0:
            return 0.0 if after == 0 else math.copysign(math.inf, after)
        return after / before - 1.0


INSTRUCTIONS = Metric(K.INSTRUCTIONS_PER_IMAGE, "relative", "cost")
# Moves per image (lfw.measure.moves), judged like instructions; optional: older baselines lack them.
FILES_OPENED = Metric(K.FILES_OPENED_PER_IMAGE, "relative", "cost", optional=True)
READ_CALLS = Metric(K.READ_CALLS_PER_IMAGE, "relative", "cost", optional=True)
BYTES_READ = Metric(K.BYTES_READ_PER_IMAGE, "relative", "cost", optional=True)
BATCH_BYTES = Metric(K.BATCH_BYTES_PER_IMAGE, "relative", "cost", optional=True)
# The counts that depend on the counted stack (valgrind, Python, the libraries): compared where it matches.
COUNTED = (INSTRUCTIONS, FILES_OPENED, READ_CALLS, BYTES_READ, BATCH_BYTES)
IMAGES_PER_S = Metric(K.IMAGES_PER_S, "relative", "throughput")
EFFICIENCY = Metric(K.EFFICIENCY, "relative", "throughput")
PIL_SHARE = Metric(K.PIL_CEILING_SHARE, "relative", "throughput")
# Remote cases: what crossed the proxy per image, deterministic, so under the cost threshold.
REQUESTS = Metric(K.REQUESTS_PER_IMAGE, "relative", "cost", layer="requests")
BOUND_SHARE = Metric(K.REMOTE_BOUND_SHARE, "relative", "throughput")
TTFB = Metric(K.TTFB_S, "relative", "ttfb")  # A/B: the two sides' passes alternate on one machine


def ttfb_in_core_images(case: Case) -> list[float]:
    """Each round's time to first batch x the single-core rate of the same work in that round (the preset's ceiling,
    or a pipeline's own decoder): the images one core loads meanwhile. ``[]`` for a case without both."""
    ttfb = case.rounds(K.TTFB_S)
    per_core = case.rounds(K.PER_CORE_IMAGES_PER_S) or case.rounds(K.OWN_DECODER_PER_CORE)
    return [t * rate for t, rate in zip(ttfb, per_core, strict=True)] if ttfb and len(per_core) == len(ttfb) else []


# Two files: time to first batch in the machine's units (ttfb_in_core_images), the relative ttfb threshold.
TTFB_UNITS = Metric(K.TTFB_CORE_IMAGES, "relative", "ttfb", computed=ttfb_in_core_images, source=K.TTFB_S)
# Memory: what a pass adds to the process tree, apart from its host process (docs/gating.md, "2. Memory").
PSS_GROWTH = Metric(K.PSS_GROWTH_MIB, "absolute", "memory")


def _peak_added(case: Case) -> float | None:
    """``pss_peak_added_mib`` of a case recorded before it existed: ``max(peak, end) - before`` of its tree PSS."""
    peak, end, before = (case.number(K.tree("pss", p)) for p in ("peak", "end", "before"))
    return None if peak is None or end is None or before is None else max(peak, end) - before


PSS_PEAK_ADDED = Metric(K.PSS_PEAK_ADDED_MIB, "absolute", "memory", optional=True, derived=_peak_added)
# Recorded, judged nowhere: /dev/shm (machine-wide), the tree's absolute PSS peak and the host (docs/gating.md)
SHM_ADDED = Metric(K.SHM_PEAK_ADDED_MIB, "absolute", "memory", optional=True)
PSS_PEAK = Metric(K.PSS_PEAK_MIB, "absolute", "memory", optional=True)
# The host process before the pass (for older runs, derived from the tree's USS before it).
HOST_USS = Metric(K.HOST_USS_BEFORE_MIB, "absolute", "memory", optional=True,
                  derived=lambda case: case.number(K.tree("uss", "before")))
WORKER_USS = Metric(K.WORKER_USS_END_MIB, "absolute", "worker-memory")
WORKER_USS_GROWTH = Metric(K.WORKER_USS_GROWTH_MIB, "absolute", "worker-memory")
LEAK_STEP_USS = Metric(K.MEDIAN_STEP_USS, "absolute", "slope")
LEAK_STEP_PSS = Metric(K.MEDIAN_STEP_PSS, "absolute", "slope")


def data_wait_excess(case: Case) -> list[float]:
    """Each round's data-wait fraction over the fraction the machine's own rates of that round predict
    (:func:`lfw.diagnose.simulator.pass_data_wait`); ``[]`` for a case without a data-wait fraction or those rates."""
    measured, per_core, ttfb = (case.rounds(k) for k in (K.DATA_WAIT_FRACTION, K.PER_CORE_IMAGES_PER_S, K.TTFB_S))
    step_ms, batches = case.knob(STEP_MS), case.number(K.BATCHES)
    capacity = case.rounds(K.PARALLEL_CAPACITY) or [case.number(K.USABLE_CORES) or 1.0] * len(measured)
    if not measured or step_ms is None or not batches or not len(per_core) == len(ttfb) == len(capacity) == len(
            measured):
        return []
    from lfw.diagnose.simulator import pass_data_wait  # imports torch: only where a data-wait case is judged

    workers, batch = case.knob(NUM_WORKERS) or 0, case.knob(BATCH_SIZE) or 1
    return [m - pass_data_wait(per_core=rate, cores=cores, workers=workers, batch=batch, step_s=step_ms / 1e3,
                               batches=int(batches), ttfb_s=first, prefetch_factor=case.knob(PREFETCH_FACTOR) or 2)
            for m, rate, cores, first in zip(measured, per_core, capacity, ttfb, strict=True)]


DATA_WAIT = Metric(K.DATA_WAIT_EXCESS, "absolute", "wait", computed=data_wait_excess)

# Metrics a group's cases are not judged on two-file, with the reason the gate prints.
GROUP_EXCLUDED: dict[tuple[str | None, str], str] = {
    ("remote", K.TTFB_S): "the proxy injects a heavy-tailed delay, and a first batch waits for its slowest request: "
                          "a tail in 2 of 3 rounds moves the median by multiples"}
# Groups the gate never judges, with the reason each verdict prints (the history keeps them as reference rows).
REFERENCE_GROUPS: dict[str, str] = {
    "peers": "reference rows: other projects' loaders (SPDL, DALI, Grain, WebDataset, LitData) and the DataLoader "
             "pipelines they ran beside, measured to compare loaders, not this project's own code; their changes "
             "are shown in the report and the history (docs/peers.md)"}
MEMORY = (PSS_GROWTH, PSS_PEAK_ADDED, WORKER_USS, WORKER_USS_GROWTH, LEAK_STEP_USS, LEAK_STEP_PSS)
# Fresh-interpreter workers share the host's libraries: their tree PSS (HOST_SHARED) is judged nowhere (docs/gating.md)
FRESH_INTERPRETERS = ("spawn", "forkserver")
HOST_SHARED = (PSS_GROWTH, PSS_PEAK_ADDED)


def fresh_interpreters(case: Case) -> bool:
    """Whether ``case``'s workers were started as fresh interpreters (:data:`FRESH_INTERPRETERS`): as read back
    from the workers, or as configured where the run did not read it."""
    return (case.value(K.WORKER_START_METHOD) or case.knob(START_METHOD)) in FRESH_INTERPRETERS


# Two files from the same runner class: every layer; from different machines, all but time to first batch.
# The counted metrics are judged in either set only where the counted stack matches (lfw.gate.compare).
SAME_MACHINE = (*COUNTED, REQUESTS, EFFICIENCY, PIL_SHARE, BOUND_SHARE, TTFB_UNITS, *MEMORY, DATA_WAIT)
PORTABLE = (*COUNTED, REQUESTS, EFFICIENCY, PIL_SHARE, BOUND_SHARE, *MEMORY, DATA_WAIT)
# Pass-interleaved A/B: the wall-clock figures the two-file gate cannot judge finely.
AB = (IMAGES_PER_S, TTFB)

# What the gate judges, each metric once, in the gate's order: the list the history (lfw.history) reads.
JUDGED: tuple[Metric, ...] = tuple(dict.fromkeys((*SAME_MACHINE, *AB)))
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
    """Why the gate never judges ``metric`` (or the saved key it derives from) for cases of ``group``
    (:data:`GROUP_EXCLUDED`); None when it does."""
    return GROUP_EXCLUDED.get((group, metric.source or metric.key))
