"""Copy-on-access: what one shuffled epoch over a large file index costs each forked worker.

Reading a ``str`` from a Python list writes its refcount, so a forked worker copies every page of the list's
strings it touches, and a shuffled epoch touches them all; a numpy ``S`` array (or one packed byte buffer
with offsets) is one object, and indexing it only reads the shared pages. The index holds LFW's paths
replicated to ``profile.large_index_size`` entries and the items touch only path and label (no decode), so
the epoch measures the index alone, in seconds.

Recorded per case (see ``run_case``): worker USS (mean per worker) and tree PSS/USS/RSS at the first batch,
the end and their growth, per round, plus the sampled timeline of the last round. RSS is kept on purpose: it
counts every shared page in every process, so it stays flat while the workers' private memory grows.

The GC is frozen (``gc.freeze()``) before the workers fork, except in the ``gclive`` case: an unfrozen cyclic
GC in each worker copies the parent's tracked objects (tens of MiB, whatever the index; measured in
docs/methodology.md), which would blur the index comparison; ``gclive`` keeps that cost visible on its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.helpers import narrow_unless, record
from lfw.data.dataset import scan_images
from lfw.data.index import FileIndex, LabelIndex, index_nbytes
from lfw.data.memory_datasets import IndexOnlyDataset, large_index
from lfw.data.root import DataSource
from lfw.measure import LoaderConfig
from lfw.measure.leak import first_epoch_verdict
from lfw.measure.memory import frozen_gc
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.profiles import PROFILES, Profile
from lfw.suite.skips import Needs

pytestmark = pytest.mark.benchmark(group="memory-index")

BATCH_SIZE = 4096  # 245 batches per 1,000,000 entries: the epoch is bounded by item access, not batching
# A large-index epoch lasts seconds: a short interval gives the timeline several points per epoch, while each
# sample's page walk (milliseconds of CPU per torch process) stays small beside it.
MEMORY_INTERVAL_S = 0.2
WORKERS = (2, 4)
CASES = [("list", True), ("numpy", True), ("packed", True), ("numpy", False)]  # (layout, freeze the GC)
MIN_LIST_OVER_NUMPY = 5.0  # "many times": well below the measured ratio (docs/methodology.md, Memory)
# Judged from the quick profile's index size up: smaller ones (smoke's) stay under the growth threshold.
JUDGED_FROM_ENTRIES = PROFILES["quick"].large_index_size


def needs(workers: int) -> Needs:
    return Needs(workers=workers, lfw_only="the index experiments measure LFW's own file index",
                 full_only=None if workers == 2 else "the index comparison runs at workers2 only (full adds workers4)")


@pytest.fixture(scope="module")
def index_of(lfw_source: DataSource, profile: Profile) -> Callable[[str], tuple[FileIndex, LabelIndex, float]]:
    """``get(layout)``: the large index, built outside any timed round and kept only while it is in use.

    Cases run layout by layout, so each is built once; the previous one is dropped first, so the parent (and
    every worker forked from it) holds one large index at a time.
    """
    scan = scan_images(lfw_source.path)
    built: dict[str, tuple[FileIndex, LabelIndex, float]] = {}

    def get(layout: str) -> tuple[FileIndex, LabelIndex, float]:
        if layout not in built:
            built.clear()
            index, labels = large_index(scan.paths, scan.labels, layout, profile.large_index_size)  # type: ignore[arg-type]
            built[layout] = (index, labels, round(index_nbytes(index) / 2**20, 2))
        return built[layout]

    return get


@pytest.fixture(scope="module")
def worker_growth() -> dict[tuple[str, int], float]:
    """Worker USS growth of each GC-frozen case measured so far, by (layout, workers): list runs before numpy."""
    return {}


@pytest.mark.parametrize("num_workers", WORKERS, ids=[f"workers{w}" for w in WORKERS])
@pytest.mark.parametrize(("layout", "freeze"), CASES, ids=[k if f else f"{k}-gclive" for k, f in CASES])
def test_memory_index(pytestconfig: pytest.Config, run_case: Callable[..., dict[str, Any]], benchmark: Any,
                      profile: Profile,
                      index_of: Callable[[str], tuple[FileIndex, LabelIndex, float]],
                      worker_growth: dict[tuple[str, int], float], layout: str, freeze: bool,
                      num_workers: int) -> None:
    narrow_unless(pytestconfig, needs(num_workers))
    index, labels, mib = index_of(layout)
    dataset = IndexOnlyDataset(index, labels)
    config = LoaderConfig(batch_size=BATCH_SIZE, num_workers=num_workers, shuffle=True, seed=0)
    with frozen_gc(freeze):
        info = run_case(config, "none", layout, dataset=dataset, batches=math.ceil(len(dataset) / BATCH_SIZE),
                        memory_interval_s=MEMORY_INTERVAL_S, mark_start=True, rounds=3 if profile.full_matrix else 1,
                        warmup_rounds=0)  # fresh workers each round: a warm-up epoch adds nothing
    verdict = first_epoch_verdict(info)
    record(benchmark, {KN.TRANSFORM.key: "index-only", K.INDEX_SIZE: len(dataset), K.INDEX_MIB: mib,
                       **verdict.as_extra_info()})
    assert info[K.IMAGES] == len(dataset)
    if not (benchmark.enabled and freeze) or profile.large_index_size < JUDGED_FROM_ENTRIES:
        return  # measured and saved, not judged: timing off, a live GC, or an index too small to show the copies
    worker_growth[(layout, num_workers)] = verdict.worker_uss_growth_mib
    list_growth = worker_growth.get(("list", num_workers))
    if layout == "numpy" and list_growth is not None:  # recorded beside the numpy case; judged by the test below
        ratio = list_growth / max(verdict.worker_uss_growth_mib, 1.0)  # numpy growth can be ~0 MiB
        record(benchmark, {K.LIST_OVER_NUMPY: round(ratio, 1)})
    assert verdict.flagged == (layout == "list"), (
        f"{layout}: worker USS grew {verdict.worker_uss_growth_mib:.1f} MiB in one epoch "
        f"(threshold {verdict.threshold_mib:g} MiB); copy-on-access should flag the list index only")


@pytest.mark.parametrize("num_workers", WORKERS, ids=[f"workers{w}" for w in WORKERS])
def test_list_copies_many_times_more_than_numpy(pytestconfig: pytest.Config, profile: Profile,
                                                worker_growth: dict[tuple[str, int], float], num_workers: int) -> None:
    """The list index's per-worker growth over the numpy index's, from this run's two GC-frozen cases.

    A test of its own (not a benchmark: it measures nothing, it compares two measurements), so it cannot stop
    silently: when ``-k`` deselected a case, the order changed, or benchmarks are disabled, it skips and says so.
    """
    narrow_unless(pytestconfig, needs(num_workers))
    if pytestconfig.getoption("benchmark_disable"):
        pytest.skip("benchmarks disabled: no worker growth was measured to compare")
    if profile.large_index_size < JUDGED_FROM_ENTRIES:
        pytest.skip(f"the {profile.name} profile's index has {profile.large_index_size:,} entries: copy-on-access is "
                    f"judged from {JUDGED_FROM_ENTRIES:,} (the quick and full profiles)")
    missing = [layout for layout in ("list", "numpy") if (layout, num_workers) not in worker_growth]
    if missing:
        pytest.skip(f"needs the {' and '.join(missing)} case of test_memory_index[workers{num_workers}] in this "
                    "run, before this test (deselected or reordered)")
    list_growth, numpy_growth = worker_growth[("list", num_workers)], worker_growth[("numpy", num_workers)]
    ratio = list_growth / max(numpy_growth, 1.0)  # numpy growth can be ~0 MiB
    assert ratio >= MIN_LIST_OVER_NUMPY, (
        f"list index grew workers by {list_growth:.1f} MiB, numpy by {numpy_growth:.1f} MiB: only {ratio:.1f}x, "
        f"expected copy-on-access to make it >= {MIN_LIST_OVER_NUMPY:g}x")
