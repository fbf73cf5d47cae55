"""One limit for every ceiling (lfw.suite.case_record.work_limit), what limits a case (lfw.results.limits), and the
data-wait fraction judged in the machine's units (lfw.gate.metrics.data_wait_excess)."""

from __future__ import annotations

from typing import Any

import pytest

from lfw.diagnose.simulator import PipelineModel, pass_data_wait, simulate
from lfw.gate.compare import judge
from lfw.gate.metrics import DATA_WAIT
from lfw.gate.thresholds import Thresholds
from lfw.measure.loader_pass import PassResult
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results.limits import machine_line, what_limits
from lfw.suite.case_record import pass_record, work_limit


def case(group: str = "workers-transform", workers: int = 2, **extra: Any) -> Case:
    params = {"num_workers": workers, "batch_size": 64, **extra.pop("params", {})}
    return Case(f"test_x[w{workers}]", f"b::test_x[w{workers}]", group, params, (1.0,), extra)


def test_the_limit_is_the_rounds_rate_times_the_cores_given_no_more_than_the_workers() -> None:
    per_core = [1000.0, 2000.0, 1000.0]
    assert work_limit(per_core, parallelism=2, usable_cores=2, capacities=[1.9, 2.0, 1.0]) == [1900.0, 4000.0,
                                                                                                1000.0]
    assert work_limit(per_core, parallelism=1, usable_cores=2, capacities=[1.9, 2.0, 0.5]) == per_core
    assert work_limit(per_core, parallelism=8, usable_cores=2, capacities=None) == [2000.0, 4000.0, 2000.0]


def test_efficiency_uses_the_one_limit() -> None:
    results = [PassResult(images=100, batches=2, wall_s=0.1, ttfb_s=0.01)] * 2
    info = pass_record(results, ceilings=[800.0, 800.0], workers=4, usable_cores=2, capacities=[1.5, 2.0])
    assert info.as_extra_info()[K.EFFICIENCY + "_rounds"] == [round(1000 / 1200, 4), round(1000 / 1600, 4)]


@pytest.mark.parametrize(("extra", "kind", "words"), [
    ({"cpu_utilization": 0.97, "parallel_capacity": 1.98}, "machine", "the machine: 1.94 of the 1.98 cores"),
    ({"cpu_utilization": 0.97, "parallel_capacity": 1.0}, "machine", "1.94 of the 1.00 cores"),  # oversold
    ({"cpu_utilization": 0.70, "parallel_capacity": 1.98, "main_cpu_share": 0.7},  # 0.98 cores of the main process
     "main process", "the main process's receive: it kept 0.98 cores busy"),
    ({"cpu_utilization": 0.60, "parallel_capacity": 1.98, "main_cpu_share": 0.1}, "idle cores", "idle cores: 1.20"),
])
def test_what_limits_a_case_is_read_off_its_cores_busy_and_given(extra: dict[str, float], kind: str,
                                                                 words: str) -> None:
    limiter = what_limits(case(usable_cores=2, **extra))
    assert limiter.kind == kind and words in limiter.text


def test_one_loader_busy_with_cores_to_spare_is_its_decoder() -> None:
    limiter = what_limits(case(workers=1, usable_cores=2, cpu_utilization=0.5, parallel_capacity=1.98,
                               cpu_ms_per_image=1.3, per_core_images_per_s=1000.0))
    assert limiter.kind == "decoder" and limiter.short() == "decoder (1.00/1.98)"
    assert "its 1 loading process busy" in limiter.text and "+30% CPU per image over the same work alone" in \
        limiter.text


def test_the_machine_line_names_the_quota_and_the_capacity_of_every_group_once() -> None:
    cases = (case(parallel_capacity_rounds=[1.0, 0.98]), case(workers=4, parallel_capacity_rounds=[1.0, 0.98]),
             case(group="decoders", parallel_capacity_rounds=[0.99]))
    machine = {"usable_cores": 1, "logical_cpus": 2, "capacity_probe": "threads released together",
               "cpu_limit": "1 usable core: a CPU quota of 1.0 on 2 logical CPUs"}
    run = Run(None, machine, cases)  # type: ignore[arg-type]
    assert machine_line(run) == ("1 usable core: a CPU quota of 1.0 on 2 logical CPUs; parallel capacity 0.99 "
                                 "(rounds 0.98-1.00) at N = 1")
    older = Run(None, {k: v for k, v in machine.items() if k != "capacity_probe"}, cases)  # type: ignore[arg-type]
    assert str(machine_line(older)).endswith("at N = 1 (by the earlier probe, which timed its own forks: it reads low)")
    plain = Run(None, {"usable_cores": 2, "logical_cpus": 2, "threads_per_core": 1}, ())  # type: ignore[arg-type]
    assert machine_line(plain) == "2 usable cores of 2 logical CPUs, 1 thread per core"


def data_wait_case(per_core: float, step_ms: float, handover_s: float = 0.0, rounds: int = 3) -> Case:
    """A data-wait case whose measured fraction is what the simulator gives for its own rate, plus a serial
    hand-over of ``handover_s`` per batch in the main process (a regression the prediction does not know)."""
    load = 64 / per_core
    measured = simulate(PipelineModel(workers=2, load_s=load, step_s=step_ms / 1e3, startup_s=0.05,
                                      transfer_s=handover_s), max_batches=8).data_wait_fraction
    extra = {K.DATA_WAIT_FRACTION + "_rounds": [measured] * rounds, K.PER_CORE_IMAGES_PER_S + "_rounds":
             [per_core] * rounds, K.TTFB_S + "_rounds": [0.05 + load] * rounds,
             K.PARALLEL_CAPACITY + "_rounds": [1.98] * rounds, K.BATCHES: 8, K.USABLE_CORES: 2}
    return case("data-wait", params={"step_ms": step_ms}, **extra)


@pytest.mark.parametrize("step_ms", [20.0, 50.0])
def test_a_machine_at_half_the_speed_is_not_a_data_wait_regression(step_ms: float) -> None:
    base, slow = data_wait_case(1540.0, step_ms), data_wait_case(770.0, step_ms)
    raw = [slow.rounds(K.DATA_WAIT_FRACTION)[0] - base.rounds(K.DATA_WAIT_FRACTION)[0]]
    verdict = judge("data-wait", DATA_WAIT, DATA_WAIT.rounds_of(base), DATA_WAIT.rounds_of(slow), Thresholds())
    assert not verdict.regressed and abs(verdict.change) < 0.01
    assert raw[0] > 0.05  # the raw fraction did move with the machine


def test_a_slower_hand_over_is_a_data_wait_regression_on_either_machine() -> None:
    for per_core in (1540.0, 770.0):
        base, slowed = data_wait_case(per_core, 50.0), data_wait_case(per_core, 50.0, handover_s=0.03)
        verdict = judge("data-wait", DATA_WAIT, DATA_WAIT.rounds_of(base), DATA_WAIT.rounds_of(slowed),
                        Thresholds())
        assert verdict.regressed, (per_core, verdict.change)


def test_the_prediction_waits_more_when_the_machine_gives_fewer_cores() -> None:
    given = {"per_core": 1000.0, "workers": 2, "batch": 64, "step_s": 0.02, "batches": 8, "ttfb_s": 0.1}
    assert pass_data_wait(cores=1.0, **given) > pass_data_wait(cores=2.0, **given)
    assert DATA_WAIT.rounds_of(case(params={"step_ms": 20.0})) == []  # no rates recorded: nothing to judge


def test_the_accelerators_headline_says_what_its_own_decoders_limit_would_feed() -> None:
    from lfw.diagnose.feeds import Feed, FeedRow, FeedsTable
    from lfw.report.accelerators import headline

    row = FeedRow("simplejpeg-w2", Feed(3000.0, 2), (2,), (2,), (2,), True, limit=8000.0)
    text = headline(FeedsTable((50.0,), 0.9, (row,)))
    assert text.endswith("at its own decoder's limit (8,000 images/s on this machine) the rate alone would feed 6")


def test_a_run_of_the_earlier_probe_counts_its_usable_cores_as_given() -> None:
    busy_twelve = case(workers=16, usable_cores=16, cpu_utilization=0.785, parallel_capacity=5.65)
    assert what_limits(busy_twelve).kind == "machine"  # 12.56 busy of 5.65 "given": the earlier probe read low
    older = what_limits(busy_twelve, trusted=False)
    assert older.kind == "idle cores" and older.text.startswith("idle cores: 12.56 of the 16 usable cores busy")
