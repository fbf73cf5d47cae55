"""The torchdata.nodes pipeline of the thread-map group: same batches as the DataLoader, measured by the suite's
primitive, and no thread or process of it left once a pass ends, after a failure too."""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from lfw.errors import CorruptImageError, LFWError
from lfw.measure import LoaderPass
from lfw.measure.torch_compat import shutdown_workers, worker_pids
from lfw.pipelines import Pipeline
from lfw.pipelines.datasets import JpegFiles
from tests.trees import TINY_IMAGES, first_image

pytest.importorskip("torchdata.nodes", reason="torchdata not installed: pip install torchdata")

from lfw.pipelines.nodes import GetItem, NodesLoader, NodesPass, torchdata_missing

METHODS = ("thread", "process")


class Slow(Dataset):
    """40 tiny items; item ``stuck_at`` takes ``stuck_s`` seconds, the others ``each_s``."""

    def __init__(self, each_s: float = 0.0, stuck_at: int = -1, stuck_s: float = 0.0) -> None:
        self.each_s, self.stuck_at, self.stuck_s = each_s, stuck_at, stuck_s

    def __len__(self) -> int:
        return TINY_IMAGES

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.stuck_s if i == self.stuck_at else self.each_s)
        return torch.full((3, 4, 4), i, dtype=torch.uint8), i


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def pipeline_threads() -> list[str]:
    """Threads torchdata or the pass start in this process (reader, ordering, map threads, the watchdog)."""
    names = ("_populate_queue", "_sort_worker", "_apply_udf", "lfw-nodes-watchdog")
    return [t.name for t in threading.enumerate() if any(n in t.name for n in names)]


def all_batches(loader: Any) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    batches = list(loader)
    if isinstance(loader, NodesLoader):
        loader.close()
    return (torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches]),
            [len(b[0]) for b in batches])


def test_torchdata_is_found() -> None:
    assert torchdata_missing() is None


@pytest.mark.parametrize("decoder", ["simplejpeg", "pil"])
@pytest.mark.parametrize("method", METHODS)
def test_nodes_pipeline_gives_the_dataloaders_batches(tiny_tree: Path, method: str, decoder: str) -> None:
    dataset = Pipeline(decoder).dataset(tiny_tree)
    images, labels, sizes = all_batches(NodesLoader(dataset, num_workers=2, method=method,  # type: ignore[arg-type]
                                                    batch_size=16))
    want_images, want_labels, want_sizes = all_batches(DataLoader(dataset, batch_size=16))
    assert sizes == want_sizes == [16, 16, 8]  # the last batch short, as with drop_last=False
    assert torch.equal(images, want_images) and torch.equal(labels, want_labels)
    assert images.dtype == torch.uint8 and images.shape == (TINY_IMAGES, 3, 250, 250)


@pytest.mark.parametrize("method", METHODS)
def test_loader_pass_measures_a_nodes_pipeline(tiny_tree: Path, method: str) -> None:
    loader = NodesLoader(Pipeline("simplejpeg").dataset(tiny_tree), num_workers=2, method=method,  # type: ignore[arg-type]
                         batch_size=8)
    assert (len(loader), loader.persistent_workers, loader.num_workers) == (5, False, 2)
    with LoaderPass(loader, memory_interval_s=0.05, mark_start=True) as runner:  # type: ignore[arg-type]
        for _ in range(3):
            runner.setup()
            runner.run()
    assert [(r.images, r.batches) for r in runner.results] == [(TINY_IMAGES, 5)] * 3
    seen = set()
    for result in runner.results:
        memory = result.memory
        assert memory is not None and memory.end.pss > 0
        assert result.workers_cpu_s is not None and result.main_cpu_s is not None
        if method == "process":
            assert len(memory.worker_pids) == 2 and result.workers_cpu_s > 0
            assert set(memory.worker_pids) <= set(memory.start.child_uss)  # the workers are in the tree's memory
        else:
            assert memory.worker_pids == [] and result.workers_cpu_s == 0  # threads: the main process's CPU
        seen.update(memory.worker_pids)
    assert len(seen) == (6 if method == "process" else 0)  # fresh workers every pass
    assert runner.shutdown_errors == []
    assert not children() & seen, "map worker processes outlived their pass"
    assert pipeline_threads() == []


def test_a_pass_cut_short_stops_its_workers(tiny_tree: Path) -> None:
    loader = NodesLoader(Pipeline("pil").dataset(tiny_tree), num_workers=2, method="process", batch_size=8)
    with LoaderPass(loader, 2, memory_interval_s=None) as runner:  # type: ignore[arg-type]
        runner.run()
        pids = set(runner._worker_pids)
        assert len(pids) == 2 and pids <= children()  # alive until the pass is ended
    assert runner.results[0].images == 16
    assert not children() & pids and pipeline_threads() == []


@pytest.mark.parametrize("method", METHODS)
def test_worker_pids_hook(tiny_tree: Path, method: str) -> None:
    loader = NodesLoader(Pipeline("pil").dataset(tiny_tree), num_workers=2, method=method,  # type: ignore[arg-type]
                         batch_size=8)
    it = iter(loader)
    next(it)
    pids = worker_pids(loader, it)
    assert pids == it.worker_pids() == loader.worker_pids(it)
    assert worker_pids(loader) == []  # between passes: none persists
    if method == "process":
        assert len(pids) == 2 and set(pids) <= children()
    else:
        assert pids == []
    shutdown_workers(it)  # LoaderPass ends a pass through this: the close() hook
    assert not children() & set(pids) and pipeline_threads() == []
    assert next(it, None) is None  # a closed pass gives no more batches


@pytest.mark.parametrize("method", METHODS)
def test_an_error_in_the_map_fails_the_pass_and_stops_the_pipeline(tree_copy: Path, method: str) -> None:
    first_image(tree_copy).write_bytes(b"\xff\xd8\xff" + b"\x00" * 64)  # a JPEG header, then nothing decodable
    loader = NodesLoader(Pipeline("simplejpeg").dataset(tree_copy), num_workers=2, method=method,  # type: ignore[arg-type]
                         batch_size=8)
    runner = LoaderPass(loader, memory_interval_s=None)  # type: ignore[arg-type]
    with pytest.raises(CorruptImageError, match="cannot decode image"):
        runner.run()
    pids = set(runner._iterator.worker_pids()) if isinstance(runner._iterator, NodesPass) else set()
    runner.close()
    assert not children() & pids and pipeline_threads() == []


# An image the killed worker had sent but not yet handed over (its shared memory goes with the worker) ends
# torchdata's ordering thread with an exception; the pass must fail all the same, and say why.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_killed_worker_ends_the_pass_with_an_error() -> None:
    it = iter(NodesLoader(Slow(each_s=0.02), num_workers=2, method="process", batch_size=8))
    next(it)
    victim = it.worker_pids()[0]
    psutil.Process(victim).send_signal(signal.SIGKILL)
    with pytest.raises(RuntimeError, match=f"map worker {victim} exited unexpectedly"):
        for _ in it:
            pass
    pids = set(it.worker_pids())
    try:
        it.close()
    except RuntimeError as exc:  # the survivor outlived torchdata's own shutdown (a loaded runner): signalled, said so
        assert "outlived the pipeline's shutdown and was stopped by signal" in str(exc)
    assert not children() & pids


def test_a_stuck_worker_times_out_and_is_stopped() -> None:
    loader = NodesLoader(Slow(stuck_at=9, stuck_s=30), num_workers=2, method="process", batch_size=8, timeout_s=0.5)
    runner = LoaderPass(loader, memory_interval_s=None)  # type: ignore[arg-type]
    before = children()
    with pytest.raises(LFWError, match=r"no batch within 0\.5 s"):  # not the batch the item sends after 30 s
        runner.run()
    runner.close()
    # stopped, not waited for: the stuck worker was signalled and no worker of the pass is left
    assert runner.shutdown_errors and "stopped by signal" in runner.shutdown_errors[0]
    assert not children() - before
    assert pipeline_threads() == []


def test_the_map_function_travels_to_a_spawned_worker(tiny_tree: Path) -> None:
    dataset = JpegFiles(tiny_tree, "simplejpeg", threads=2)
    dataset.__getitems__([0, 1])  # make the pool a spawned worker must not receive
    copy = pickle.loads(pickle.dumps(GetItem(dataset)))
    image, label = copy(3)
    want_image, want_label = dataset[3]  # type: ignore[misc]
    assert torch.equal(image, want_image) and label == want_label


def test_bad_settings_are_user_errors() -> None:
    with pytest.raises(LFWError, match="unknown map method"):
        NodesLoader(Slow(), num_workers=2, method="greenlet")  # type: ignore[arg-type]
    with pytest.raises(LFWError, match="at least 1 worker"):
        NodesLoader(Slow(), num_workers=0)
    with pytest.raises(LFWError, match="unknown start method"):
        NodesLoader(Slow(), num_workers=1, method="process", multiprocessing_context="vfork")
    with pytest.raises(LFWError, match="empty"):
        NodesLoader(Slow(), num_workers=1, indices=[])


ORPHANED = """
import time
import torch
from lfw.pipelines.nodes import NodesLoader

it = iter(NodesLoader([(torch.zeros(3), i) for i in range(64)], num_workers=2, method="process", batch_size=8))
next(it)
print(*it.worker_pids(), flush=True)
time.sleep(60)
"""


def test_map_workers_end_with_their_parent() -> None:
    """torchdata's worker loop only polls its queue: without die_with_parent a killed parent leaves them polling."""
    proc = subprocess.Popen([sys.executable, "-c", ORPHANED], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    workers = [psutil.Process(int(pid)) for pid in proc.stdout.readline().split()]
    assert len(workers) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    _, alive = psutil.wait_procs(workers, timeout=10)
    for worker in alive:
        worker.kill()
    assert not alive, "map workers outlived their parent"
