"""Interleaved rounds: every configuration of a group measured round-robin, in a new random order each round.

Every member sees the same drift of the machine, so two members (a transform's single-core ceiling included)
are compared per round: a paired comparison whose unit is the round (RMIT, Abedi & Brecht 2017;
docs/methodology.md, "Interleaved rounds"). Members have ``measure() -> PassResult`` (:class:`Member`) and may
offer a cheaper ``warm_up()``; :data:`pass_clock` replays a rotated case's passes as pytest-benchmark's rounds."""

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
    """One DataLoader configuration: each ``measure()`` is untimed setup (and ``before_pass``), one timed pass,
    untimed finish (its workers stop before the next member runs)."""

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
    seconds: float = 0.0  # wall time of its timed rounds' whole measure() calls (set-up and finish included)


@dataclass
class Rotation:
    """``rounds`` timed rounds of every member, interleaved, after the untimed warm-up: ``warmup_rounds`` whole
    rounds (a member's ``warm_up()`` where it has one, else ``measure()``), members in ``warm`` (a ceiling sweep,
    which pays the first-use costs in this process) left out of them."""

    members: Mapping[str, Member]
    rounds: int
    warmup_rounds: int = 0
    seed: int = 0
    warm: Sequence[str] = ()
    isolate: Collection[str] = ()

    def run(self, progress: Callable[[str], None] | None = None) -> dict[str, Measured]:
        """Measure every member ``rounds`` times, ``progress(key)`` after each pass. A failing member in ``isolate``
        leaves with its :attr:`Measured.error`; any other's error ends the rotation. Members are closed at the end,
        on failure and interrupt too."""
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
                    started = time.perf_counter()
                    try:
                        result = getattr(member, "warm_up", member.measure)() if warming else member.measure()
                    except Exception as exc:
                        if key not in self.isolate:
                            raise
                        measured[key] = self._drop(key, exc)
                        continue
                    if not warming:
                        measured[key].results.append(result)
                        measured[key].positions.append(position)
                        measured[key].seconds += time.perf_counter() - started
                    else:
                        measured[key].warmup.append(result)
                    if progress is not None:
                        progress(key)
        finally:
            for member in self.members.values():
                member.close()
        return measured

    def _drop(self, key: str, exc: Exception) -> Measured:
        """Close the failed member ``key``; its record: no rounds, the error's one line."""
        with contextlib.suppress(Exception):
            self.members[key].close()
        cause = environment_failure(exc)
        return Measured(error=cause or one_line(exc), machine_failure=cause is not None)

    @property
    def passes(self) -> int:
        warmed = len(self.warm)
        return warmed + (len(self.members) - warmed) * self.warmup_rounds + len(self.members) * self.rounds


class PassClock:
    """pytest-benchmark's timer: ``time.perf_counter``, except inside ``with pass_clock.replaying(seconds) as
    next_pass:``, where each ``next_pass()`` advances a virtual clock by the next recorded duration."""

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
