"""``python -m lfw.diagnose``: the measured loop, the worker instrumentation, the verdict, the chart, bad input.

Runs on the 40-image synthetic tree of ``tests/conftest.py`` with batches of 8 and a few batches per pass, so
each measured case takes well under two seconds even with a worker process.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from PIL import Image

from lfw.data.dataset import LFWDataset
from lfw.diagnose.__main__ import main
from lfw.diagnose.events import MAIN_PROCESS, BatchRecord, LoadStamp, StampCollate, TimedDataset, split_stamp
from lfw.diagnose.predict import diagnose, worker_gaps
from lfw.diagnose.simulator import PipelineModel, simulate
from lfw.diagnose.timeline import Panel, animate_timeline, draw_timeline
from lfw.diagnose.training import Measurement, make_step, measure_training, sleep_step
from lfw.errors import LFWError
from lfw.measure import LoaderConfig, PassResult


@pytest.fixture
def tree(tiny_tree: Path) -> Path:
    """The session's 40-image synthetic tree (tests/conftest.py)."""
    return tiny_tree


@pytest.fixture
def dataset(tiny_tree: Path) -> LFWDataset:
    return LFWDataset(tiny_tree, transform="uint8")


def test_timed_collate_appends_a_stamp_and_keeps_the_images_first(dataset: LFWDataset) -> None:
    samples = TimedDataset(dataset).__getitems__([0, 1, 2])
    batch = StampCollate()(samples)
    images, stamp = batch[0], batch[-1]
    assert images.shape[0] == 3  # what LoaderPass counts
    assert isinstance(stamp, LoadStamp) and stamp.worker == MAIN_PROCESS and stamp.end >= stamp.start
    stripped, again = split_stamp(batch)
    assert again == stamp and len(stripped) == 2 and torch.equal(stripped[0], images)


@pytest.mark.parametrize("workers", [0, 1], ids=["workers0", "workers1"])
def test_measured_timeline_is_consistent(dataset: LFWDataset, workers: int) -> None:
    m = measure_training(dataset, LoaderConfig(batch_size=8, num_workers=workers), 4, sleep_step(0.005),
                         progress=False)
    assert m.result.images == 4 * 8  # the stamp does not change what is counted
    assert len(m.records) == 4 and len(m.result.steps_s) == 4
    expected_worker = MAIN_PROCESS if workers == 0 else 0
    for r in m.records:
        assert r.worker == expected_worker
        assert not math.isnan(r.load_start) and r.load > 0
        slack = 2e-3  # clock alignment via the step's entry time: microseconds, allow milliseconds
        assert r.load_end <= r.got + slack
        assert r.ask <= r.got <= r.step_start <= r.step_end
    assert 0.0 <= m.result.data_wait_fraction <= 1.0
    assert 0.0 < m.accelerator_utilization <= 1.0


def test_cnn_step_trains_on_a_batch(dataset: LFWDataset) -> None:
    step, label = make_step("cnn", None, len(dataset.classes))
    images = torch.stack([dataset[i][0] for i in range(4)])
    step([images, torch.arange(4)])
    assert label.startswith("cnn on ")


@pytest.mark.parametrize("workers", [0, 1], ids=["workers0", "workers1"])
def test_cli_measures_predicts_and_draws(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         workers: int) -> None:
    rc = main(["--path", str(tree), "--workers", str(workers), "--step-ms", "5", "--batch-size", "8",
               "--batches", "4", "--transform", "uint8", "--out", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    for field in ("data wait", "accelerator utilization", "batches/s", "bottleneck", "error", "stalls end",
                  "recommend"):
        assert field in out
    charts = list(tmp_path.glob("*.png"))
    assert len(charts) == 1
    with Image.open(charts[0]) as img:
        img.verify()


def test_cli_simulates_the_first_published_figure(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--simulate", "--workers", "7", "--load-ms", "2000", "--step-ms", "100", "--seconds", "30",
               "--no-chart"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "batches completed: 98" in out
    assert "batches/s: 3.27" in out


def test_timeline_png_and_gif_are_valid_images(tmp_path: Path) -> None:
    sim = simulate(PipelineModel(3, 0.35, 0.1, load_cv=0.3), horizon_s=2)
    panels = [Panel("a", sim.records, 3, 6), Panel("b", sim.records, 3, 6)]
    png = draw_timeline(panels, tmp_path / "t.png", "title")
    with Image.open(png) as img:
        assert img.format == "PNG" and img.width > img.height > 100
    gif = animate_timeline(panels[:1], tmp_path / "t.gif", "title", frames=3, progress=False)
    with Image.open(gif) as img:
        assert img.format == "GIF" and img.n_frames == 3


@pytest.mark.parametrize("argv", [
    ["--workers", "-1"],
    ["--step-ms", "-5"],
    ["--simulate", "--load-ms", "0"],
    ["--simulate", "--load-ms", "-3"],
    ["--model", "resnet"],
    ["--simulate"],
    ["--simulate", "--load-ms", "100", "--seconds", "0"],
    ["--simulate", "--load-ms", "100", "--seconds", "inf"],
    ["--simulate", "--load-ms", "nan"],
    ["--simulate", "--workers", "7", "--load-ms", "0.001", "--step-ms", "0", "--seconds", "3000"],
    ["--simulate", "--load-ms", "100", "--load-cv", "-1"],
    ["--path", "/nonexistent/lfw"],
    ["--workers", "two"],
    ["--no-such-flag"],
], ids=["workers", "step", "load0", "load-negative", "model", "no-load", "seconds", "seconds-inf", "load-nan",
        "too-many-batches", "cv-negative", "path", "not-int", "flag"])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own errors, one line through the parser's error()
        rc = exc.code
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err


def _fake(model: PipelineModel, transform: str = "none", batches: int = 40) -> Measurement:
    """A Measurement whose timeline comes from the simulator: the verdict logic without timing noise.

    A real loop receives the batch when the hand-over is done (inside ``next()``), so "got" is the simulated
    step start, as LoaderPass would have recorded it.
    """
    sim = simulate(model, max_batches=batches)
    records = sim.records[:batches]
    for r in records:
        r.got = r.step_start
    events = [(r.ask, r.got, r.step_start, r.step_end) for r in records]
    result = PassResult(images=batches * 8, batches=batches, wall_s=records[-1].step_end, ttfb_s=records[0].got,
                        waits_s=[r.wait for r in records[1:]], steps_s=[r.step_end - r.step_start for r in records],
                        events=events)
    return Measurement(result, records, LoaderConfig(batch_size=8, num_workers=model.workers), transform,
                       "sleep")


@pytest.mark.parametrize(("model", "cores", "verdict", "advice"), [
    (PipelineModel(2, 0.05, 0.1), 2, "the training step", "nothing to gain"),
    (PipelineModel(1, 0.2, 0.1), 4, "data loading", "more workers: 2"),
    (PipelineModel(2, 1.0, 0.1), 2, "data loading", "cheaper transform"),
    (PipelineModel(2, 0.05, 0.05, transfer_s=0.02), 2, "data loading", "taking it from the workers"),
], ids=["compute-bound", "more-workers", "cheaper-transform", "hand-over"])
def test_verdict_and_recommendation(model: PipelineModel, cores: int, verdict: str, advice: str) -> None:
    d = diagnose(_fake(model), cores, emulated_step=True)
    assert d.bottleneck == verdict
    assert advice in d.recommendation
    assert abs(d.error) < 0.02  # the simulator predicts its own timeline


def test_bad_step_is_a_user_error() -> None:
    with pytest.raises(LFWError):
        make_step(None, -1.0, 2)
    with pytest.raises(LFWError):
        make_step("resnet", None, 2)


def test_enough_workers_but_uneven_loads_points_at_prefetching() -> None:
    d = diagnose(_fake(PipelineModel(3, 0.27, 0.1, load_cv=0.8, seed=2), batches=60), 2, emulated_step=True)
    assert d.bottleneck == "data loading" and d.workers_needed == 3
    assert "uneven load times" in d.recommendation


def test_worker_gaps_count_only_overhead_not_the_prefetch_limit() -> None:
    # One worker, capacity 1: batch 1 is handed out when batch 0 is received (got), batch 2 when batch 1 is.
    records = [
        BatchRecord(0, 0, load_start=0.0, load_end=1.0, ask=0.0, got=1.0),
        BatchRecord(1, 0, load_start=1.5, load_end=2.0, ask=1.1, got=2.5),  # handed at 1.0: a 0.5 s gap counts
        BatchRecord(2, 0, load_start=2.5, load_end=3.0, ask=2.6, got=3.0),  # handed at 2.5, after 2.0: no gap
    ]
    assert worker_gaps(records, capacity=1) == [0.5]
