"""Interleaved rounds: orders, warm-ups, per-member records, paired efficiency, and the replaying timer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import pytest
import torch

from lfw.data.dataset import LFWDataset
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.ceiling import CeilingSweep, ParallelCapacity, spread_indices
from lfw.measure.loader_pass import PassResult
from lfw.measure.rotation import LoaderMember, PassClock, Rotation, round_orders
from lfw.suite.case_record import pass_record


class Recorder:
    """A member that returns a pass of ``seconds`` and notes when it ran."""

    def __init__(self, name: str, log: list[str], seconds: float = 1.0) -> None:
        self.name, self.log, self.seconds, self.closed = name, log, seconds, False

    def measure(self) -> PassResult:
        self.log.append(self.name)
        return PassResult(images=100, batches=2, wall_s=self.seconds, ttfb_s=0.1)

    def close(self) -> None:
        self.closed = True


def test_each_round_is_a_seeded_permutation() -> None:
    orders = round_orders(["a", "b", "c", "d"], 6, seed=1)
    assert all(sorted(o) == ["a", "b", "c", "d"] for o in orders)
    assert len({tuple(o) for o in orders}) > 1  # the order changes from round to round
    assert orders == round_orders(["a", "b", "c", "d"], 6, seed=1)


def test_rotation_interleaves_warms_up_and_records_positions() -> None:
    log: list[str] = []
    members = {k: Recorder(k, log) for k in ("a", "b", "ceiling-none")}
    rotation = Rotation(members, rounds=3, warmup_rounds=1, seed=0, warm=["ceiling-none"])
    measured = rotation.run()
    # the warm pass, one warm-up round without the member that had it, 3 rounds
    assert log[0] == "ceiling-none" and sorted(log[1:3]) == ["a", "b"] and len(log) == 1 + 2 + 3 * 3
    assert rotation.passes == len(log)
    for round_start in range(3, len(log), 3):
        assert sorted(log[round_start : round_start + 3]) == ["a", "b", "ceiling-none"]
    assert all(len(m.results) == 3 and len(m.positions) == 3 for m in measured.values())
    assert all(member.closed for member in members.values())


def test_warm_up_rounds_call_a_members_own_warm_up_and_keep_nothing_of_it() -> None:
    """A member with a cheaper untimed pass (a remote case at zero latency) gets it in the warm-up rounds only."""

    class Cheap(Recorder):
        def warm_up(self) -> PassResult:
            self.log.append(f"{self.name}:warm-up")
            return PassResult(images=100, batches=2, wall_s=99.0, ttfb_s=0.1)

    log: list[str] = []
    members = {"cheap": Cheap("cheap", log), "plain": Recorder("plain", log)}
    measured = Rotation(members, rounds=2, warmup_rounds=1, seed=0).run()
    assert sorted(log[:2]) == ["cheap:warm-up", "plain"]  # the warm-up round
    assert sorted(log[2:]) == ["cheap", "cheap", "plain", "plain"]  # timed rounds measure
    assert [r.wall_s for r in measured["cheap"].results] == [1.0, 1.0]


def test_a_remote_members_warm_up_starts_its_workers_on_the_wave_alone_at_zero_latency() -> None:
    """The warm-up epoch reads one batch per worker with the proxy at 0 ms; the timed pass after it reads the whole
    epoch from the same persistent workers."""
    from torch.utils.data import TensorDataset

    from lfw.measure.torch_compat import worker_pids
    from lfw.remote.bench import EpochOrder, RemoteCase, RemoteMember

    class Proxy:
        latencies: ClassVar[list[float]] = []

        def shape(self, latency_ms: float) -> None:
            self.latencies.append(latency_ms)

    data = TensorDataset(torch.arange(64))
    loader = LoaderConfig(batch_size=4, num_workers=2, persistent_workers=True).build(data, sampler=EpochOrder(data))
    member = RemoteMember(LoaderPass(loader, memory_interval_s=None), Proxy(), RemoteCase("batch", 100))  # type: ignore[arg-type]
    try:
        warm = member.warm_up()
        assert (warm.batches, warm.images) == (2, 8) and Proxy.latencies == [0]
        started = sorted(worker_pids(loader))
        timed = member.runner.run()
        assert (timed.batches, timed.images) == (16, 64) and sorted(worker_pids(loader)) == started
    finally:
        member.close()


def test_members_are_closed_when_a_pass_fails() -> None:
    class Broken(Recorder):
        def measure(self) -> PassResult:
            raise RuntimeError("worker died")

    log: list[str] = []
    members = {"ok": Recorder("ok", log), "bad": Broken("bad", log)}
    with pytest.raises(RuntimeError):
        Rotation(members, rounds=2).run()
    assert all(m.closed for m in members.values())


def test_loader_and_ceiling_members_measure_real_passes(tiny_tree: Path) -> None:
    dataset = LFWDataset(tiny_tree, transform="uint8")
    runner = LoaderPass(LoaderConfig(batch_size=8, num_workers=1).build(dataset), 2)
    members = {"loader": LoaderMember(runner), "ceiling": CeilingSweep(dataset, spread_indices(16, 8))}
    measured = Rotation(members, rounds=2).run()
    loader = measured["loader"].results
    assert [r.images for r in loader] == [16, 16] and all(r.memory is not None for r in loader)
    assert runner._iterator is None  # finished after each pass: no idle worker while another member runs
    assert all(r.images == 8 and r.images_per_s > 0 for r in measured["ceiling"].results)


def test_spread_indices_cover_the_pass() -> None:
    assert spread_indices(512, 4) == [0, 128, 256, 384]
    assert spread_indices(3, 10) == [0, 1, 2]


def test_efficiency_is_paired_by_round() -> None:
    """Round 2 ran while the machine was twice as fast: its rate and its ceiling both doubled."""
    results = [
        PassResult(images=100, batches=2, wall_s=0.1, ttfb_s=0.01),
        PassResult(images=100, batches=2, wall_s=0.05, ttfb_s=0.01),
    ]
    info = pass_record(results, ceilings=[2000.0, 4000.0], workers=2, usable_cores=2).as_extra_info()
    assert info["efficiency_rounds"] == [0.25, 0.25] and info["efficiency"] == 0.25
    assert info["ceiling_images_per_s"] == 6000.0 and info["per_core_images_per_s_rounds"] == [2000.0, 4000.0]
    with pytest.raises(ValueError, match="paired by round"):
        pass_record(results, ceilings=[2000.0], workers=2, usable_cores=2).as_extra_info()


def test_a_round_in_which_the_machine_gave_one_core_keeps_its_efficiency() -> None:
    """Round 2 ran with one core given (capacity 1.0): a two-worker case at half the rate is the machine's
    loss, not the code's, so its efficiency holds; a serialized case at half the rate with both cores given
    (capacity 2.0) is the code's, and its efficiency halves."""
    results = [
        PassResult(images=100, batches=2, wall_s=0.1, ttfb_s=0.01),
        PassResult(images=100, batches=2, wall_s=0.2, ttfb_s=0.01),
    ]
    lost_core = pass_record(results, ceilings=[2000.0, 2000.0], workers=2, usable_cores=2,
                            capacities=[1.95, 1.0]).as_extra_info()
    assert lost_core["efficiency_rounds"] == [round(1000 / (2000 * 1.95), 4), 0.25]
    assert lost_core["parallel_capacity_rounds"] == [1.95, 1.0]
    serialized = pass_record(results, ceilings=[2000.0, 2000.0], workers=2, usable_cores=2,
                             capacities=[2.0, 2.0]).as_extra_info()
    assert serialized["efficiency_rounds"] == [0.25, 0.125]
    one_worker = pass_record(results, ceilings=[2000.0, 2000.0], workers=1, usable_cores=2,
                             capacities=[0.7, 2.0]).as_extra_info()
    assert one_worker["efficiency_rounds"] == [0.5, 0.25]  # one process always has a core


def test_parallel_capacity_measures_a_workload_no_code_under_test_runs() -> None:
    result = ParallelCapacity([0, 1]).measure()
    assert result.images == 2 and result.wall_s > 0 and result.extra["parallel_capacity"] > 0
    assert "physical_capacity" not in result.extra


def test_pass_clock_replays_recorded_durations() -> None:
    clock = PassClock()
    with clock.replaying([0.25, 0.5]) as next_pass:
        start = clock()
        next_pass()
        first = clock() - start
        start = clock()
        next_pass()
        second = clock() - start
    assert (first, second) == (0.25, 0.5)
    before, now, after = time.perf_counter(), clock(), time.perf_counter()
    assert before <= now <= after  # back to perf_counter outside a replay
