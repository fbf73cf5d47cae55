"""The measurement primitive: what one pass counts, times and samples, and how it fails."""

from __future__ import annotations

import multiprocessing
import threading
import time
import warnings
from pathlib import Path

import psutil
import pytest
import torch
from torch.utils.data import Dataset

from lfw.data.dataset import LFWDataset
from lfw.errors import LFWError
from lfw.measure import LoaderConfig, LoaderPass, measure_pass, memory
from lfw.measure.loader_pass import sleep_step
from lfw.results import keys as K
from lfw.stats.variation import coefficient_of_variation
from lfw.suite.case_record import pass_record, step_record


def test_pass_counts_exactly_k_batches(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4).build(LFWDataset(tiny_tree))
    result = measure_pass(loader, 3, memory_interval_s=None)
    assert (result.batches, result.images) == (3, 12)
    assert len(result.waits_s) == 2
    assert 0 < result.ttfb_s <= result.wall_s
    assert result.images_per_s == pytest.approx(12 / result.wall_s)


def test_pass_never_wraps_into_a_second_epoch(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=16).build(LFWDataset(tiny_tree))
    result = measure_pass(loader, 100, memory_interval_s=None)
    assert (result.batches, result.images) == (3, 40)


class _Encoded(Dataset):
    """Items of differing length (encoded images), batched as a list by :func:`_keep_list`."""

    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return torch.zeros(100 + i, dtype=torch.uint8), i


def _keep_list(items: list[tuple[torch.Tensor, int]]) -> list[object]:
    return [[x for x, _ in items], torch.tensor([y for _, y in items])]


def test_a_batch_of_per_image_tensors_is_counted_by_its_length() -> None:
    """A collate that keeps differently sized items as a list (the GPU decode's bytes): each batch's images are
    the list's length, so the pass has a rate and a record (counted as 0, the record had no rounds to summarize)."""
    result = measure_pass(LoaderConfig(batch_size=4).build(_Encoded(), _keep_list), memory_interval_s=None)
    assert (result.images, result.batch_images) == (10, [4, 4, 2])
    assert pass_record([result], usable_cores=1).get(K.CPU_MS_PER_IMAGE) > 0


def test_a_batch_whose_images_cannot_be_counted_is_a_one_line_error() -> None:
    loader = LoaderConfig(batch_size=4).build(_Encoded(), lambda items: [{"images": items}])
    with pytest.raises(LFWError, match="cannot count the images of a batch whose first field is dict"):
        measure_pass(loader, memory_interval_s=None)


def test_memory_of_the_worker_tree_is_recorded(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4, num_workers=2).build(LFWDataset(tiny_tree))
    with LoaderPass(loader, 4, memory_interval_s=0.05, mark_start=True) as runner:
        runner.setup()
        runner.run()
    memory = runner.results[0].memory
    assert memory is not None and len(memory.worker_pids) == 2
    info = memory.as_extra_info()
    assert info["pss_start_mib"] > info["pss_before_mib"]  # the workers joined the tree
    assert info["rss_end_mib"] >= info["pss_end_mib"] >= info["uss_end_mib"] > 0
    assert info["worker_uss_end_mib"] > 0



def test_sampler_cpu_is_counted_while_the_pass_runs(tiny_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step holds the first batch until the sampling thread has taken a snapshot, so one falls inside the pass
    however loaded the machine is; the interval caps how many can (a wait of a whole interval before each)."""
    sampled, snapshot = threading.Event(), memory.tree_snapshot

    def sampler_snapshot(root: psutil.Process, t0: float = 0.0) -> memory.TreeSnapshot:
        snap = snapshot(root, t0)
        if threading.current_thread().name == "lfw-memory-sampler":
            sampled.set()
        return snap

    def step(batch: object) -> None:
        assert sampled.wait(60), "the sampler took no snapshot in 60 s"

    monkeypatch.setattr(memory, "tree_snapshot", sampler_snapshot)
    loader = LoaderConfig(batch_size=4).build(LFWDataset(tiny_tree))
    result = measure_pass(loader, 4, memory_interval_s=0.02, step=step)
    assert result.memory is not None and 1 <= len(result.memory.samples) <= result.memory.end.t / 0.02 + 1
    assert result.memory.sampler_cpu_s > 0
    assert result.memory.end.t >= result.wall_s  # the final snapshot, after the pass ends
    assert all(s.t < result.memory.end.t for s in result.memory.samples)  # the others, while it ran
    assert result.memory.peak("pss") == max(s.pss for s in result.memory.samples)


def test_without_a_start_mark_growth_counts_from_before_the_pass(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4, num_workers=1).build(LFWDataset(tiny_tree))
    with LoaderPass(loader, 2, memory_interval_s=60.0) as runner:
        runner.setup()
        runner.run()
    memory = runner.results[0].memory
    assert memory is not None and memory.start is memory.before and not memory.samples
    info = memory.as_extra_info()
    assert info["pss_growth_mib"] > 0 and info["worker_uss_end_mib"] > 0  # the worker's own pages
    assert "worker_uss_growth_mib" not in info  # no worker existed before the pass
    assert memory.peak("pss") is None and "pss_peak_mib" not in info  # no sample fell inside the pass


def test_persistent_workers_survive_between_passes(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4, num_workers=1, persistent_workers=True).build(LFWDataset(tiny_tree))
    with LoaderPass(loader, 2, memory_interval_s=0.05) as runner:
        for _ in range(3):  # each pass stops mid-epoch; setup() finishes the epoch untimed
            runner.setup()
            runner.run()
    pids = [r.memory.worker_pids for r in runner.results if r.memory]
    assert len(pids) == 3 and pids[0] == pids[1] == pids[2]


@pytest.mark.parametrize("persistent", [True, False])
def test_each_pass_records_its_worker_pids(tiny_tree: Path, persistent: bool) -> None:
    """The ids of the workers that served each pass, read from its iterator: the same ones every epoch only where
    the workers persist."""
    loader = LoaderConfig(batch_size=4, num_workers=2, persistent_workers=persistent).build(LFWDataset(tiny_tree))
    with LoaderPass(loader, memory_interval_s=None) as runner:
        for _ in range(2):
            runner.setup()
            runner.run()
        runner.close(stop_workers=True)
    pids = pass_record(runner.results, workers=2).as_extra_info()[K.WORKER_PIDS]
    assert len(pids) == 2 and all(len(p) == 2 for p in pids)
    assert (pids[0] == pids[1]) is persistent and (set(pids[0]) & set(pids[1]) == set()) is not persistent


def test_step_callback_is_timed_and_data_wait_measured(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4).build(LFWDataset(tiny_tree))
    result = measure_pass(loader, 3, memory_interval_s=None, step=lambda batch: time.sleep(0.02))
    assert len(result.steps_s) == 3 and min(result.steps_s) >= 0.02
    assert len(result.events) == 3
    assert 0 < result.data_wait_fraction < 1


def test_the_step_time_per_batch_is_recorded(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4).build(LFWDataset(tiny_tree))
    result = measure_pass(loader, 3, memory_interval_s=None, step=sleep_step(0.02))
    info = step_record([result, measure_pass(loader, 3, memory_interval_s=None, step=sleep_step(0.0))])
    assert info[K.rounds(K.STEP_MS_PER_BATCH)][0] >= 20.0 > info[K.rounds(K.STEP_MS_PER_BATCH)][1]
    assert step_record([measure_pass(loader, 2, memory_interval_s=None)]) == {}  # no step, no step time


@pytest.mark.parametrize(("workers", "start_method", "prefetch"), [(2, "fork", 3), (1, "spawn", 1)])
def test_the_pass_reads_back_what_the_loader_did_with_its_knobs(tiny_tree: Path, workers: int, start_method: str,
                                                                 prefetch: int) -> None:
    """Worker processes, how they were started and the batches asked for come from the live iterator, so a loader
    that ignored a knob records what it did, not what it was asked."""
    config = LoaderConfig(batch_size=4, num_workers=workers, prefetch_factor=prefetch, start_method=start_method)
    result = measure_pass(config.build(LFWDataset(tiny_tree)), 3, memory_interval_s=None)
    assert result.workers_seen == workers and result.worker_start_method == start_method
    assert result.prefetch_factor_seen == prefetch and result.prefetched_batches == prefetch * workers
    info = pass_record([result], workers=workers).as_extra_info()
    assert (info[K.WORKERS_SEEN], info[K.WORKER_START_METHOD]) == (workers, start_method)
    assert (info[K.PREFETCH_FACTOR_SEEN], info[K.PREFETCHED_BATCHES]) == (prefetch, prefetch * workers)


def test_a_loader_built_without_its_knobs_records_the_defaults(tiny_tree: Path) -> None:
    asked = LoaderConfig(batch_size=4, num_workers=2, prefetch_factor=4, start_method="spawn")
    ignored = torch.utils.data.DataLoader(LFWDataset(tiny_tree), batch_size=4, num_workers=2)  # knobs left out
    result = measure_pass(ignored, 2, memory_interval_s=None)
    assert result.worker_start_method == multiprocessing.get_start_method() != asked.start_method
    assert result.prefetch_factor_seen == 2 != asked.prefetch_factor and result.prefetched_batches == 4


def test_prefetched_batches_stop_at_the_epoch_and_a_single_process_has_none(tiny_tree: Path) -> None:
    short = LoaderConfig(batch_size=16, num_workers=2, prefetch_factor=4).build(LFWDataset(tiny_tree))  # 3 batches
    assert measure_pass(short, 1, memory_interval_s=None).prefetched_batches == 3
    single = measure_pass(LoaderConfig(batch_size=4).build(LFWDataset(tiny_tree)), 2, memory_interval_s=None)
    assert (single.workers_seen, single.worker_start_method) == (0, None)
    assert (single.prefetched_batches, single.prefetch_factor_seen) == (None, None)


@pytest.mark.parametrize("pin", [False, True])
def test_pinning_is_read_from_the_first_batch(tiny_tree: Path, pin: bool) -> None:
    """Where an accelerator can pin and the loader pins, the first batch is read and pinned; elsewhere it is not
    read (None): without an accelerator torch turns pinning off, and an unpinned batch is not asked."""
    loader = LoaderConfig(batch_size=4, pin_memory=pin).build(LFWDataset(tiny_tree))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that pin_memory has no accelerator to pin for
        result = measure_pass(loader, 2, memory_interval_s=None)
    assert result.batch_pinned is (True if pin and torch.cuda.is_available() else None)
    assert pass_record([result]).as_extra_info()[K.BATCH_PINNED] is result.batch_pinned


class _Stuck(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(1.0)  # a batch of two takes 2 s, four times the timeout; the worker's stop waits for it
        return torch.zeros(1)


def test_stuck_worker_fails_with_a_clear_message() -> None:
    loader = LoaderConfig(batch_size=2, num_workers=1, timeout_s=0.5).build(_Stuck())
    with pytest.raises(LFWError, match=r"no batch within 0.5 s \(workers=1\)"):
        measure_pass(loader, 1, memory_interval_s=None)


def test_bad_batches_and_config_are_user_errors(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4).build(LFWDataset(tiny_tree))
    with pytest.raises(LFWError, match="positive integer"):
        LoaderPass(loader, 0)
    with pytest.raises(LFWError, match="start method"):
        LoaderConfig(start_method="teleport")
    with pytest.raises(LFWError, match="prefetch_factor"):
        LoaderConfig(num_workers=1, prefetch_factor=0)


def test_summary_keeps_rounds_and_computes_efficiency(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=4).build(LFWDataset(tiny_tree))
    with LoaderPass(loader, 2, memory_interval_s=0.05) as runner:
        for _ in range(3):
            runner.setup()
            runner.run()
    info = pass_record(runner.results, ceilings=[100.0] * 3, workers=0, usable_cores=2).as_extra_info()
    assert len(info["images_per_s_rounds"]) == 3 and info["rounds"] == 3
    assert info["ceiling_images_per_s"] == 100.0  # workers=0 counts as one core
    assert info["efficiency"] == pytest.approx(info["images_per_s"] / 100.0, rel=1e-3)
    assert info["timeline"]["t"] and len(info["pss_growth_mib_rounds"]) == 3


def test_coefficient_of_variation() -> None:
    assert coefficient_of_variation([10.0]) == 0.0
    assert coefficient_of_variation([9.0, 10.0, 11.0]) == pytest.approx(0.1)


ORPHANED_BEFORE_ITS_LOOP = """
import multiprocessing, os, sys, time
from lfw.measure.loader_config import die_with_parent

def worker():
    time.sleep(1.0)  # the parent is killed here, before the worker loop (and torch's watchdog) starts
    die_with_parent(0)
    time.sleep(30)

child = multiprocessing.get_context("fork").Process(target=worker)
child.start()
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_worker_whose_parent_died_before_its_loop_started_ends() -> None:
    """torch's watchdog reads the parent pid when the worker loop starts: a parent killed before that (a torchrun
    rank killed while its loader started) left a worker polling forever. The worker's init sees the parent gone."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", ORPHANED_BEFORE_ITS_LOOP], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    worker = psutil.Process(int(proc.stdout.readline()))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    try:
        worker.wait(timeout=10)
    except psutil.TimeoutExpired:
        worker.kill()
        raise AssertionError("the worker outlived its parent, which died before the worker loop started") from None
