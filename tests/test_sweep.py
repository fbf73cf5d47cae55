"""The worker count for training (lfw.diagnose.predict): the loop's best count beside the loader's knee, the
counts' parsing, and ``python -m lfw.diagnose --sweep-workers`` on the 40-image tree of ``tests/conftest.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from lfw.cli.args import parse_counts
from lfw.diagnose.__main__ import main
from lfw.diagnose.predict import SweepPoint, WorkerSweep, steady_steps_per_s
from lfw.diagnose.training import Measurement
from lfw.errors import LFWError
from lfw.measure import LoaderConfig, PassResult


def _measured(step_ends: list[float], batch: int = 8) -> Measurement:
    """A pass whose steps end at ``step_ends`` (seconds), each step taking half of its interval."""
    events = [(0.0, end - 0.001, end - 0.001, end) for end in step_ends]
    result = PassResult(images=batch * len(step_ends), batches=len(step_ends), wall_s=step_ends[-1], ttfb_s=0.0,
                        waits_s=[0.0] * len(step_ends), steps_s=[0.001] * len(step_ends), events=events)
    return Measurement(result, [], LoaderConfig(batch_size=batch), "none", "sleep")


def _point(workers: int, steps_per_s: float, loader_batches_per_s: float) -> SweepPoint:
    loop = _measured([1.0 + i / steps_per_s for i in range(11)])
    loader = _measured([0.5 + i / loader_batches_per_s for i in range(11)])
    return SweepPoint(workers, loop, loader)


def test_steady_rates_leave_the_first_step_out() -> None:
    m = _measured([5.0, 5.5, 6.0, 6.5])  # a slow start, then a step every 0.5 s
    assert steady_steps_per_s(m) == pytest.approx(2.0)
    assert steady_steps_per_s(_measured([1.0])) == 0.0
    assert _point(2, 10.0, 40.0).loader_images_per_s == pytest.approx(40.0 * 8)


def test_the_loop_s_best_count_can_fall_below_the_loader_s_knee() -> None:
    # a CPU step: the loader scales to 4 workers, but past 1 worker the workers slow the step more than they help
    result = WorkerSweep((_point(0, 8.0, 10.0), _point(1, 12.0, 20.0), _point(2, 11.0, 38.0),
                          _point(4, 9.0, 40.0)))
    assert result.for_training.workers == 1
    assert result.loader_knee.workers == 2  # 38 is within 5% of 40
    text = result.lines()[-1]
    assert "for training: 1 worker" in text and "knee: 2 workers" in text and "they differ" in text


def test_when_both_rules_agree_the_line_says_no_more() -> None:
    result = WorkerSweep((_point(0, 5.0, 10.0), _point(2, 12.0, 40.0), _point(4, 12.0, 41.0)))
    assert result.for_training.workers == 2  # a tie on steps/s goes to fewer workers
    close = WorkerSweep((_point(1, 10.0, 20.0), _point(2, 10.15, 38.0), _point(4, 9.0, 40.0)))
    assert close.for_training.workers == 1  # 1.5% apart: one pass each cannot separate them
    assert result.loader_knee.workers == 2 and "differ" not in result.lines()[-1]


def test_a_sweep_needs_two_counts_in_order() -> None:
    with pytest.raises(LFWError, match="2 or more distinct counts"):
        WorkerSweep((_point(2, 1.0, 1.0),))
    with pytest.raises(LFWError, match="increasing order"):
        WorkerSweep((_point(2, 1.0, 1.0), _point(1, 1.0, 1.0)))


@pytest.mark.parametrize(("text", "counts"), [("0,1,2,4", (0, 1, 2, 4)), ("4,2,2", (2, 4))])
def test_counts_parse_sorted_and_unique(text: str, counts: tuple[int, ...]) -> None:
    assert parse_counts(text) == counts


@pytest.mark.parametrize("text", ["2", "a,b", "1,-1", "2,2"])
def test_bad_counts_are_one_line(text: str) -> None:
    with pytest.raises(LFWError, match="--sweep-workers"):
        parse_counts(text)


@pytest.mark.parametrize("argv", [["--sweep-workers", "0,x"], ["--sweep-workers", "0,1", "--workers", "2"],
                                  ["--sweep-workers", "0,1", "--simulate", "--load-ms", "5"]],
                         ids=["counts", "with-workers", "with-simulate"])
def test_bad_sweep_flags_exit_2_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err


@pytest.mark.needs_shm(64)
def test_diagnose_sweeps_worker_counts_on_a_tiny_tree(tiny_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--path", str(tiny_tree), "--sweep-workers", "0,1", "--step-ms", "2", "--batch-size", "8",
               "--batches", "4", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["0", "1"] and all(float(row[1]) > 0 for row in rows)
    assert "for training:" in out and "knee:" in out


def test_the_knee_rule_is_the_first_value_within_tolerance_of_the_largest() -> None:
    from lfw.stats.variation import first_within

    assert first_within([880.0, 824.0, 1448.0, 1593.0]) == 3  # 1,448 is 9% below the best
    assert first_within([880.0, 1540.0, 1593.0]) == 1  # 3% below: as good as the best
    assert first_within([10.0, 9.9, 10.1], tolerance=0.02) == 0
