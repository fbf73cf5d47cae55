"""A watched loop's figures, its interval, its verdict line, its advice and its saved record.

The summary mapping's keys are a contract (tools outside the project read them): ``data_bound_share`` (time in
``next()`` over the loop's wall time, 0..1), ``data_bound_low``/``data_bound_high`` (its 95% batch-means interval:
consecutive steps are not independent), ``steps``, ``wait_ms_p50``/``p95``/``p99``, ``step_ms_p50``/``p95``, and
the rest documented in :func:`summarize_steps`. The advice follows the simulator's steady state
(:func:`lfw.diagnose.simulator.workers_to_end_stalls`) and quotes the suite's decoders group when a run exists.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as st

from lfw.diagnose.events import BatchRecord
from lfw.diagnose.feeds import DECODERS_GROUP
from lfw.diagnose.predict import (
    COMPUTE_BOUND_AU,
    handover_times,
    load_per_batch,
    median_or_0,
    worker_budget,
    workers_text,
)
from lfw.diagnose.simulator import workers_to_end_stalls
from lfw.errors import LFWError
from lfw.results import case_record, load_run
from lfw.results import keys as K

MAX_BLOCKS, MIN_BLOCKS, STEPS_PER_BLOCK = 20, 3, 5
NOTHING_TO_GAIN = 0.10  # below this data-bound share the loader is not what to work on
GROUP = "watch"
BASELINE = "benchmarks/baselines/cpu-2core.json"  # the decoders figures quoted where no run is saved here


@dataclass(frozen=True)
class Steps:
    """Per finished step, seconds on ``clock``: the wait for the batch, the loop body, the watcher's own time."""

    waits: Sequence[float]
    steps: Sequence[float]
    overhead: Sequence[float]
    epoch_starts: Sequence[int]
    clock: str

    @property
    def cycles(self) -> list[float]:
        return [w + s + o for w, s, o in zip(self.waits, self.steps, self.overhead, strict=True)]


def share_interval(waits: Sequence[float], cycles: Sequence[float]) -> tuple[float, float, int]:
    """The 95% batch-means interval of ``sum(waits) / sum(cycles)`` and its number of blocks ``B``: the steps cut
    into ``B = min(20, steps // 5)`` blocks of consecutive steps (NaN under 3 blocks: fewer than 15 steps), the share
    plus or minus Student's t (``B - 1`` degrees of freedom) times the blocks' standard error."""
    n = len(cycles)
    blocks = min(MAX_BLOCKS, n // STEPS_PER_BLOCK)
    total = sum(cycles)
    if blocks < MIN_BLOCKS or total <= 0:
        return math.nan, math.nan, 0
    share = sum(waits) / total
    edges = np.linspace(0, n, blocks + 1).astype(int)
    shares = [sum(waits[a:b]) / s for a, b in itertools.pairwise(edges) if (s := sum(cycles[a:b])) > 0]
    half = float(st.t.ppf(0.975, len(shares) - 1)) * statistics.stdev(shares) / math.sqrt(len(shares))
    return max(0.0, share - half), min(1.0, share + half), len(shares)


def _pct(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values) * 1e3, q)), 3) if values else 0.0


def summarize_steps(s: Steps, records: Sequence[BatchRecord], context: dict[str, Any]) -> dict[str, Any]:
    """The summary mapping. Beside the contract keys (module docstring): ``epochs``, ``wall_s``,
    ``first_wait_ms`` (each epoch's first batch, worker start-up included, mean), ``steady_data_bound_share``
    (each epoch's first step left out), ``clock``, ``workers``, ``load_ms_per_batch`` and ``handover_ms_p50``
    (None when the loader was not instrumented; ``instrumented`` says why), ``overhead_us_per_step`` and
    ``overhead_share`` (of the wall time), ``interval`` (how the interval was made) and ``advice`` (a list)."""
    cycles = s.cycles
    wall = sum(cycles)
    share = sum(s.waits) / wall if wall > 0 else 0.0
    low, high, blocks = share_interval(s.waits, cycles)
    firsts = set(s.epoch_starts)
    steady = [i for i in range(len(cycles)) if i not in firsts]
    steady_wall = sum(cycles[i] for i in steady)
    workers = int(context.get("workers") or 0)
    load = load_per_batch(list(records), workers * int(context.get("prefetch_factor") or 2))  # None: not stamped
    hand_ms = median_or_0(handover_times(list(records))) * 1e3 if load is not None else None
    overhead_s = sum(s.overhead)
    out: dict[str, Any] = {
        "data_bound_share": share, "data_bound_low": low, "data_bound_high": high,
        "interval": f"95% t-interval over {blocks} blocks of consecutive steps (batch means)" if blocks
        else "none (fewer than 15 steps)",
        "steps": len(cycles), "epochs": len(firsts), "wall_s": wall,
        "steady_data_bound_share": (sum(s.waits[i] for i in steady) / steady_wall) if steady_wall > 0 else share,
        "first_wait_ms": statistics.fmean(s.waits[i] for i in firsts) * 1e3 if firsts else 0.0,
        "wait_ms_p50": _pct(s.waits, 50), "wait_ms_p95": _pct(s.waits, 95), "wait_ms_p99": _pct(s.waits, 99),
        "step_ms_p50": _pct(s.steps, 50), "step_ms_p95": _pct(s.steps, 95),
        "clock": s.clock, "workers": workers, "instrumented": context.get("instrumented", ""),
        "load_ms_per_batch": load * 1e3 if load is not None else None, "handover_ms_p50": hand_ms,
        "overhead_us_per_step": overhead_s / len(cycles) * 1e6 if cycles else 0.0,
        "overhead_share": overhead_s / wall if wall > 0 else 0.0,
    }
    out["advice"] = advise(out, context)
    return out


def advise(s: dict[str, Any], context: dict[str, Any]) -> list[str]:
    """What to try, most promising first (more workers, a faster decoder, slot batches, pin memory)."""
    share, workers, load, hand = s["data_bound_share"], s["workers"], s["load_ms_per_batch"], s["handover_ms_p50"]
    if share < NOTHING_TO_GAIN:
        return [f"nothing to gain from the loader: the loop computes {1 - share:.0%} of the time; a faster step "
                "is the lever"]
    tips: list[str] = []
    step = s["step_ms_p50"]
    budget = worker_budget(int(context.get("cores") or 1), cpu_step=not context.get("cuda_used"))
    if load is None:
        tips.append(f"load time per batch unknown ({s['instrumented'] or 'not stamped'}); "
                    "python -m lfw.diagnose --dataset MODULE:FACTORY measures it")
    elif step + (hand or 0.0) > 0:
        needed = workers_to_end_stalls(load / 1e3, step / 1e3, (hand or 0.0) / 1e3)
        if needed > workers and needed <= budget:
            tips.append(f"more workers: {needed} keep a {step:.0f} ms step fed (a batch loads in {load:.0f} ms per "
                        f"worker; {workers_text(budget, 'core')} for workers)")
        elif needed > workers:
            more = f"num_workers={budget}, then " if workers < budget else ""
            target = budget * (step + (hand or 0.0))
            tips.append(f"{more}a faster decoder: {workers_text(needed)} would be needed, "
                        f"{workers_text(budget, 'core')} can serve; a batch must load in <= {target:.0f} ms per "
                        f"worker (now {load:.0f} ms){suite_figures(context.get('run'))}")
        if hand and workers and hand / (step + hand) > 1 - COMPUTE_BOUND_AU:
            tips.append(f"slot batches: the loop spends {hand:.1f} ms per batch taking it from the workers "
                        f"({hand / (step + hand):.0%} of a step); fewer shared-memory objects per batch cut it")
    if context.get("cuda_used") and not context.get("pin_memory"):
        tips.append("pin_memory=True: pageable host-to-device copies are several times slower than pinned ones")
    if not tips:
        tips.append("uneven load times: the workers keep up on average; a larger prefetch_factor buffers them")
    return tips


def suite_figures(run: str | Path | None) -> str:
    """``; the suite's decoders group (<path>) measured images/s: <case> <rate>, ...`` from a saved run, or ``""``;
    ``"auto"``: the newest run under ``.benchmarks``, else :data:`BASELINE`: the first that exists here and has a
    decoders case. A folder means its newest run; one that cannot be read gives ``""`` (advice without figures)."""
    candidates = [".benchmarks", BASELINE] if run == "auto" else [] if run is None else [run]
    for candidate in candidates:
        try:
            loaded = load_run(candidate)  # a folder: its newest autosaved run
        except (LFWError, OSError):
            continue
        cases = [c for c in loaded.group(DECODERS_GROUP) if c.number(K.IMAGES_PER_S) and c.value(K.STORAGE) != "memmap"]
        if cases:
            break
    else:
        return ""
    cases.sort(key=lambda c: -(c.number(K.IMAGES_PER_S) or 0.0))
    shown = ", ".join(f"{c.label} {c.number(K.IMAGES_PER_S):,.0f}" for c in [*cases[:2], cases[-1]][:3])
    return f"; the suite's decoders group ({loaded.path}) measured images/s: {shown}"


def watch_verdict(s: dict[str, Any]) -> str:
    """One line: the share with its interval and clock, the waits, the step, the load, what to try, overhead."""
    interval = (f"95% CI {s['data_bound_low']:.0%}-{s['data_bound_high']:.0%}"
                if not math.isnan(s["data_bound_low"]) else "no interval under 15 steps")
    load = (f"; workers load {s['load_ms_per_batch']:.0f} ms per batch ({workers_text(s['workers'])})"
            if s["load_ms_per_batch"] is not None else "")
    step_ms = s["step_ms_p50"]
    over = s["overhead_us_per_step"]
    over_text = f"{over:.1f} us/step" + (f" ({over / 1e3 / step_ms:.2%} of a step)" if step_ms > 0 else "")
    return (f"watch: data-bound {s['data_bound_share']:.0%} of {s['wall_s']:.1f} s ({interval}; {s['clock']}), "
            f"{s['steps']} steps; wait p50 {s['wait_ms_p50']:.1f} ms p95 {s['wait_ms_p95']:.1f} ms; step p50 "
            f"{step_ms:.1f} ms{load}; try: {' | '.join(s['advice'])}; watcher overhead {over_text}")


def record_of(s: dict[str, Any], steps: Steps, name: str) -> dict[str, Any]:
    """One case of group ``watch`` in pytest-benchmark's layout: a round per step (its wall time)."""
    def r(x: float | None, digits: int = 4) -> float | None:
        return None if x is None or math.isnan(x) else round(x, digits)

    extra = {K.DATA_BOUND_SHARE: r(s["data_bound_share"]), K.DATA_BOUND_LOW: r(s["data_bound_low"]),
             K.DATA_BOUND_HIGH: r(s["data_bound_high"]),
             K.DATA_WAIT_FRACTION: r(1 - sum(steps.steps) / s["wall_s"]) if s["wall_s"] > 0 else None,
             K.BATCHES: s["steps"], K.WALL_S: r(s["wall_s"]), K.TTFB_S: r(s["first_wait_ms"] / 1e3),
             K.WAIT_P50_MS: s["wait_ms_p50"], K.WAIT_P95_MS: s["wait_ms_p95"], K.WAIT_P99_MS: s["wait_ms_p99"],
             K.STEP_P50_MS: s["step_ms_p50"], K.WORKERS: s["workers"], K.LOAD_MS_PER_BATCH: r(s["load_ms_per_batch"]),
             K.HANDOVER_MS: r(s["handover_ms_p50"]), K.WATCH_CLOCK: s["clock"],
             K.WATCH_OVERHEAD_US: r(s["overhead_us_per_step"], 2), K.FINDINGS: s["advice"]}
    return case_record(name=f"watch[{name}]", fullname=f"lfw.diagnose.watch::watch[{name}]", group=GROUP,
                       params={"name": name}, seconds=steps.cycles or [0.0], extra=extra)
