"""What limits a measured case, read from the figures its record keeps (no new measurement).

:func:`what_limits` names one of: **the machine** (cores busy about the cores given), **the main process** (near one
core busy while cores sat idle), **the decoder** (each loading process busy, cores to spare), **idle cores** (none
saturated), or, for a case the machine could not run, **a resource** (:func:`left_out_limit`). Cores busy are
``cpu_utilization x usable_cores``; cores given the round's ``parallel_capacity`` (else the usable cores)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Literal

from lfw.results import keys as K
from lfw.results.knobs import NUM_WORKERS
from lfw.results.model import Case, Run

Kind = Literal["machine", "main process", "decoder", "idle cores", "resource", "not measured"]
SATURATED = 0.9  # a share of the cores (given, one process's, the loaders') at or above this is saturated
OVERHEAD_SHOWN = 0.10  # CPU per image over the decoder alone shown from this much on


@dataclass(frozen=True)
class Limiter:
    """What limits one case: its :data:`Kind`, a line with the figures it rests on, and the cores busy and given
    (None where not measured)."""

    kind: Kind
    text: str
    busy: float | None = None
    given: float | None = None

    def short(self) -> str:
        """``machine (1.95/1.97)``: the kind, with the cores busy and given where measured."""
        return self.kind + (f" ({self.busy:.2f}/{self.given:.2f})" if self.busy is not None and self.given else "")


def loaders(case: Case) -> int:
    """The processes or threads the case's work runs in: a peer's knob, else workers x decode threads (the main
    process counting as one loader where there are no workers)."""
    peer = case.value(K.PARALLELISM)
    if isinstance(peer, int) and peer > 0:
        return peer
    threads = int(case.value(K.THREADS) or 0)
    return max(case.knob(NUM_WORKERS) or 0, 1) * max(threads, 1)


def capacity_trusted(run: Run) -> bool:
    """Whether ``run``'s parallel capacity was measured by the present probe (``capacity_probe`` recorded): the
    earlier one timed its own forks and read low, so cores given are then taken as the usable cores."""
    return K.CAPACITY_PROBE in run.machine


def what_limits(case: Case, decoder_ms: float | None = None, trusted: bool = True) -> Limiter:
    """What limits ``case``, from its CPU accounting, its capacity (``trusted``: :func:`capacity_trusted` of its
    run) and the CPU per image of the same work alone in one process (``decoder_ms``; else its own decoder's
    single-core rate, or its preset's single-core ceiling)."""
    utilization, usable = case.number(K.CPU_UTILIZATION), case.number(K.USABLE_CORES)
    capacity = case.number(K.PARALLEL_CAPACITY) if trusted else None  # the cores given: the median capacity
    given = capacity if capacity is not None else usable
    if utilization is None or not usable or not given:
        return Limiter("not measured", "not measured (no CPU accounting in this record)")
    busy, n = utilization * usable, loaders(case)
    workers = case.knob(NUM_WORKERS) or 0
    main = (case.number(K.MAIN_CPU_SHARE) or 0.0) * busy
    of = f"{busy:.2f} of the {given:.2f} cores the machine gave busy" if trusted else (
        f"{busy:.2f} of the {usable:.0f} usable cores busy")
    per_core = case.number(K.OWN_DECODER_PER_CORE) or case.number(K.PER_CORE_IMAGES_PER_S)
    alone = decoder_ms if decoder_ms is not None else (1e3 / per_core if per_core else None)
    cpu_ms = case.number(K.CPU_MS_PER_IMAGE)
    extra = ""
    if alone and cpu_ms and cpu_ms / alone - 1 >= OVERHEAD_SHOWN:
        where = ("the hand-over: pickling and shared-memory copies between workers and the main process" if workers
                 else "thread hand-offs and collation" if n > 1 else "collation and the loop")
        extra = f"; {cpu_ms / alone - 1:+.0%} CPU per image over the same work alone ({where})"
    if busy >= SATURATED * given:
        return Limiter("machine", f"the machine: {of}{extra}", busy, given)
    if workers and main >= SATURATED:
        return Limiter("main process", f"the main process's receive: it kept {main:.2f} cores busy, all one "
                                       f"process has ({of})", busy, given)
    if n < given and busy >= SATURATED * n:
        loading = "process" if n == 1 else "processes" if workers or not case.value(K.THREADS) else "threads"
        return Limiter("decoder", f"the decoder: its {n} loading {loading} busy ({of}; more would add){extra}",
                       busy, given)
    why = ("the GIL between the decode threads" if not workers and case.value(K.THREADS)
           else "a serial stage, the GIL, the hand-over or waiting")
    return Limiter("idle cores", f"idle cores: {of} ({why}){extra}", busy, given)


def left_out_limit(run: Run, key: str) -> Limiter | None:
    """A resource, for a case of ``run`` left out because it did not fit (its one-line reason); else None."""
    outcome = run.selection.outcomes.get(key) if run.selection is not None else None
    if outcome is None or not outcome.limit:
        return None
    return Limiter("resource", f"a resource: {outcome.reason}")


def _spread(values: list[float]) -> str:
    text = f"{median(values):.2f}"
    return text + (f" (rounds {min(values):.2f}-{max(values):.2f})" if len(values) > 1 else "")


def machine_line(run: Run) -> str | None:
    """The run's CPUs in one line: what the usable cores are (the quota, the affinity set, the threads per core,
    as :class:`lfw.measure.cpus.CpuFacts` said) and the parallel capacity its rotations measured (every group's
    rounds, each group once); None for a run that recorded no usable cores."""
    info = run.machine
    usable, logical = info.get(K.USABLE_CORES), info.get(K.LOGICAL_CPUS)
    if usable is None:
        return None
    said = info.get(K.CPU_LIMIT)
    if not said:
        threads = info.get(K.THREADS_PER_CORE)
        said = f"{usable} usable core{'s' if usable != 1 else ''} of {logical or '?'} logical CPUs" + (
            f", {threads} thread{'s' if threads != 1 else ''} per core" if threads else "")
    groups: dict[str, Case] = {}
    for case in run.cases:  # a group's capacity rounds are its rotation's, the same in each of its cases
        if case.rounds(K.PARALLEL_CAPACITY):
            groups.setdefault(str(case.group), case)
    at_usable = [v for c in groups.values() for v in c.rounds(K.PARALLEL_CAPACITY)]
    at_physical = [v for c in groups.values() for v in c.rounds(K.PHYSICAL_CAPACITY)]
    if at_usable:
        said += f"; parallel capacity {_spread(at_usable)} at N = {usable}"
        if K.CAPACITY_PROBE not in info:
            said += " (by the earlier probe, which timed its own forks: it reads low)"
    if at_physical:
        said += f", {_spread(at_physical)} at N = its {info.get(K.PHYSICAL_CORES)} physical cores"
    return said
