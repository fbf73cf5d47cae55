"""The pipeline simulator: the published figures (FIELD-NOTES, seed 004), the closed form, PyTorch's rules.

Pure computation, no data and no processes: the whole file runs in about a second.

About the figures. The seed article states mean load times; its 700 ms case (7 workers, load/7 = step) gave
275 batches in 30 s. Without any variation in load times a matched pipeline never runs dry after start-up and
gives 292 (+6 %), so that one figure cannot come from a deterministic model; the article also says the 350 ms
case was "only 7 % more" than the 700 ms one, which a deterministic model puts at 1.4 %. One load-time
variation (lognormal, coefficient of variation 0.2, averaged over seeds) puts all three figures within 3 %,
and the 2 s and 350 ms figures also come out within 1 % without any variation.
"""

from __future__ import annotations

import statistics

import pytest

from lfw.diagnose.events import MAIN_PROCESS
from lfw.diagnose.simulator import PipelineModel, simulate, workers_to_end_stalls
from lfw.errors import LFWError

SEVEN_LOADERS = {"workers": 7, "step_s": 0.100}
PUBLISHED = {2.0: 98, 0.7: 275, 0.35: 295}  # mean batch load time (s) -> batches in the first 30 s
FIGURE_CV = 0.2  # the one load-time variation used for all three figures
SEEDS = 20


def _mean_completed(load_s: float, cv: float, seeds: int = SEEDS) -> float:
    runs = [simulate(PipelineModel(load_s=load_s, load_cv=cv, seed=s, **SEVEN_LOADERS), horizon_s=30).completed
            for s in range(seeds)]
    return statistics.fmean(runs)


@pytest.mark.parametrize("load_s", [2.0, 0.35], ids=["load2000ms", "load350ms"])
def test_figures_without_variation_within_1_percent(load_s: float) -> None:
    completed = simulate(PipelineModel(load_s=load_s, **SEVEN_LOADERS), horizon_s=30).completed
    assert completed == pytest.approx(PUBLISHED[load_s], rel=0.01)


@pytest.mark.parametrize("load_s", list(PUBLISHED), ids=["load2000ms", "load700ms", "load350ms"])
def test_figures_with_load_variation_within_3_percent(load_s: float) -> None:
    assert _mean_completed(load_s, FIGURE_CV) == pytest.approx(PUBLISHED[load_s], rel=0.03)


def test_matched_case_needs_variation_to_lose_batches() -> None:
    """Why the 700 ms figure needs variance: deterministic, it loses only start-up; varied, the queue runs dry."""
    deterministic = simulate(PipelineModel(load_s=0.7, **SEVEN_LOADERS), horizon_s=30).completed
    assert deterministic > PUBLISHED[0.7] * 1.05
    gain = _mean_completed(0.35, FIGURE_CV) / _mean_completed(0.7, FIGURE_CV)
    assert gain == pytest.approx(295 / 275, abs=0.03)  # "only 7 % more"


@pytest.mark.parametrize(("prefetcher", "published", "tolerance"), [(False, 20, 0), (True, 29, 1)],
                         ids=["no-prefetcher", "prefetcher"])
def test_follow_up_host_to_device_figure(prefetcher: bool, published: int, tolerance: int) -> None:
    """80 ms load per worker, 15 ms host-to-device, 30 ms step, first second: 20 batches, 29 with a prefetcher.

    With a prefetcher the copy overlaps the step, so after the first batch (80 + 15 ms) a step ends every 30 ms:
    30 batches by 1 s. The published 29 is one fewer (3 %), which this event-driven model does not reproduce
    exactly, hence a tolerance of one batch. The worker count is not given; any N >= 3 keeps up (7 used here).
    """
    model = PipelineModel(workers=7, load_s=0.080, step_s=0.030, transfer_s=0.015, prefetcher=prefetcher)
    completed = simulate(model, horizon_s=1.0).completed
    assert abs(completed - published) <= tolerance


@pytest.mark.parametrize(("workers", "load_s", "step_s"),
                         [(7, 2.0, 0.1), (4, 0.2, 0.1), (2, 0.05, 0.1), (3, 0.3, 0.1)],
                         ids=["data-bound", "compute-bound", "fast-loader", "matched"])
def test_steady_state_is_the_closed_form(workers: int, load_s: float, step_s: float) -> None:
    model = PipelineModel(workers=workers, load_s=load_s, step_s=step_s)
    result = simulate(model, max_batches=400)
    assert result.steady_batches_per_s == pytest.approx(min(workers / load_s, 1 / step_s), rel=0.01)
    assert model.steady_batches_per_s() == pytest.approx(min(workers / load_s, 1 / step_s))


@pytest.mark.parametrize(("load_s", "step_s", "expected"), [(2.0, 0.1, 20), (0.7, 0.1, 7), (0.35, 0.1, 4),
                                                             (0.05, 0.1, 1)])
def test_workers_to_end_stalls_and_the_simulator_agrees(load_s: float, step_s: float, expected: int) -> None:
    needed = workers_to_end_stalls(load_s, step_s)
    assert needed == expected
    enough = simulate(PipelineModel(needed, load_s, step_s), max_batches=300)
    assert enough.steady_data_wait_fraction < 0.01
    if needed > 1:
        short = simulate(PipelineModel(needed - 1, load_s, step_s), max_batches=300)
        assert short.steady_data_wait_fraction > 0.02


def test_no_more_than_prefetch_capacity_outstanding_and_one_load_per_worker() -> None:
    model = PipelineModel(workers=3, load_s=0.05, step_s=0.1, prefetch_factor=2, load_cv=0.5, seed=3)
    result = simulate(model, horizon_s=5)
    outstanding = 0
    busy: set[int] = set()
    for _, event, _, worker in result.log:
        outstanding += {"dispatch": 1, "got": -1}.get(event, 0)
        assert outstanding <= model.capacity
        if event == "load_start":
            assert worker not in busy
            busy.add(worker)
        elif event == "load_end":
            busy.discard(worker)


def test_batches_arrive_in_order_and_round_robin() -> None:
    result = simulate(PipelineModel(workers=4, load_s=0.3, step_s=0.05, load_cv=0.6, seed=1), horizon_s=10)
    got = [r for r in result.records if r.got == r.got]  # not NaN
    assert [r.index for r in sorted(got, key=lambda r: r.got)] == sorted(r.index for r in got)
    assert all(r.worker == r.index % 4 for r in result.records)


def test_out_of_order_delivery_loses_less_to_variance() -> None:
    def rate(in_order: bool) -> float:
        return statistics.fmean(simulate(PipelineModel(7, 0.7, 0.1, load_cv=0.3, seed=s, in_order=in_order),
                                         horizon_s=30).completed for s in range(10))
    assert rate(False) > rate(True)


def test_workers_zero_loads_in_the_main_loop() -> None:
    result = simulate(PipelineModel(workers=0, load_s=0.03, step_s=0.02), max_batches=50)
    assert result.batches_per_s == pytest.approx(1 / 0.05, rel=1e-6)
    assert {r.worker for r in result.records} == {MAIN_PROCESS}


def test_a_step_that_ends_after_the_horizon_does_not_count() -> None:
    assert simulate(PipelineModel(1, 1.0, 0.5), horizon_s=1.49).completed == 0
    assert simulate(PipelineModel(1, 1.0, 0.5), horizon_s=1.5).completed == 1


def test_same_seed_same_run_and_variation_changes_it() -> None:
    model = PipelineModel(5, 0.5, 0.1, load_cv=0.4, distribution="gamma", desync_s=0.3, seed=7)
    assert simulate(model, horizon_s=20).log == simulate(model, horizon_s=20).log
    others = {simulate(PipelineModel(5, 0.5, 0.1, load_cv=0.4, seed=s), horizon_s=20).completed for s in range(5)}
    assert len(others) > 1


@pytest.mark.parametrize("kwargs", [{"workers": -1}, {"load_s": 0.0}, {"step_s": -0.1}, {"distribution": "x"},
                                    {"prefetch_factor": 0}, {"workers": 0, "prefetcher": True}],
                         ids=["workers", "load", "step", "distribution", "prefetch", "prefetcher-without-workers"])
def test_bad_model_is_a_user_error(kwargs: dict) -> None:
    base = {"workers": 2, "load_s": 0.1, "step_s": 0.1} | kwargs
    with pytest.raises(LFWError):
        PipelineModel(**base)


def test_a_prefetcher_overlaps_the_copy_when_counting_workers() -> None:
    assert workers_to_end_stalls(0.080, 0.030, 0.015) == 2  # 80 ms / (30 + 15) ms per consumed batch
    assert workers_to_end_stalls(0.080, 0.030, 0.015, prefetcher=True) == 3  # the step alone paces it
