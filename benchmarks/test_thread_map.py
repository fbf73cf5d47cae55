"""Threads where they pay: a thread-based map against the same map in processes and against DataLoader workers.

Every case decodes the same LFW JPEGs with the same decoder (:class:`~lfw.pipelines.Pipeline`'s dataset over
the pass's images), 2 ways at once, batches of 64:

- ``thread``: torchdata.nodes ``ParallelMapper(method="thread")``, 2 threads in the main process
  (:class:`~lfw.pipelines.nodes.NodesLoader`); simplejpeg and Pillow release the GIL while they decode;
- ``process``: the same pipeline with ``method="process"``, 2 worker processes (the platform's default start
  method), each image sent back on its own through shared memory;
- ``dataloader``: the reference, ``DataLoader(num_workers=2)``, whose workers collate a batch each.

Each pass is one epoch of whole batches over the first ``profile.batches_for(64, "uint8")`` x 64 images (the
uint8 preset's pass length: 128 in smoke, 1,024 in quick, 4,096 in full), from a fresh pipeline (workers start
inside the clock). Rounds run back to back, one configuration at a time (no other
configuration's workers alive while one is measured), after one untimed warm-up pass; the tree's PSS, USS and
RSS are sampled every ``MEMORY_INTERVAL_S`` and at the first batch. The method, decoder and worker count are the
case's knobs, in its params; no stage breakdown is recorded (a map's pool threads and processes add to the stage
clock's main-process rows without a lock, :mod:`lfw.measure.stages`); the CPU of the map's worker processes counts
in ``cpu_ms_per_image`` (the threads' CPU is the main process's).

Both nodes methods keep torchdata's default of ``2 x workers`` items in flight (it refuses more than ``workers``
when set), the DataLoader its default ``prefetch_factor=2`` batches per worker.

Profiles: quick runs the two cheapest cases (simplejpeg, thread and dataloader: short passes, no process
pipeline), smoke adds the simplejpeg process case, full runs all six. Without torchdata the nodes cases skip and
say why (``pip install torchdata``); the DataLoader reference still runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import psutil
import pytest

from benchmarks.helpers import measure_rounds, narrow_unless, record
from lfw.data.root import DataSource
from lfw.measure import LoaderConfig, LoaderPass
from lfw.pipelines import Pipeline
from lfw.pipelines.nodes import MapMethod, NodesLoader, torchdata_missing
from lfw.results import keys as K
from lfw.suite.matrix import LFW_FILES
from lfw.suite.runner import dataset_files
from lfw.suite.skips import Needs, Session

pytestmark = pytest.mark.benchmark(group="thread-map")

WORKERS = 2
BATCH_SIZE = 64
TRANSFORM = "uint8"  # what every case's items are: decoded uint8 tensors (the decoders group's name for it)
# Quick passes last well under a second: the default 2 s interval would take no sample inside them. 0.25 s with
# a start mark is the overhead group's "sampling-dense" setting, whose cost that group measures.
MEMORY_INTERVAL_S = 0.25
WARMUP_ROUNDS = 1
METHODS = ("thread", "process", "dataloader")
DECODERS = ("simplejpeg", "pil")
CASES = [(method, decoder) for decoder in DECODERS for method in METHODS]
PROCESS_NOT_QUICK = "the process map (seconds per case) is kept out of its time budget; smoke and full run it"
PIL_FULL_ONLY = "the Pillow cases run in full only (quick compares simplejpeg's thread map with DataLoader workers)"


def needs(method: str, decoder: str) -> Needs:
    """quick: simplejpeg thread and dataloader; smoke: every simplejpeg case; full: all."""
    return Needs(workers=WORKERS, lfw_only=LFW_FILES, full_only=PIL_FULL_ONLY if decoder == "pil" else None,
                 not_quick=PROCESS_NOT_QUICK if method == "process" else None)


def measure_nodes(benchmark: Any, bench: Session, loader: NodesLoader, batches: int, rounds: int) -> tuple[
        dict[str, Any], list[int]]:
    """:func:`benchmarks.helpers.measure_alone` for a :class:`NodesLoader`: the same warm-up, rounds, cache
    handling, memory sampling and record, with the suite's primitive. Returns the record and every worker
    pid the passes saw (so the caller can check that none outlived its pass)."""
    config = LoaderConfig(batch_size=loader.batch_size, num_workers=loader.num_workers)  # the record's knobs
    runner = LoaderPass(loader, batches, memory_interval_s=MEMORY_INTERVAL_S, mark_start=True)  # type: ignore[arg-type]
    try:
        info = measure_rounds(benchmark, bench, runner, dataset_files(loader.dataset), config, TRANSFORM, "numpy",
                              rounds=rounds, warmup_rounds=WARMUP_ROUNDS)
    finally:
        loader.close()
    seen = sorted({pid for r in runner.results if r.memory is not None for pid in r.memory.worker_pids})
    return info, seen


@pytest.mark.parametrize(("method", "decoder"), CASES, ids=[f"{m}-{d}-w{WORKERS}" for m, d in CASES])
def test_thread_map(pytestconfig: pytest.Config, benchmark: Any, bench: Session, lfw_source: DataSource,
                    run_case: Callable[..., dict[str, Any]], method: str, decoder: str) -> None:
    narrow_unless(pytestconfig, needs(method, decoder))
    if method != "dataloader" and (missing := torchdata_missing()):
        pytest.skip(f"thread-map {method} case not measured: {missing}")
    profile = bench.profile
    batches = profile.batches_for(BATCH_SIZE, TRANSFORM)
    images = batches * BATCH_SIZE  # whole batches only: a torchdata pass never ends its map early
    dataset = Pipeline(decoder).dataset(lfw_source.path, images)
    if len(dataset) < images:
        pytest.skip(f"the tree has {len(dataset)} images; a {profile.name} pass needs {images}")
    rounds = profile.rounds
    if method == "dataloader":
        info = run_case(LoaderConfig(batch_size=BATCH_SIZE, num_workers=WORKERS), TRANSFORM, dataset=dataset,
                        batches=batches, memory_interval_s=MEMORY_INTERVAL_S, mark_start=True, rounds=rounds,
                        warmup_rounds=WARMUP_ROUNDS)
        seen: list[int] = []
    else:
        loader = NodesLoader(dataset, num_workers=WORKERS, method=cast(MapMethod, method), batch_size=BATCH_SIZE)
        info, seen = measure_nodes(benchmark, bench, loader, batches, rounds)
    record(benchmark, {K.STORAGE: "files", K.OUTPUT: "uint8"})
    assert info[K.IMAGES] == images, "a pass must be exactly one epoch of the pass's images"
    assert info[K.WORKERS_SEEN] == (0 if method == "thread" else WORKERS), "worker processes not seen by the pass"
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    assert not children.intersection(seen), f"map workers outlived their passes: {sorted(children & set(seen))}"
