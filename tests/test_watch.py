"""``watch(loader)``: a user's loop wrapped in one line reads as data-bound or compute-bound, yields the loader's
own batches, puts the loader back, attributes CUDA waits with events (fake ones here), and saves a record.

Tiny in-memory datasets that sleep per item stand in for slow loading; the step is a sleep. Wall-clock figures
are never asserted beyond wide margins (a data-bound loop reads above one half, a compute-bound one below).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset

from lfw.diagnose import Watch, watch
from lfw.diagnose import watcher as watcher_module
from lfw.diagnose.watch_summary import share_interval
from lfw.diagnose.watcher import EVENTS, resolve_mode
from lfw.errors import LFWError
from lfw.results import load_run

CONTRACT = ("data_bound_share", "steps", "wait_ms_p50", "step_ms_p50")


class Sleepy(Dataset):
    """``n`` items of a 3-vector and a label, each taking ``item_s`` to load."""

    def __init__(self, n: int = 32, item_s: float = 0.0) -> None:
        self.n, self.item_s = n, item_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        if self.item_s:
            time.sleep(self.item_s)
        return torch.full((3,), float(i)), i


def loop(w: Watch[Any], step_s: float) -> int:
    n = 0
    for _batch in w:
        time.sleep(step_s)
        n += 1
    return n


@pytest.mark.parametrize("workers", [0, 1], ids=["workers0", "workers1"])
def test_a_slow_dataset_and_a_free_step_read_as_data_bound(workers: int) -> None:
    w = watch(DataLoader(Sleepy(32, 0.003), batch_size=4, num_workers=workers), quiet=True, run=None)
    assert loop(w, 0.0) == 8
    s = w.summary()
    assert s["data_bound_share"] > 0.5 and s["steps"] == 8
    assert s["load_ms_per_batch"] is not None and s["load_ms_per_batch"] > 0  # instrumented
    assert all(k in s for k in CONTRACT)


@pytest.mark.parametrize("workers", [0, 1], ids=["workers0", "workers1"])
def test_a_fast_dataset_and_a_slow_step_read_as_compute_bound(workers: int) -> None:
    w = watch(DataLoader(Sleepy(48), batch_size=4, num_workers=workers), quiet=True, run=None)
    loop(w, 0.02)
    s = w.summary()
    assert s["steps"] == 12 and s["data_bound_share"] < 0.5
    assert s["advice"][0].startswith("nothing to gain") or workers == 1  # a worker's start-up may weigh in


def test_batches_are_the_loaders_own_and_the_loader_is_put_back() -> None:
    def as_dict(items: list[tuple[torch.Tensor, int]]) -> dict[str, Any]:
        return {"x": torch.stack([x for x, _ in items]), "y": [y for _, y in items]}

    dataset = Sleepy(10)
    loader = DataLoader(dataset, batch_size=3, num_workers=1, collate_fn=as_dict, pin_memory=False)
    plain = list(loader)
    watched = list(watch(loader, quiet=True, run=None))
    assert len(watched) == len(plain) == 4
    for a, b in zip(plain, watched, strict=True):
        assert type(b) is dict and b["y"] == a["y"] and torch.equal(a["x"], b["x"])
    assert loader.collate_fn is as_dict and "__getitems__" not in vars(dataset)


def test_break_ends_the_step_and_prints_the_verdict_unless_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    w = watch(DataLoader(Sleepy(40), batch_size=4), run=None)
    for i, _ in enumerate(w):
        if i == 2:
            break
    err = capsys.readouterr().err
    assert err.startswith("watch: data-bound ") and err.count("\n") == 1 and "host clock" in err
    assert w.summary()["steps"] == 3
    quiet = watch(DataLoader(Sleepy(8), batch_size=4), quiet=True, run=None)
    loop(quiet, 0.0)
    assert capsys.readouterr().err == ""


def test_epochs_accumulate() -> None:
    w = watch(DataLoader(Sleepy(8), batch_size=4), quiet=True, run=None)
    loop(w, 0.0)
    loop(w, 0.0)
    s = w.summary()
    assert s["steps"] == 4 and s["epochs"] == 2


@pytest.mark.parametrize(("loader", "why"), [
    (DataLoader(Sleepy(8), batch_size=4, num_workers=1, persistent_workers=True), "persistent workers"),
    (DataLoader(Sleepy(8), batch_size=None), "no automatic batching"),
], ids=["persistent", "unbatched"])
def test_what_cannot_be_instrumented_is_said(loader: DataLoader, why: str) -> None:
    w = watch(loader, quiet=True, run=None)
    loop(w, 0.0)
    s = w.summary()
    assert why in s["instrumented"] and s["load_ms_per_batch"] is None and s["steps"] == 8 // (loader.batch_size or 1)


def test_an_iterable_dataset_is_watched_without_load_times() -> None:
    class Stream(IterableDataset):
        def __iter__(self) -> Any:
            return iter(range(12))

    w = watch(DataLoader(Stream(), batch_size=4), quiet=True, run=None)
    loop(w, 0.0)
    assert w.summary()["instrumented"] == "an iterable dataset" and w.summary()["steps"] == 3


class _FakeGPU:
    """A stream that runs queued work in order: an event completes when the work before it is done."""

    def __init__(self) -> None:
        self.busy_until = 0.0

    def queue(self, seconds: float) -> None:
        self.busy_until = max(self.busy_until, time.perf_counter()) + seconds

    def event(self) -> Any:
        gpu = self

        class Event:
            t = math.nan

            def record(self) -> None:
                self.t = max(time.perf_counter(), gpu.busy_until)

            def query(self) -> bool:
                return True

            def elapsed_time(self, other: Any) -> float:
                return (other.t - self.t) * 1e3

        return Event()


@pytest.mark.parametrize(("item_s", "gpu_s", "data_bound"), [(0.004, 0.0, True), (0.001, 0.03, False)],
                         ids=["gpu-starved", "gpu-busy"])
def test_cuda_events_attribute_the_wait_on_the_gpus_clock(monkeypatch: pytest.MonkeyPatch, item_s: float,
                                                          gpu_s: float, data_bound: bool) -> None:
    """The step only queues GPU work and returns at once, so the host clock always reads data-bound; the events
    see whether the GPU idled (a starved GPU) or had work queued (a busy one)."""
    gpu = _FakeGPU()
    monkeypatch.setattr(watcher_module, "resolve_mode", lambda _cuda: EVENTS)
    w = watch(DataLoader(Sleepy(40, item_s), batch_size=4), quiet=True, run=None)
    w.make_event = gpu.event
    for _ in w:
        gpu.queue(gpu_s)
    s = w.summary()
    assert s["clock"] == EVENTS and s["steps"] == 10
    assert (s["data_bound_share"] > 0.5) is data_bound


def test_sync_without_a_gpu_is_a_one_line_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(LFWError, match="needs a CUDA device"):
        resolve_mode("sync")
    with pytest.raises(LFWError, match="choose one of"):
        resolve_mode("sometimes")


def test_interval_is_batch_means_and_needs_fifteen_steps() -> None:
    low, high, blocks = share_interval([1.0] * 14, [2.0] * 14)
    assert math.isnan(low) and blocks == 0
    low, high, blocks = share_interval([1.0] * 100, [2.0] * 100)
    assert blocks == 20 and low == pytest.approx(0.5) and high == pytest.approx(0.5)
    waits = [0.0, 1.0] * 50
    low, high, blocks = share_interval(waits, [1.0] * 100)
    assert low <= 0.5 <= high and blocks == 20


def test_record_saves_a_run_the_suite_reads_and_the_chart_is_drawn(tmp_path: Path) -> None:
    w = watch(DataLoader(Sleepy(64, 0.001), batch_size=4, num_workers=1), quiet=True, run=None)
    loop(w, 0.002)
    path = w.save(tmp_path / "watch.json", name="tiny")
    case = load_run(path).group("watch")[0]
    assert case.label == "tiny" and len(case.seconds) == 16
    assert case.number("data_bound_share") == pytest.approx(w.summary()["data_bound_share"], abs=1e-4)
    png = w.chart(tmp_path / "timeline.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
