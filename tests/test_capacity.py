"""The parallel capacity probe: threads started before the clock and released together, no fork, the physical
cores measured apart where a core runs two threads, and a CPU quota's cap. The workload is replaced by sleeps
(which overlap) or a lock (which serializes), so what is checked is the probe's logic, not this machine's mood."""

from __future__ import annotations

import os
import threading
import time

import pytest

from lfw.measure import ceiling
from lfw.measure.ceiling import ParallelCapacity, capacity, timed_together
from lfw.measure.cpus import Quota
from lfw.results import keys as K

SLEEP_S = 0.1  # long beside a thread's wake-up, even on a loaded machine


@pytest.fixture
def sleeping_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each thread's work is a sleep: N threads given N cores finish together."""
    monkeypatch.setattr(ceiling, "_work", lambda iterations: time.sleep(SLEEP_S))
    monkeypatch.setattr(ceiling, "work_iterations", lambda seconds=ceiling.WORK_S: 1)


def test_threads_released_together_read_n_when_their_work_overlaps(sleeping_work: None) -> None:
    one, many = timed_together(1, 1), timed_together(4, 1)
    assert capacity(4, one, many) == pytest.approx(4.0, rel=0.3)


def test_a_workload_that_serializes_reads_one(monkeypatch: pytest.MonkeyPatch) -> None:
    lock = threading.Lock()

    def serialized(iterations: int) -> None:
        with lock:
            time.sleep(SLEEP_S)

    monkeypatch.setattr(ceiling, "_work", serialized)
    one, many = timed_together(1, 1), timed_together(3, 1)
    assert capacity(3, one, many) == pytest.approx(1.0, rel=0.3)


def test_the_probe_forks_nothing_and_leaves_no_thread(sleeping_work: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("the capacity probe must not fork")

    monkeypatch.setattr(os, "fork", no_fork)
    before = threading.active_count()
    result = ParallelCapacity(3).measure()
    assert result.extra[K.PARALLEL_CAPACITY] == pytest.approx(3.0, rel=0.3)
    assert threading.active_count() == before


def test_physical_cores_are_measured_apart_where_a_core_runs_two_threads(sleeping_work: None) -> None:
    result = ParallelCapacity(4, physical=2).measure()
    assert result.extra[K.PHYSICAL_CAPACITY] == pytest.approx(2.0, rel=0.3)
    assert K.PHYSICAL_CAPACITY not in ParallelCapacity(4, physical=4).measure().extra


def test_a_quota_caps_the_capacity_and_stretches_the_work_over_its_periods(sleeping_work: None) -> None:
    quota = Quota(1.5, 0.1, "cgroup v2 /test")
    probe = ParallelCapacity(2, quota=quota)
    assert probe.work_s == pytest.approx(ceiling.QUOTA_PERIODS * 0.1 * 1.5 / 2)
    assert probe.measure().extra[K.PARALLEL_CAPACITY] <= 1.5
    assert ParallelCapacity(2, quota=Quota(2.0, 0.1, "v1")).work_s == ceiling.WORK_S  # a whole-core quota: no wait


def test_the_workload_is_calibrated_once_to_about_its_seconds() -> None:
    ceiling.work_iterations.cache_clear()
    iterations = ceiling.work_iterations(0.004)
    assert iterations >= 1 and ceiling.work_iterations(0.004) == iterations
