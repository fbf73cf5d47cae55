"""Large-index layouts, the index-only dataset, the leaking control, and copy-on-access itself (small, real)."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
import torch

from lfw.data.dataset import scan_images
from lfw.data.index import INDEX_KINDS, PackedPaths, index_nbytes, path_at
from lfw.data.memory_datasets import IndexOnlyDataset, LeakingControlDataset, large_index
from lfw.errors import LFWError
from lfw.measure import LoaderConfig, measure_pass
from lfw.measure.memory import frozen_gc

PATHS = ["/data/lfw/Ann/Ann_0001.jpg", "/data/lfw/Bo/Bo_0001.jpg", "/data/lfw/Bo/Bo_0002.jpg"]
LABELS = [0, 1, 1]


def test_packed_paths_round_trip_and_replicate_every_byte() -> None:
    packed = PackedPaths.from_paths(PATHS)
    assert len(packed) == 3 and [path_at(packed, i) for i in range(3)] == PATHS
    big = packed.replicate(7)
    assert [path_at(big, i) for i in range(7)] == [PATHS[i % 3] for i in range(7)]
    assert big.buffer.nbytes == 2 * packed.buffer.nbytes + len(PATHS[0])  # stored, not aliased
    assert index_nbytes(big) == big.buffer.nbytes + big.offsets.nbytes


def test_packed_paths_reject_inconsistent_offsets() -> None:
    buffer = np.frombuffer(b"abc", dtype=np.uint8)
    with pytest.raises(LFWError, match="offsets"):
        PackedPaths(buffer, np.array([0, 2], dtype=np.int64))
    with pytest.raises(LFWError, match="uint8"):
        PackedPaths(buffer, np.array([0, 3], dtype=np.int32))
    with pytest.raises(LFWError, match="empty"):
        PackedPaths.from_paths([]).replicate(3)


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_large_index_maps_back_onto_the_paths(kind: str) -> None:
    index, labels = large_index(PATHS, LABELS, kind, 10)  # type: ignore[arg-type]
    assert len(index) == len(labels) == 10
    assert [path_at(index, i) for i in range(10)] == [PATHS[i % 3] for i in range(10)]
    assert [int(labels[i]) for i in range(10)] == [LABELS[i % 3] for i in range(10)]
    assert index_nbytes(index) > 0


def test_the_large_list_holds_one_string_object_per_entry() -> None:
    index, _ = large_index(PATHS, LABELS, "list", 9)
    assert len({id(p) for p in index}) == 9  # 9 refcounts to write, not 3


def test_unknown_layout_is_an_error() -> None:
    with pytest.raises(LFWError, match="packed"):
        large_index(PATHS, LABELS, "arrow", 5)  # type: ignore[arg-type]


def test_index_only_items_touch_path_and_label() -> None:
    index, labels = large_index(PATHS, LABELS, "numpy", 4)
    assert IndexOnlyDataset(index, labels)[1] == (len(PATHS[1]), 1)
    payload, label = IndexOnlyDataset(index, labels, payload_bytes=16)[0]
    assert payload.shape == (16,) and payload.dtype == torch.uint8 and label == 0
    with pytest.raises(LFWError, match="labels"):
        IndexOnlyDataset(index, labels[:2])


def test_the_leaking_control_keeps_every_item() -> None:
    index, labels = large_index(PATHS, LABELS, "numpy", 4)
    control = LeakingControlDataset(index, labels, payload_bytes=8)
    for i in (0, 1, 1):
        control[i]
    assert len(control.kept) == 3
    with pytest.raises(LFWError, match="payload_bytes"):
        LeakingControlDataset(index, labels, payload_bytes=0)


def test_frozen_gc_freezes_only_inside_the_block() -> None:
    with frozen_gc():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    with frozen_gc(False):
        assert gc.get_freeze_count() == 0
    gc.freeze()  # a caller's own freeze is left alone
    try:
        with frozen_gc():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def worker_uss_end(index: object, labels: object) -> float:
    """Worker USS at the end of one shuffled epoch (GC frozen, so only the index access copies pages).

    The end, not the growth: the "start" snapshot is taken in the background after the first batch, by when
    the worker has already copied part of a small index.
    """
    dataset = IndexOnlyDataset(index, labels)  # type: ignore[arg-type]
    loader = LoaderConfig(batch_size=4096, num_workers=1, shuffle=True, seed=0).build(dataset)
    with frozen_gc():
        result = measure_pass(loader, len(loader), memory_interval_s=0.1)
    assert result.memory is not None
    return result.memory.as_extra_info()["worker_uss_end_mib"]


def test_a_list_index_is_copied_into_the_worker_and_numpy_is_not(tiny_tree: Path) -> None:
    """Copy-on-access, small: 300,000 paths (~40 MiB of str) in one worker, one epoch, a few seconds."""
    scan = scan_images(tiny_tree)
    as_list = large_index(scan.paths, scan.labels, "list", 300_000)
    strings_mib = index_nbytes(as_list[0]) / 2**20
    list_end = worker_uss_end(*as_list)
    del as_list
    numpy_end = worker_uss_end(*large_index(scan.paths, scan.labels, "numpy", 300_000))
    # Measured here: list 52.6 MiB, numpy 12.8 MiB, for 36.8 MiB of strings.
    assert list_end - numpy_end > 0.5 * strings_mib, (list_end, numpy_end, strings_mib)
