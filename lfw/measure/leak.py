"""Leak checks: memory per epoch with persistent workers, a fitted slope, and a verdict that can fail.

From end-of-epoch snapshots of the tree, the first epoch left out, for tree USS and PSS: the least-squares slope
(``scipy.stats.linregress``; recorded, gated, drawn) and the median epoch-to-epoch step (the verdict: it ignores a
one-off jump of shared library pages, docs/methodology.md "Leak check"). Copy-on-access of a large index is paid
in the first epoch: :func:`first_epoch_verdict` judges worker USS growth over it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import linregress
from torch.utils.data import DataLoader

from lfw.errors import LFWError
from lfw.measure.loader_pass import LoaderPass, PassResult
from lfw.results import keys as K

LEAK_THRESHOLD_MIB_PER_EPOCH = 4.0  # between well-behaved steps and the leaking control's (docs/methodology.md)
FIRST_EPOCH_THRESHOLD_MIB = 16.0  # between the layouts' first-epoch worker USS growth (docs/methodology.md, Memory)
WARMUP_EPOCHS = 1
ROBUST_EPOCHS_FITTED = 4  # three steps: the fewest whose median ignores a one-off jump
LEAK_MEMORY_INTERVAL_S = 1.0  # only the end-of-epoch snapshots (off the clock) are needed


@dataclass(frozen=True)
class EpochMemory:
    """End-of-epoch memory of the process tree (MiB): one point of the series the slope is fitted to."""

    epoch: int
    tree_uss_mib: float
    tree_pss_mib: float
    worker_uss_mib: float  # mean over the workers alive at the end (0.0 without workers)


def epoch_series(results: Sequence[PassResult]) -> list[EpochMemory]:
    """One point per pass, from each pass's end snapshot (each pass must have been a whole epoch)."""
    series = []
    for epoch, result in enumerate(results):
        memory = result.memory
        if memory is None:
            raise LFWError("leak check needs memory sampling: build LoaderPass with memory_interval_s set")
        workers = memory.worker_uss(memory.end)
        series.append(EpochMemory(epoch, round(memory.end.uss, 2), round(memory.end.pss, 2),
                                  round(float(np.mean(workers)), 2) if workers else 0.0))
    return series


def fit_slope(values: Sequence[float]) -> float:
    """Least-squares slope of ``values`` against their position, in units per epoch."""
    if len(values) < 2:
        raise LFWError(f"a slope needs at least 2 epochs, got {len(values)}")
    if np.ptp(values) == 0:
        return 0.0  # linregress warns on a constant series; its slope is 0
    return float(linregress(np.arange(len(values)), np.asarray(values, dtype=float)).slope)


def median_step(values: Sequence[float]) -> float:
    """Median of the epoch-to-epoch differences (a slope robust to one jump when there are >= 3 steps)."""
    if len(values) < 2:
        raise LFWError(f"a step needs at least 2 epochs, got {len(values)}")
    return float(np.median(np.diff(np.asarray(values, dtype=float))))


@dataclass(frozen=True)
class LeakVerdict:
    """Slopes and median steps of tree USS/PSS after the warm-up epochs; the steps are judged."""

    slope_uss_mib_per_epoch: float
    slope_pss_mib_per_epoch: float
    slope_worker_uss_mib_per_epoch: float
    step_uss_mib: float
    step_pss_mib: float
    threshold_mib_per_epoch: float
    epochs_fitted: int

    @property
    def leaking(self) -> bool:
        return max(self.step_uss_mib, self.step_pss_mib) > self.threshold_mib_per_epoch

    @property
    def robust(self) -> bool:
        """Whether enough epochs were fitted for :attr:`leaking` to be more than one step (a jump reads as a leak)."""
        return self.epochs_fitted >= ROBUST_EPOCHS_FITTED

    def as_extra_info(self) -> dict[str, Any]:
        return {
            K.SLOPE_USS: round(self.slope_uss_mib_per_epoch, 3),
            K.SLOPE_PSS: round(self.slope_pss_mib_per_epoch, 3),
            K.SLOPE_WORKER_USS: round(self.slope_worker_uss_mib_per_epoch, 3),
            K.MEDIAN_STEP_USS: round(self.step_uss_mib, 3),
            K.MEDIAN_STEP_PSS: round(self.step_pss_mib, 3),
            K.LEAK_THRESHOLD: self.threshold_mib_per_epoch,
            K.LEAK_EPOCHS_FITTED: self.epochs_fitted,
            K.LEAK_VERDICT: "leak" if self.leaking else "ok",
        }


def leak_verdict(series: Sequence[EpochMemory], threshold: float = LEAK_THRESHOLD_MIB_PER_EPOCH) -> LeakVerdict:
    """Judge ``series`` after the first :data:`WARMUP_EPOCHS` (2 points at least; 4 make the median step robust)."""
    fitted = list(series[WARMUP_EPOCHS:])
    if len(fitted) < 2:
        raise LFWError(f"leak check needs at least {WARMUP_EPOCHS + 2} epochs, got {len(series)}")
    uss = [p.tree_uss_mib for p in fitted]
    pss = [p.tree_pss_mib for p in fitted]
    return LeakVerdict(fit_slope(uss), fit_slope(pss), fit_slope([p.worker_uss_mib for p in fitted]),
                       median_step(uss), median_step(pss), threshold, len(fitted))


@dataclass(frozen=True)
class FirstEpochVerdict:
    """Mean worker USS growth over one epoch against a threshold: copy-on-access shows here, in epoch one."""

    worker_uss_growth_mib: float
    threshold_mib: float = FIRST_EPOCH_THRESHOLD_MIB

    @property
    def flagged(self) -> bool:
        return self.worker_uss_growth_mib > self.threshold_mib

    def as_extra_info(self) -> dict[str, Any]:
        return {K.FIRST_EPOCH_THRESHOLD: self.threshold_mib,
                K.FIRST_EPOCH_VERDICT: "growth" if self.flagged else "ok"}


def first_epoch_verdict(info: dict[str, Any], threshold: float = FIRST_EPOCH_THRESHOLD_MIB) -> FirstEpochVerdict:
    """The verdict on a one-epoch pass's ``extra_info`` (``worker_uss_growth_mib``, from the first batch on)."""
    if K.WORKER_USS_GROWTH_MIB not in info:
        raise LFWError("first-epoch check needs worker USS growth: use workers and memory sampling")
    return FirstEpochVerdict(float(info[K.WORKER_USS_GROWTH_MIB]), threshold)


@dataclass(frozen=True)
class LeakReport:
    """The epochs measured, their end-of-epoch series and the verdict on it."""

    results: list[PassResult]
    series: list[EpochMemory]
    verdict: LeakVerdict

    def as_extra_info(self) -> dict[str, Any]:
        """One list per metric (position = epoch, from 0) for the charts, and the verdict's numbers."""
        return {
            K.USS_MIB_EPOCHS: [p.tree_uss_mib for p in self.series],
            K.PSS_MIB_EPOCHS: [p.tree_pss_mib for p in self.series],
            K.WORKER_USS_MIB_EPOCHS: [p.worker_uss_mib for p in self.series],
            **self.verdict.as_extra_info(),
        }


def leak_check(loader: DataLoader, epochs: int, *, timed: Callable[[LoaderPass], object] | None = None) -> LeakReport:
    """Run ``epochs`` whole epochs of ``loader`` through :class:`LoaderPass` (``timed(runner)`` first when given,
    the rest untimed) and judge the series; workers are stopped at the end."""
    if loader.num_workers > 0 and not loader.persistent_workers:
        raise LFWError("leak check needs persistent_workers=True: fresh workers every epoch hide a worker leak")
    runner = LoaderPass(loader, len(loader), memory_interval_s=LEAK_MEMORY_INTERVAL_S)
    try:
        if timed is not None:
            timed(runner)
        # A disabled benchmark runs a single round: the series is completed here, through the same primitive (with
        # persistent workers, consecutive passes are consecutive epochs of the same processes).
        while len(runner.results) < epochs:
            runner.run()
    finally:
        runner.close(stop_workers=True)
    results = runner.results[-epochs:]
    series = epoch_series(results)
    return LeakReport(results, series, leak_verdict(series))
