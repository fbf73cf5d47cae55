"""The parallel capacity probe: threads pinned one to a CPU, started before the clock and released together, each
thread's rate in one window summed, no fork, a starved thread counted for what it did, the physical cores measured apart
where a core runs two threads, and a CPU quota's cap. The workload is replaced by sleeps (which overlap) or a lock
(which serializes), so what is checked is the probe's logic, not this machine's mood."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from lfw.measure import ceiling
from lfw.measure.ceiling import ParallelCapacity, capacity, rates_together
from lfw.measure.cpus import CpuFacts, Quota
from lfw.results import keys as K

CALL_S = 0.02  # one call of the stand-in workload: long beside a thread's wake-up, even on a loaded machine


@pytest.fixture
def sleeping_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call is a sleep: N threads given N cores each keep one thread's rate."""
    monkeypatch.setattr(ceiling, "_work", lambda iterations: time.sleep(CALL_S))
    monkeypatch.setattr(ceiling, "work_iterations", lambda seconds: 1)


def test_threads_released_together_keep_one_threads_rate_each_when_their_work_overlaps(sleeping_work: None) -> None:
    one = rates_together([None], 1, 0.2)[0]
    assert capacity([one] * 4, rates_together([None] * 4, 1, 0.2)) == pytest.approx(4.0, rel=0.3)


def test_a_thread_that_wakes_late_is_not_a_core_the_machine_withheld(sleeping_work: None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The window opens once every thread has begun: a released thread its idle CPU wakes 5 calls late (a halted
    vCPU) still reads as a core; timed from the barrier's release it would read 1.5."""
    class LateWake(threading.Barrier):
        def wait(self, timeout: float | None = None) -> int:
            index = super().wait(timeout)
            if threading.current_thread().name.endswith("-1"):
                time.sleep(5 * CALL_S)
            return index

    monkeypatch.setattr(ceiling.threading, "Barrier", LateWake)
    one = rates_together([None], 1, 0.2)[0]
    assert capacity([one] * 2, rates_together([None, None], 1, 0.2)) == pytest.approx(2.0, rel=0.15)


def test_the_capacity_is_never_more_than_its_threads() -> None:
    """One thread alone slowed by another process on its CPU makes the ratio read above N: it is capped at N."""
    assert capacity([0.5, 0.5], [1.0, 1.0]) == 2.0 and capacity([1.0, 1.0], [0.9, 0.4]) == pytest.approx(1.3)
    assert capacity([0.0, 0.0], [0.3, 0.3]) == 2.0


def test_cpus_of_different_speeds_each_count_against_their_own() -> None:
    """Two vCPUs at 900 and 1,550 calls/s (seen on one 2-vCPU machine), each keeping its own rate together: two
    cores given, where the first CPU's rate alone for both would read 2.72."""
    assert capacity([900.0, 1550.0], [900.0, 1550.0]) == 2.0
    assert capacity([900.0, 1550.0], [900.0, 775.0]) == pytest.approx(1.5)  # the second CPU gave half


def test_a_workload_that_serializes_reads_one(monkeypatch: pytest.MonkeyPatch) -> None:
    lock = threading.Lock()

    def serialized(iterations: int) -> None:
        with lock:
            time.sleep(CALL_S / 2)

    monkeypatch.setattr(ceiling, "_work", serialized)
    one = rates_together([None], 1, 0.2)[0]
    assert capacity([one] * 3, rates_together([None] * 3, 1, 0.2)) == pytest.approx(1.0, rel=0.3)


def test_a_thread_that_gets_little_cpu_adds_its_little(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_on_its_cpu(iterations: int) -> None:  # thread "1" is starved: a call takes it ten times as long
        time.sleep(CALL_S * (10 if threading.current_thread().name.endswith("-1") else 1))

    monkeypatch.setattr(ceiling, "_work", slow_on_its_cpu)
    started = time.perf_counter()
    rates = rates_together([None, None], 1, 2 * CALL_S)
    assert time.perf_counter() - started < 0.5  # the window and one starved call
    one = rates_together([None], 1, 2 * CALL_S)[0]
    assert capacity([one] * 2, rates) == pytest.approx(1.1, rel=0.3)


def test_each_thread_runs_pinned_to_its_cpu_and_the_probe_forks_nothing(sleeping_work: None,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pinned: list[tuple[str, set[int]]] = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: pinned.append((threading.current_thread().name,
                                                                                  set(cpus))))
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("the capacity probe must not fork"))
    before = threading.active_count()
    result = ParallelCapacity([0, 1, 2]).measure()
    assert result.extra[K.PARALLEL_CAPACITY] == pytest.approx(3.0, rel=0.3)
    # each CPU alone before and after, and the three together
    assert Counter((name, min(cpus)) for name, cpus in pinned) == {
        ("lfw-capacity-0", 0): 3, ("lfw-capacity-0", 1): 2, ("lfw-capacity-0", 2): 2, ("lfw-capacity-1", 1): 1,
        ("lfw-capacity-2", 2): 1}
    assert threading.active_count() == before


def test_physical_cores_are_measured_apart_where_a_core_runs_two_threads(sleeping_work: None,
                                                                         tmp_path: Path) -> None:
    for cpu in range(4):
        target = tmp_path / f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
        target.parent.mkdir(parents=True)
        target.write_text(f"{cpu % 2},{cpu % 2 + 2}\n")
    facts = CpuFacts.read(tmp_path, affinity=frozenset(range(4)), logical_cpus=4)
    probe = ParallelCapacity.of(facts, 4)
    assert probe.cpus == [0, 1, 2, 3] and probe.physical == [0, 1]  # one thread per core first
    assert ParallelCapacity.of(facts, 2).cpus == [0, 1]
    result = probe.measure()
    assert result.extra[K.PHYSICAL_CAPACITY] == pytest.approx(2.0, rel=0.3)
    assert K.PHYSICAL_CAPACITY not in ParallelCapacity([0, 1]).measure().extra


def test_a_quota_caps_the_capacity_and_stretches_the_window_over_its_periods(sleeping_work: None) -> None:
    probe = ParallelCapacity([0, 1], quota=Quota(1.5, 0.1, "cgroup v2 /test"))
    assert probe.measure().extra[K.PARALLEL_CAPACITY] <= 1.5
    assert probe.window_s == pytest.approx(ceiling.QUOTA_PERIODS * 0.1)
    assert ParallelCapacity([0, 1], quota=Quota(2.0, 0.1, "v1")).window_s == ceiling.WORK_S  # a whole-core quota


def test_the_window_grows_with_the_rounds_and_the_probe_costs_its_share_of_them(sleeping_work: None) -> None:
    probe = ParallelCapacity([None, None])
    assert probe.measure().wall_s > 0 and probe.window_s == ceiling.WORK_S  # no round seen yet: the shortest
    time.sleep(2.0)  # a round of the rotation's other members
    result = probe.measure()
    assert probe.window_s == pytest.approx(ceiling.COST_SHARE * 2.0 / 2, rel=0.1)
    # the windows (twice the N threads': each CPU's two quarters alone), and a call straddling each window's end
    assert result.wall_s < 2 * probe.window_s + 5 * CALL_S + 0.05
    time.sleep(0.5)
    probe.measure()
    assert probe.window_s == ceiling.WORK_S  # a short round: back to the shortest window


def test_the_workload_is_calibrated_once_to_about_its_seconds() -> None:
    ceiling.work_iterations.cache_clear()
    iterations = ceiling.work_iterations(0.002)
    assert iterations >= 1 and ceiling.work_iterations(0.002) == iterations
