"""The worker count for training, measured: the loop's steps/s at each count beside the loader's own rate.

The loader's knee (:mod:`lfw.results.recommend`'s rule) is not the count that makes the *loop* fastest where the
step computes on the workers' cores; :class:`WorkerSweep` holds both per count, each from its own pass, at steady
rates (docs/diagnose.md, "The worker count for training").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lfw.diagnose.predict import workers_text
from lfw.diagnose.training import Measurement
from lfw.errors import LFWError
from lfw.stats.variation import KNEE_TOLERANCE, first_within

LOOP_TOLERANCE = 0.02  # one pass per count: the loop's counts within 2% of its best are one, and the fewest wins


def steady_steps_per_s(m: Measurement) -> float:
    """Steps per second from the end of the first step to the end of the last (0 with fewer than 2 steps)."""
    window = m.steady_window_s
    return (len(m.result.events) - 1) / window if window > 0 else 0.0


@dataclass(frozen=True)
class SweepPoint:
    """One worker count: the loop with its step, and the loader alone (no step)."""

    workers: int
    loop: Measurement
    loader: Measurement

    @property
    def steps_per_s(self) -> float:
        return steady_steps_per_s(self.loop)

    @property
    def loader_images_per_s(self) -> float:
        return steady_steps_per_s(self.loader) * self.loader.batch_size


@dataclass(frozen=True)
class WorkerSweep:
    """Measured points, one per worker count, in increasing order of workers."""

    points: tuple[SweepPoint, ...]

    def __post_init__(self) -> None:
        counts = [p.workers for p in self.points]
        if len(counts) < 2 or counts != sorted(set(counts)):
            raise LFWError(f"a worker sweep needs 2 or more distinct counts in increasing order, got {counts}")

    @property
    def for_training(self) -> SweepPoint:
        """The fewest workers within :data:`LOOP_TOLERANCE` of the most steps/s of the loop (a pass per count
        cannot separate closer rates)."""
        return self.points[first_within([p.steps_per_s for p in self.points], LOOP_TOLERANCE)]

    @property
    def loader_knee(self) -> SweepPoint:
        """The fewest workers whose loader alone is within :data:`KNEE_TOLERANCE` of its best rate."""
        return self.points[first_within([p.loader_images_per_s for p in self.points])]

    def lines(self) -> list[str]:
        """The table and the recommendation, as printed."""
        out = [f"{'workers':>8}{'loop steps/s':>14}{'AU':>8}{'loader images/s':>17}"]
        out += [f"{p.workers:>8}{p.steps_per_s:>14.2f}{p.loop.accelerator_utilization:>8.1%}"
                f"{p.loader_images_per_s:>17,.0f}" for p in self.points]
        train, knee = self.for_training, self.loader_knee
        text = (f"for training: {workers_text(train.workers)} ({train.steps_per_s:.2f} steps/s of the loop, within "
                f"{LOOP_TOLERANCE:.0%} of its most); the loader alone's knee: {workers_text(knee.workers)} (within "
                f"{KNEE_TOLERANCE:.0%} of its best, {knee.loader_images_per_s:,.0f} images/s)")
        if train.workers < knee.workers:
            text += ("; they differ: the step shares the cores with the workers, and more workers slow it "
                     "more than they speed the loading")
        elif train.workers > knee.workers:
            text += ("; they differ: the loop needs the batches sooner than the loader's knee supplies them "
                     "(each step waits on the hand-over)")
        return [*out, text]


def parse_counts(text: str) -> tuple[int, ...]:
    """``"0,1,2,4"`` as worker counts; one line naming the value that is not one."""
    counts = []
    for part in text.split(","):
        try:
            count = int(part)
        except ValueError:
            raise LFWError(f"--sweep-workers takes worker counts separated by commas, e.g. 0,1,2,4; "
                           f"got {text!r}") from None
        if count < 0:
            raise LFWError(f"--sweep-workers counts must be 0 or more, got {count}")
        counts.append(count)
    counts = sorted(set(counts))
    if len(counts) < 2:
        raise LFWError(f"--sweep-workers needs 2 or more distinct counts, got {text!r}")
    return tuple(counts)


def sweep(counts: Sequence[int], measure_at: Callable[[int, bool], Measurement]) -> WorkerSweep:
    """A point per count: ``measure_at(count, with_step)`` measures the loop (True) and the loader alone."""
    return WorkerSweep(tuple(SweepPoint(n, measure_at(n, True), measure_at(n, False)) for n in counts))
