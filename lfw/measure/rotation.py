"""Interleaved rounds: every configuration of a group measured round-robin, in a new random order each round.

The cases a chart or a recommendation compares used to run one after another, each over its own stretch of the
machine's speed (on a shared VM the same decode loop's rate moves by tens of percent within a run), so comparing
two configurations was partly comparing two moments. A rotation (RMIT: randomized multiple interleaved trials,
Abedi & Brecht 2017) runs round 1 of every member, then round 2, ..., each round in a fresh random order, so every
member sees the same drift and the ratio of two members can be taken per round: a paired comparison whose unit
is the round. The single-core ceiling of each transform is a member of the rotation too, so efficiency (rate over
ceiling) is paired by round as well and cannot drift above 1 because the ceiling was measured at another moment.

Members are anything with ``measure() -> PassResult`` (:class:`Member`); one whose untimed warm-up can be cheaper
than a measured pass offers ``warm_up()`` too, which the warm-up rounds call instead. :data:`pass_clock` is the
timer that replays a rotated case's measured passes as pytest-benchmark's rounds (docs/methodology.md,
"Interleaved rounds").
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from lfw.errors import environment_failure, one_line
from lfw.measure.loader_pass import LoaderPass, PassResult


class Member(Protocol):
    def measure(self) -> PassResult: ...

    def close(self) -> None: ...


class LoaderMember:
    """One DataLoader configuration: each ``measure()`` is setup (untimed), one timed pass, finish (untimed: the
    workers are stopped before the next member runs, so no idle worker of another configuration is alive during a
    pass). ``before_pass`` runs in the untimed setup (e.g. evicting the files from the page cache in cold mode).
    """

    def __init__(self, runner: LoaderPass, before_pass: Callable[[], object] | None = None) -> None:
        self.runner = runner
        self.before_pass = before_pass

    def measure(self) -> PassResult:
        self.runner.setup()
        if self.before_pass is not None:
            self.before_pass()
        result = self.runner.run()
        self.runner.finish()
        return result

    def close(self) -> None:
        self.runner.close(stop_workers=True)


def round_orders(keys: Sequence[str], rounds: int, seed: int) -> list[list[str]]:
    """One random permutation of ``keys`` per round (seeded, so a run's schedule can be reproduced)."""
    rng = random.Random(seed)
    orders = [list(keys) for _ in range(rounds)]
    for order in orders:
        rng.shuffle(order)
    return orders


@dataclass
class Measured:
    """What one member measured: its timed passes in round order and its position in each round."""

    results: list[PassResult] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    warmup: list[PassResult] = field(default_factory=list)  # the untimed warm-up rounds' passes (a cold first epoch)
    error: str | None = None  # why the member stopped (one line); its rounds are then dropped
    machine_failure: bool = False  # the error was the machine's (shared memory, open files, a killed worker)


@dataclass
class Rotation:
    """``rounds`` timed rounds of every member, interleaved, after the untimed warm-up.

    The warm-up is ``warmup_rounds`` whole rounds, or, cheaper, one pass of each member in ``warm``: a ceiling
    sweep runs the transform in this process, which is the first-use cost (lazy imports, first-call caches) that
    the forked workers of every later pass inherit already paid. Warm-up rounds leave the members in ``warm`` out
    (they have had their pass) and run a member's ``warm_up()`` where it has one (a remote case reads its start-up
    wave alone, at zero injected latency: the round is there to start its persistent workers and their clients),
    else its ``measure()``.
    """

    members: Mapping[str, Member]
    rounds: int
    warmup_rounds: int = 0
    seed: int = 0
    warm: Sequence[str] = ()
    isolate: Collection[str] = ()

    def run(self, progress: Callable[[str], None] | None = None) -> dict[str, Measured]:
        """Measure every member ``rounds`` times; ``progress(key)`` is called after each pass.

        A member in ``isolate`` that raises is closed and leaves the rotation with its :attr:`Measured.error`
        (no rounds), and the others go on; any other member's error ends the rotation. Members are closed
        (their workers stopped) at the end, on failure and on an interrupt too.
        """
        keys = list(self.members)
        measured = {k: Measured() for k in keys}
        orders = round_orders(keys, self.warmup_rounds + self.rounds, self.seed)
        try:
            for key in self.warm:
                self.members[key].measure()
                if progress is not None:
                    progress(key)
            for number, order in enumerate(orders):
                warming = number < self.warmup_rounds
                for position, key in enumerate(order):
                    if measured[key].error is not None or (warming and key in self.warm):
                        continue  # a member in ``warm`` has had its warm-up pass
                    member = self.members[key]
                    try:
                        result = getattr(member, "warm_up", member.measure)() if warming else member.measure()
                    except Exception as exc:
                        if key not in self.isolate:
                            raise
                        self._drop(key, measured[key], exc)
                        continue
                    if not warming:
                        measured[key].results.append(result)
                        measured[key].positions.append(position)
                    else:
                        measured[key].warmup.append(result)
                    if progress is not None:
                        progress(key)
        finally:
            for member in self.members.values():
                member.close()
        return measured

    def _drop(self, key: str, measured: Measured, exc: Exception) -> None:
        cause = environment_failure(exc)
        measured.error, measured.machine_failure = cause or one_line(exc), cause is not None
        measured.results.clear()
        measured.positions.clear()
        measured.warmup.clear()
        with contextlib.suppress(Exception):
            self.members[key].close()

    @property
    def passes(self) -> int:
        warmed = len(self.warm)
        return warmed + (len(self.members) - warmed) * self.warmup_rounds + len(self.members) * self.rounds


class PassClock:
    """pytest-benchmark's timer in this suite: ``time.perf_counter``, except while a measured pass is replayed.

    ``with pass_clock.replaying(seconds) as next_pass:`` makes each call of ``next_pass`` advance a virtual
    clock by the next recorded duration; ``benchmark.pedantic(next_pass, rounds=len(seconds))`` then records
    exactly those durations as its rounds.
    """

    __name__ = "pass_clock"  # how pytest-benchmark names the timer in its JSON: lfw.measure.rotation.pass_clock

    def __init__(self) -> None:
        self._virtual: float | None = None

    def __call__(self) -> float:
        return time.perf_counter() if self._virtual is None else self._virtual

    @contextmanager
    def replaying(self, seconds: Sequence[float]) -> Iterator[Callable[[], None]]:
        pending = list(seconds)
        self._virtual = 0.0

        def next_pass() -> None:
            assert self._virtual is not None
            self._virtual += pending.pop(0)

        try:
            yield next_pass
        finally:
            self._virtual = None


pass_clock = PassClock()
