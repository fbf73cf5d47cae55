"""The contention a loop adds to a pipeline measured alone (lfw.diagnose.contention): the figures, the loop's feed,
and a probe of a tiny pipeline. The probes read the 40-image synthetic tree of ``tests/conftest.py``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lfw.diagnose.contention import Contention, in_loop, measure_contention, time_step_alone
from lfw.diagnose.feeds import Feed, closed_form_fed, simulated_au
from lfw.diagnose.training import pipeline_setup, sleep_step
from lfw.errors import LFWError


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pipelines that write shards or memmaps write them to a temporary cache, never the benchmarks' one."""
    monkeypatch.setenv("LFW_CACHE", str(tmp_path / "cache"))


def _contention(**figures: float) -> Contention:
    base = {"step_alone_s": 0.010, "step_beside_s": 0.010, "load_alone_s": 0.020, "load_beside_s": 0.020,
            "handover_s": 0.001}
    return Contention(**{**base, **figures}, batches=10)


def test_slowdowns_are_the_loop_over_alone_and_one_without_a_figure_to_divide_by() -> None:
    c = _contention(step_beside_s=0.012, load_beside_s=0.025)
    assert c.step_slowdown == pytest.approx(1.2) and c.load_slowdown == pytest.approx(1.25)
    free = _contention(step_alone_s=0.0, step_beside_s=0.0, load_alone_s=0.0, load_beside_s=0.0)
    assert free.step_slowdown == 1.0 and free.load_slowdown == 1.0


@pytest.mark.parametrize("name", ["step_alone_s", "handover_s", "load_beside_s"])
def test_a_negative_or_missing_time_is_refused_in_one_line(name: str) -> None:
    for bad in (-0.001, float("nan")):
        with pytest.raises(LFWError, match=name.removesuffix("_s").replace("_", " ")):
            _contention(**{name: bad})


def test_the_loop_s_feed_carries_the_contention_and_keeps_what_was_measured_alone() -> None:
    alone = Feed(rate=3200.0, workers=2, handover_s=0.0005)
    loop = in_loop(alone, _contention(load_beside_s=0.025, handover_s=0.002, step_beside_s=0.011))
    assert (loop.rate, loop.handover_s, loop.workers, loop.batch) == (3200.0, 0.0005, 2, 64)
    assert loop.load_slowdown == pytest.approx(1.25) and loop.step_slowdown == pytest.approx(1.1)
    assert loop.busy_handover_s == 0.002


def test_contention_applies_in_proportion_to_how_busy_the_workers_are() -> None:
    loop = Feed(rate=3200.0, workers=2, handover_s=0.0005, load_slowdown=1.25, busy_handover_s=0.0025)
    # 64 images at 3,200/s: a batch every 20 ms; a consumer asking every 10 ms keeps the workers flat out
    flat_out = loop.model(0.01, 1)
    assert loop.busy_share(0.01) == 1.0
    assert flat_out.transfer_s == pytest.approx(0.0025) and flat_out.load_s == pytest.approx(2 * 0.02 * 1.25)
    # asking every 80 ms (+ the idle hand-over) the workers load a quarter of the time
    share = 0.02 / 0.0805
    idle = loop.model(0.08, 1)
    assert loop.busy_share(0.08) == pytest.approx(share)
    assert idle.transfer_s == pytest.approx(0.0005 + 0.002 * share)
    assert idle.load_s == pytest.approx(0.04 * (1 + 0.25 * share))
    # contention only takes utilization away, and a slower load or hand-over never feeds more accelerators
    alone = Feed(rate=3200.0, workers=2, handover_s=0.0005)
    for n in (2, 3, 4):
        assert simulated_au(loop, 0.05, n, 200) <= simulated_au(alone, 0.05, n, 200) + 1e-9
    assert closed_form_fed(loop, 0.05) <= closed_form_fed(alone, 0.05)


def test_a_step_slowed_beside_the_workers_computes_a_larger_share_of_the_loop() -> None:
    feed = Feed(rate=3200.0, workers=2, handover_s=0.001)
    assert simulated_au(replace(feed, step_slowdown=1.2), 0.05, 3, 200) >= simulated_au(feed, 0.05, 3, 200)


def test_without_workers_the_loop_has_no_hand_over() -> None:
    loop = in_loop(Feed(rate=800.0, workers=0), _contention(handover_s=0.004))
    assert loop.busy_handover_s is None and loop.model(0.05, 1).transfer_s == 0.0


def test_the_step_s_slowdown_lengthens_the_simulated_step() -> None:
    feed = Feed(rate=3200.0, workers=2, step_slowdown=1.5)
    assert feed.model(0.03, 3).step_s == pytest.approx(0.015)
    for bad in ({"step_slowdown": 0.0}, {"load_slowdown": float("nan")}, {"busy_handover_s": -1.0}):
        with pytest.raises(LFWError, match=r"slowdown|hand-over"):
            Feed(rate=3200.0, workers=2, **bad)  # type: ignore[arg-type]


def test_the_step_alone_is_the_median_of_its_timed_calls() -> None:
    calls: list[int] = []

    def step(batch: object) -> None:
        calls.append(1)

    assert time_step_alone(step, None, repeats=5) >= 0.0 and len(calls) == 6  # one untimed warm-up call
    with pytest.raises(LFWError, match="1 or more"):
        time_step_alone(step, None, repeats=0)


@pytest.mark.parametrize("name", ["simplejpeg-t2", pytest.param("pil-w2", marks=pytest.mark.needs_shm(64))],
                         ids=["main-loop", "workers"])
def test_a_probe_measures_both_passes_and_the_step_alone(tiny_tree: Path, private_cache: None, name: str) -> None:
    setup = pipeline_setup(name, batch_size=8)
    c = measure_contention(setup, tiny_tree, sleep_step(0.003), batches=4, pairs=2, step_repeats=3)
    assert c.batches == 4
    assert c.step_alone_s >= 0.003 and c.step_beside_s >= 0.003  # a sleep never ends early
    assert c.load_alone_s > 0 and c.load_beside_s > 0
    assert (c.handover_s > 0) == (setup.config.num_workers > 0)
    with pytest.raises(LFWError, match="2 or more batches"):
        measure_contention(setup, tiny_tree, sleep_step(0.001), batches=1)
    with pytest.raises(LFWError, match="1 or more pairs"):
        measure_contention(setup, tiny_tree, sleep_step(0.001), pairs=0)
