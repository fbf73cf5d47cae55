"""Slot batches: the same pixels as the per-image path, whole batches through workers, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lfw.errors import CorruptImageError, LFWError
from lfw.measure import LoaderConfig
from lfw.pipelines import Pipeline
from lfw.pipelines.datasets import JpegFiles
from lfw.pipelines.slots import SlotBatches
from tests.trees import TINY_IMAGES, first_image, write_jpeg


def per_image(root: Path, decoder: str, batch: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    loader = LoaderConfig(batch_size=batch).build(JpegFiles(root, decoder))
    return [(images.clone(), labels.clone()) for images, labels in loader]


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.needs_shm(64))])
@pytest.mark.parametrize("decoder", ["simplejpeg", "pil"])
def test_slot_batches_hold_the_same_images_and_labels_as_the_per_image_path(tiny_tree: Path, decoder: str,
                                                                           workers: int) -> None:
    expected = per_image(tiny_tree, decoder, 16)
    data = SlotBatches(tiny_tree, decoder, batch_size=16)
    loader = LoaderConfig(batch_size=16, num_workers=workers, persistent_workers=workers > 0).build(data)
    for epoch in range(2):  # the second epoch reuses every slot
        got = list(loader) if workers == 0 else [(i.clone(), lab.clone()) for i, lab in loader]
        assert len(got) == len(expected) == 3, epoch
        for (images, labels), (want_images, want_labels) in zip(got, expected, strict=True):
            assert images.shape == want_images.shape and images.dtype == torch.uint8
            assert images.is_contiguous(memory_format=torch.channels_last)
            assert torch.equal(images, want_images) and torch.equal(labels, want_labels)


@pytest.mark.needs_shm(64)
def test_a_batch_stays_valid_while_the_next_one_is_fetched(tiny_tree: Path) -> None:
    """The contract: a slot is reused ``ring`` batches later, so holding the previous batch is safe."""
    expected = per_image(tiny_tree, "simplejpeg", 8)
    data = SlotBatches(tiny_tree, "simplejpeg", batch_size=8)
    loader = LoaderConfig(batch_size=8, num_workers=2).build(data)
    previous = None
    for k, (images, _labels) in enumerate(loader):
        if previous is not None:
            assert torch.equal(previous, expected[k - 1][0])
        previous = images


def test_bad_files_and_sizes_are_one_line_errors(tree_copy: Path) -> None:
    bad = first_image(tree_copy)
    victims = sorted(tree_copy.glob("*/*.jpg"))
    victims[3].write_bytes(victims[3].read_bytes()[:300])  # truncated
    data = SlotBatches(tree_copy, "simplejpeg", batch_size=8)
    with pytest.raises(CorruptImageError, match=victims[3].name):
        data[0]
    victims[3].write_bytes(bad.read_bytes())
    write_jpeg(victims[5])  # a good JPEG, 250 x 250: fine
    from PIL import Image

    Image.new("RGB", (100, 120), (1, 2, 3)).save(victims[6], format="JPEG")
    for decoder in ("simplejpeg", "pil"):
        with pytest.raises(CorruptImageError, match=r"one image size|not 250 x 250"):
            SlotBatches(tree_copy, decoder, batch_size=8)[0]
    with pytest.raises(LFWError, match="batch size"):
        SlotBatches(tree_copy, batch_size=0)
    with pytest.raises(LFWError, match="slot batches"):
        Pipeline("simplejpeg", threads=2, batching="slots")


def test_the_loader_batches_nothing_itself(tiny_tree: Path) -> None:
    data = Pipeline("simplejpeg", batching="slots").dataset(tiny_tree, TINY_IMAGES, batch_size=16)
    loader = LoaderConfig(batch_size=16).build(data)
    assert loader.batch_size is None and len(loader) == 3
    assert [len(labels) for _images, labels in loader] == [16, 16, 8]


def test_the_loader_refuses_a_ring_too_small_for_its_prefetch_and_drop_last(tiny_tree: Path) -> None:
    data = SlotBatches(tiny_tree, "simplejpeg", batch_size=16)  # ring 4: prefetch 2 + held + spare
    LoaderConfig(batch_size=16, num_workers=2, prefetch_factor=2).build(data)
    with pytest.raises(LFWError, match="ring >= 6"):
        LoaderConfig(batch_size=16, num_workers=2, prefetch_factor=4).build(data)
    LoaderConfig(batch_size=16, num_workers=2, prefetch_factor=4).build(SlotBatches(tiny_tree, batch_size=16, ring=6))
    with pytest.raises(LFWError, match="drop_last"):
        LoaderConfig(batch_size=16, drop_last=True).build(data)
    with pytest.raises(LFWError, match="positive number"):
        SlotBatches(tiny_tree, batch_size=16, images=-1)


@pytest.mark.needs_shm(64)
def test_the_main_process_lets_go_of_a_datasets_rings_when_the_dataset_goes(tiny_tree: Path) -> None:
    import gc

    from lfw.pipelines import slots

    data = SlotBatches(tiny_tree, "simplejpeg", batch_size=16)
    loader = LoaderConfig(batch_size=16, num_workers=2).build(data)
    assert len(list(loader)) == 3
    key = data.key
    assert [k for k in slots._ATTACHED if k[0] == key]  # both workers' rings, mapped here
    del loader, data
    gc.collect()
    assert not [k for k in slots._ATTACHED if k[0] == key]
