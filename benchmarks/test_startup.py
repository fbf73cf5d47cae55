"""Start-up cost: time to first batch against the size of the dataset object each worker receives.

The anti-pattern: a dataset that holds a large Python object, here a list index of paths (LFW's own paths
replicated to ``entries``, as the memory-index group does), handed to workers that are not forked. ``fork``
workers inherit it and start at once. ``spawn`` and ``forkserver`` workers are sent it pickled (the parent
pickles the whole dataset into each worker's process object, and each worker unpickles it before its first
item), so their time to first batch grows with the pickled size, worker after worker.

Cases: ``entries`` (LFW's 13,233 paths, then 100k and 1M) x start method x workers (1, 2, 4). Items touch only
path and label (:class:`~lfw.data.memory_datasets.IndexOnlyDataset`, no decode), so the pass measures start-up.
Workers do not persist, so every pass starts its own; a pass ends once each worker has sent one batch.
One untimed warm-up pass per case starts the forkserver's server (started once per process, by whichever case
comes first) and leaves every case's rounds on a warm page cache. Memory is read only before and after the
clock (no sample in between): worker USS at the end shows each spawned worker's own copy of the index.

Recorded per case (``run_case``): time to first batch per round (``ttfb_s``, ``ttfb_s_rounds``),
``len(pickle.dumps(dataset))`` (``K.PICKLED_DATASET_BYTES``), the index's size in the parent (``K.INDEX_MIB``);
the entries, start method and workers are the case's knobs, in its params.

Profiles: smoke runs LFW's 13,233 entries with 1 worker under each start method, quick none (its time budget),
full every case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.helpers import narrow_unless, record
from lfw.data.dataset import scan_images
from lfw.data.index import IndexKind, index_nbytes
from lfw.data.memory_datasets import IndexOnlyDataset, large_index
from lfw.data.root import DataSource
from lfw.measure import LoaderConfig
from lfw.measure.loader_config import START_METHODS
from lfw.measure.startup import pickled_dataset_bytes
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.matrix import QUICK_BUDGET
from lfw.suite.profiles import Profile
from lfw.suite.skips import Needs

GROUP = "startup"
pytestmark = pytest.mark.benchmark(group=GROUP)

ENTRIES = {"13k": 13_233, "100k": 100_000, "1M": 1_000_000}  # id label -> entries; 13,233 is LFW's real size
WORKERS = (1, 2, 4)
SMOKE_ENTRIES, SMOKE_WORKERS = ENTRIES["13k"], 1  # the subset smoke runs, under every start method
BATCH_SIZE = 64
# Longer than any pass: no memory sample falls inside the clock, only the snapshots before and after it.
MEMORY_INTERVAL_S = 60.0
LAYOUT: IndexKind = "list"  # the anti-pattern: N str objects to pickle, send and rebuild in every worker
TRANSFORM = "index-only"
LFW_INDEX = "the start-up cases replicate LFW's own file index"
FULL_SWEEP = (f"the start-up sweep runs in the full profile (smoke: {SMOKE_ENTRIES:,} entries, "
              f"{SMOKE_WORKERS} worker, each start method)")

# (entries, start method, workers), entries outermost: each index is built once (``dataset_of``).
CASE_VALUES = [(entries, method, workers) for entries in ENTRIES.values() for method in START_METHODS
               for workers in WORKERS]
LABELS = {entries: label for label, entries in ENTRIES.items()}
CASES = [pytest.param(e, m, w, id=f"entries{LABELS[e]}-{m}-workers{w}") for e, m, w in CASE_VALUES]


def needs(entries: int, start_method: str, num_workers: int) -> Needs:
    """What a case needs: its start method and workers; the smoke subset is kept out of quick's budget only,
    every other case runs in the full profile alone."""
    subset = entries == SMOKE_ENTRIES and num_workers == SMOKE_WORKERS
    return Needs(workers=num_workers, start_method=start_method, lfw_only=LFW_INDEX,
                 not_quick=QUICK_BUDGET if subset else None, full_only=None if subset else FULL_SWEEP)


@pytest.fixture(scope="module")
def dataset_of(lfw_source: DataSource) -> Callable[[int], tuple[IndexOnlyDataset, int, float]]:
    """``get(entries)``: the list-index dataset, its pickled bytes and its MiB in this process, built outside any
    timed round. Cases run entries by entries (``CASES``), so each is built once; the previous one is
    dropped first, so the parent (and every worker forked from it) holds one large index at a time."""
    scan = scan_images(lfw_source.path)
    built: dict[int, tuple[IndexOnlyDataset, int, float]] = {}

    def get(entries: int) -> tuple[IndexOnlyDataset, int, float]:
        if entries not in built:
            built.clear()
            index, labels = large_index(scan.paths, scan.labels, LAYOUT, entries)
            dataset = IndexOnlyDataset(index, labels)
            built[entries] = (dataset, pickled_dataset_bytes(dataset), round(index_nbytes(index) / 2**20, 2))
        return built[entries]

    return get


@pytest.mark.parametrize(("entries", "start_method", "num_workers"), CASES)
def test_startup(pytestconfig: pytest.Config, run_case: Callable[..., dict[str, Any]], benchmark: Any,
                 profile: Profile, dataset_of: Callable[[int], tuple[IndexOnlyDataset, int, float]], entries: int,
                 start_method: str, num_workers: int) -> None:
    narrow_unless(pytestconfig, needs(entries, start_method, num_workers))
    dataset, pickled, mib = dataset_of(entries)
    config = LoaderConfig(batch_size=BATCH_SIZE, num_workers=num_workers, start_method=start_method)
    info = run_case(config, TRANSFORM, LAYOUT, dataset=dataset, batches=num_workers,
                    memory_interval_s=MEMORY_INTERVAL_S, rounds=profile.rounds, warmup_rounds=1)
    record(benchmark, {KN.TRANSFORM.key: TRANSFORM, K.PICKLED_DATASET_BYTES: pickled,
                       K.INDEX_MIB: mib})
    assert info[K.IMAGES] == BATCH_SIZE * num_workers and info[K.TTFB_S] > 0
    assert info[K.WORKER_START_METHOD] == start_method and info[K.WORKERS_SEEN] == num_workers
