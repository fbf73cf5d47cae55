"""The leak check: slope and verdict logic on synthetic series, then the real check against its positive control."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lfw.data.dataset import scan_images
from lfw.data.memory_datasets import IndexOnlyDataset, LeakingControlDataset, large_index
from lfw.errors import LFWError
from lfw.measure import LoaderConfig, PassResult
from lfw.measure.leak import (
    FIRST_EPOCH_THRESHOLD_MIB,
    LEAK_THRESHOLD_MIB_PER_EPOCH,
    EpochMemory,
    epoch_series,
    first_epoch_verdict,
    fit_slope,
    leak_check,
    leak_verdict,
    median_step,
)
from lfw.measure.loader_pass import MemoryStats
from lfw.measure.memory import TreeSnapshot
from lfw.results import keys as K

TH = LEAK_THRESHOLD_MIB_PER_EPOCH
EPOCHS = 7  # of the control and its twin


def series(uss: list[float], pss: list[float] | None = None) -> list[EpochMemory]:
    pss = pss if pss is not None else [u + 400.0 for u in uss]
    return [EpochMemory(i, u, p, 10.0) for i, (u, p) in enumerate(zip(uss, pss, strict=True))]


def test_fit_slope_recovers_a_line_and_calls_a_constant_flat() -> None:
    assert fit_slope([100.0, 103.0, 106.0, 109.0]) == pytest.approx(3.0)
    assert fit_slope([5.0, 5.0, 5.0]) == 0.0
    with pytest.raises(LFWError, match="at least 2"):
        fit_slope([1.0])


def test_median_step_ignores_one_jump() -> None:
    assert median_step([0.0, 0.2, 300.0, 300.1, 300.3]) == pytest.approx(0.2)
    assert median_step([0.0, 10.0, 20.0]) == pytest.approx(10.0)


def test_noise_around_a_flat_line_passes() -> None:
    rng = np.random.default_rng(0)
    uss = list(330.0 + rng.normal(0.0, 0.3, size=8))  # ~0.3 MiB epoch-to-epoch noise, as measured quiet
    verdict = leak_verdict(series(uss))
    assert not verdict.leaking
    assert abs(verdict.slope_uss_mib_per_epoch) < TH


def test_steady_growth_above_the_threshold_is_a_leak() -> None:
    verdict = leak_verdict(series([300.0 + 18.0 * i for i in range(5)]))
    assert verdict.leaking
    assert verdict.slope_uss_mib_per_epoch == pytest.approx(18.0)
    assert verdict.as_extra_info()["leak_verdict"] == "leak"


def test_growth_just_below_the_threshold_passes() -> None:
    assert not leak_verdict(series([300.0 + 0.9 * TH * i for i in range(6)])).leaking


def test_one_external_jump_is_not_a_leak() -> None:
    # Measured: another torch process exiting made tree USS jump +303 MiB within one epoch (shared libtorch
    # pages turning private); the least-squares slope alone would have called that 91 MiB/epoch.
    verdict = leak_verdict(series([46.4, 47.1, 350.2, 350.4, 350.5]))
    assert verdict.slope_uss_mib_per_epoch > TH
    assert not verdict.leaking


def test_a_leak_survives_one_external_drop() -> None:
    verdict = leak_verdict(series([300.0, 318.0, 246.0, 264.0, 282.0, 300.0]))
    assert verdict.slope_uss_mib_per_epoch < TH  # least squares alone would miss this leak
    assert verdict.leaking and verdict.step_uss_mib == pytest.approx(18.0)


def test_the_first_epoch_is_warm_up_and_not_fitted() -> None:
    verdict = leak_verdict(series([20.0, 300.0, 300.1, 300.2, 300.2]))
    assert not verdict.leaking and verdict.epochs_fitted == 4


def test_pss_alone_can_flag_a_leak() -> None:
    flat_uss = [300.0] * 5
    assert leak_verdict(series(flat_uss, [700.0 + 9.0 * i for i in range(5)])).leaking


def test_one_step_is_recorded_but_not_robust_and_three_steps_are() -> None:
    """Two fitted epochs are one step: a one-off jump there reads as a leak, so the verdict says it is not robust."""
    jump = leak_verdict(series([46.4, 47.1, 350.2]))
    assert jump.leaking and not jump.robust
    assert leak_verdict(series([46.4, 47.1, 350.2, 350.4, 350.5])).robust


def test_too_few_epochs_is_an_error() -> None:
    with pytest.raises(LFWError, match="at least 3 epochs"):
        leak_verdict(series([1.0, 2.0]))


def test_first_epoch_verdict_reads_worker_uss_growth() -> None:
    assert first_epoch_verdict({"worker_uss_growth_mib": 99.7}).flagged
    assert not first_epoch_verdict({"worker_uss_growth_mib": 2.5}).flagged
    assert first_epoch_verdict({"worker_uss_growth_mib": 1.0}).threshold_mib == FIRST_EPOCH_THRESHOLD_MIB
    with pytest.raises(LFWError, match="worker USS"):
        first_epoch_verdict({"pss_growth_mib": 1.0})


def test_epoch_series_uses_each_pass_end_snapshot() -> None:
    def result(uss: float) -> PassResult:
        snap = TreeSnapshot(0.0, 900.0, uss + 400.0, uss, {11: 20.0, 12: 22.0, 99: 500.0})
        return PassResult(
            images=8, batches=1, wall_s=0.1, ttfb_s=0.05, memory=MemoryStats(snap, snap, snap, [], [11, 12])
        )

    points = epoch_series([result(300.0), result(301.5)])
    assert [(p.epoch, p.tree_uss_mib, p.tree_pss_mib, p.worker_uss_mib) for p in points] == [
        (0, 300.0, 700.0, 21.0),
        (1, 301.5, 701.5, 21.0),
    ]
    with pytest.raises(LFWError, match="memory sampling"):
        epoch_series([PassResult(images=8, batches=1, wall_s=0.1, ttfb_s=0.05)])


def control_and_twin(root: Path) -> tuple[LeakingControlDataset, IndexOnlyDataset]:
    scan = scan_images(root)
    index, labels = large_index(scan.paths, scan.labels, "numpy", 4096)
    return LeakingControlDataset(index, labels, payload_bytes=4096), IndexOnlyDataset(index, labels, 4096)


def test_the_leak_check_flags_the_control_and_passes_its_twin(tiny_tree: Path) -> None:
    """The positive control: same items, one keeps them. If this fails, the leak check proves nothing."""
    control, twin = control_and_twin(tiny_tree)
    config = LoaderConfig(batch_size=256, num_workers=1, persistent_workers=True, shuffle=True, seed=0)
    # 7 epochs, 6 fitted: the median step stands through two jumps of the tree's shared pages (another torch
    # process starting or ending mid-check swung the tree USS by hundreds of MiB), where 5 epochs stand through one
    leaking = leak_check(config.build(control), EPOCHS)
    assert leaking.verdict.leaking, leaking.as_extra_info()
    assert leaking.verdict.slope_worker_uss_mib_per_epoch > TH  # the growth is in the worker, where it is kept
    well = leak_check(config.build(twin), EPOCHS)
    assert not well.verdict.leaking, well.as_extra_info()
    info = well.as_extra_info()
    assert all(len(info[key]) == EPOCHS for key in K.EPOCH_SERIES)
    assert info[K.LEAK_VERDICT] == "ok" and info[K.LEAK_THRESHOLD] == TH


def test_the_leak_check_refuses_fresh_workers_every_epoch(tiny_tree: Path) -> None:
    control, _ = control_and_twin(tiny_tree)
    with pytest.raises(LFWError, match="persistent_workers"):
        leak_check(LoaderConfig(batch_size=256, num_workers=1).build(control), 3)
