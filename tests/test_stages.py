"""The stage breakdown: stages timed in workers and the main process add up, and reach every decoding record."""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import Subset, get_worker_info

from lfw.data.dataset import LFWDataset
from lfw.data.index import INDEX_KINDS
from lfw.errors import LFWError
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.stages import (
    COLLATE,
    DECODE,
    READ,
    RECEIVE,
    STAGES,
    IndexCountingCollate,
    StageClock,
    TimedCollate,
    stage_clock_of,
)
from lfw.pipelines import Pipeline, decoders
from lfw.pipelines.decoders import DECODERS, decode, read_file
from lfw.suite.case_record import stage_breakdown
from tests.trees import TINY_IMAGES, first_image


def busy(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_stage_adds_the_calling_threads_cpu_not_its_waits() -> None:
    clock = StageClock(max_workers=1)
    t = time.thread_time()
    time.sleep(0.05)  # waiting costs no CPU
    busy(0.02)
    clock.add(DECODE, t, images=3)
    totals = clock.totals()
    assert totals.images == 3
    assert 0.015 < totals.main[DECODE] < 0.045
    assert totals.workers[DECODE] == 0.0
    clock.reset()
    assert clock.totals().images == 0 and clock.totals().main[DECODE] == 0.0


def test_a_stage_clock_is_shared_with_workers_only() -> None:
    """Outside process start-up a pickled or copied clock is a new one: a copy never adds to the original."""
    clock = StageClock(max_workers=1)
    clock.add(READ, time.thread_time() - 0.01, images=2)
    copy = pickle.loads(pickle.dumps(clock))
    assert copy.totals().images == 0
    copy.add(READ, time.thread_time(), images=5)
    assert clock.totals().images == 2


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.needs_shm(64))])
@pytest.mark.parametrize("pipeline", [Pipeline("pil"), Pipeline("simplejpeg"), Pipeline("pil", "memmap"),
                                      Pipeline("simplejpeg", batching="slots")], ids=lambda p: p.label)
def test_stages_timed_in_every_process_add_up_to_the_measured_cpu(tiny_tree: Path, workers: int,
                                                                     pipeline: Pipeline,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("LFW_CACHE", str(tmp_path / "cache"))
    torch.set_num_threads(1)
    data = pipeline.dataset(tiny_tree, TINY_IMAGES, batch_size=8)
    clock = stage_clock_of(data)
    assert clock is not None
    collate = None if getattr(data, "yields_batches", False) else TimedCollate(clock)
    loader = LoaderConfig(batch_size=8, num_workers=workers).build(data, collate)
    with LoaderPass(loader, memory_interval_s=None, stages=clock) as runner:
        result = runner.run()
    stages = result.stages
    assert stages is not None and stages.images == TINY_IMAGES == result.images
    # every image counted by the decoder that decoded it, in whichever process that was; the memmap decodes none
    assert stages.counts == ({} if pipeline.storage == "memmap" else {pipeline.decoder: TINY_IMAGES})
    where = stages.workers if workers else stages.main
    assert where[READ] > 0
    if workers:
        assert stages.workers[RECEIVE] == 0.0
    assert stages.main[RECEIVE] > 0
    if pipeline.storage != "memmap":
        assert where[DECODE] > 0
    if pipeline.batching == "slots":
        assert where[COLLATE] == 0.0  # decoded straight into the slot: nothing to collate
    else:
        assert where[COLLATE] > 0
    record = stage_breakdown([result])
    assert set(record["stage_ms_per_image"]) == set(STAGES)
    # Without workers every stage runs inside next(), so the stages account for the main process's CPU.
    if workers == 0:
        assert record["stage_coverage"] == pytest.approx(1.0, abs=0.1)
    else:
        assert 0 < record["stage_coverage"] < 1.5


def test_the_decoder_that_ran_counts_not_the_one_asked_for(tiny_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each decoder counts under its own name from inside its code: a table that sent ``simplejpeg`` to Pillow
    counts ``pil``, and ``pil-draft`` counts as itself only where it drafted."""
    path = str(first_image(tiny_tree))
    clock = StageClock(max_workers=0, counts=DECODERS)
    decode("pil-draft", read_file(path), path, size=112, clock=clock)
    decode("pil-draft", read_file(path), path, clock=clock)  # no size to draft to: a full Pillow decode
    monkeypatch.setitem(decoders._DECODE, "simplejpeg", decoders._DECODE["pil"])
    decode("simplejpeg", read_file(path), path, clock=clock)
    assert clock.totals().counts == {"pil-draft": 1, "pil": 2}
    with pytest.raises(LFWError, match="counts pil, pil-draft, tvio, simplejpeg, not 'numpy'"):
        clock.count("numpy")


class ListInWorkers(LFWDataset):
    """A dataset that turns its numpy index into a list inside each worker: the fault the index group must see."""

    def __getitem__(self, i: int) -> Any:
        if get_worker_info() is not None and not isinstance(self.paths, list):
            self.paths = list(self.paths)
        return super().__getitem__(i)


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.needs_shm(64))])
@pytest.mark.parametrize(("dataset", "index", "seen"), [(LFWDataset, "numpy", "numpy"), (LFWDataset, "list", "list"),
                                                      (ListInWorkers, "numpy", None)], ids=["numpy", "list", "fault"])
def test_the_index_counted_is_the_one_each_loading_process_reads(tiny_tree: Path, workers: int, dataset: type,
                                                                 index: str, seen: str | None) -> None:
    data = Subset(dataset(tiny_tree, index=index), range(32))
    clock = StageClock(counts=INDEX_KINDS)
    loader = LoaderConfig(batch_size=8, num_workers=workers).build(data, IndexCountingCollate(clock, data))
    with LoaderPass(loader, memory_interval_s=None, stages=clock) as runner:
        result = runner.run()
    assert result.stages is not None and result.batches == 4
    expected = seen or ("list" if workers else "numpy")  # the fault shows only where workers load
    assert result.stages.counts == {expected: 4}


def test_no_stages_no_breakdown() -> None:
    from lfw.measure import PassResult

    assert stage_breakdown([PassResult(images=4, batches=1, wall_s=1.0, ttfb_s=0.1)]) == {}
