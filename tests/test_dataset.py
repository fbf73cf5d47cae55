"""LFWDataset: layouts, labels, both index kinds, and every kind of bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from lfw.data.collate import collate_skipping
from lfw.data.dataset import LFWDataset, find_image_root
from lfw.errors import CorruptImageError, LFWError
from tests.trees import TINY_IMAGES, first_image, write_jpeg


def test_items_are_tensor_and_label(tiny_tree: Path) -> None:
    ds = LFWDataset(tiny_tree)
    image, label = ds[0]
    assert len(ds) == TINY_IMAGES
    assert image.shape == (3, 250, 250) and image.dtype == torch.float32
    assert isinstance(label, int)


def test_labels_follow_sorted_person_names(tiny_tree: Path) -> None:
    ds = LFWDataset(tiny_tree)
    names = sorted(p.name for p in tiny_tree.iterdir())
    assert ds.classes == names
    for i in range(len(ds)):
        path = Path(ds.paths[i].decode())
        assert ds.classes[int(ds.labels[i])] == path.parent.name
    assert ds.name_of(0) == names[0].replace("_", " ")


@pytest.mark.parametrize("layout", ["lfw", "lfw_funneled", "lfw-deepfunneled", "lfw-py/lfw", "lfw-py/lfw_funneled",
                                    "lfw-py/lfw-deepfunneled"])
def test_public_layouts_found_from_parent_or_image_folder(tiny_tree: Path, tmp_path: Path, layout: str) -> None:
    images = tmp_path / layout
    shutil.copytree(tiny_tree, images)
    assert find_image_root(tmp_path) == images
    assert find_image_root(images) == images
    assert len(LFWDataset(tmp_path)) == TINY_IMAGES


def test_list_and_numpy_index_give_identical_samples(tiny_tree: Path) -> None:
    as_list = LFWDataset(tiny_tree, index="list")
    as_numpy = LFWDataset(tiny_tree, index="numpy")
    assert isinstance(as_list.paths, list) and isinstance(as_numpy.paths, np.ndarray)
    assert as_numpy.paths.dtype.kind == "S"
    for i in (0, 7, TINY_IMAGES - 1):
        (a, la), (b, lb) = as_list[i], as_numpy[i]
        assert la == lb and torch.equal(a, b)


@pytest.mark.parametrize("preset", ["none", "simple", "heavy", "uint8"])
def test_presets_produce_tensors(tiny_tree: Path, preset: str) -> None:
    image, _ = LFWDataset(tiny_tree, transform=preset)[0]
    assert image.dtype == (torch.uint8 if preset == "uint8" else torch.float32)
    assert image.shape[0] == 3


def test_unknown_preset_and_index_are_user_errors(tiny_tree: Path) -> None:
    with pytest.raises(LFWError, match="unknown transform preset 'fancy'"):
        LFWDataset(tiny_tree, transform="fancy")
    with pytest.raises(LFWError, match="unknown index kind 'dict'"):
        LFWDataset(tiny_tree, index="dict")


def test_missing_empty_and_imageless_folders(tmp_path: Path) -> None:
    with pytest.raises(LFWError, match="not found"):
        LFWDataset(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LFWError, match="empty"):
        LFWDataset(empty)
    (tmp_path / "texts" / "Some_Person").mkdir(parents=True)
    (tmp_path / "texts" / "Some_Person" / "notes.txt").write_text("x")
    with pytest.raises(LFWError, match="no JPEG images"):
        LFWDataset(tmp_path / "texts")


def test_non_image_files_are_skipped_and_counted(tree_copy: Path) -> None:
    (tree_copy / "pairs.txt").write_text("10\n")
    (tree_copy / ".DS_Store").write_bytes(b"\0")
    person = next(p for p in tree_copy.iterdir() if p.is_dir())
    (person / "Thumbs.db").write_bytes(b"\0")
    ds = LFWDataset(tree_copy)
    assert len(ds) == TINY_IMAGES
    assert ds.skipped_files == 3


def test_corrupt_jpeg_names_the_file(tree_copy: Path) -> None:
    bad = first_image(tree_copy)
    bad.write_bytes(bad.read_bytes()[:200])  # truncated
    ds = LFWDataset(tree_copy)
    with pytest.raises(CorruptImageError, match=bad.name):
        ds[0]


def test_skip_mode_drops_and_counts_bad_files(tree_copy: Path) -> None:
    bad = first_image(tree_copy)
    bad.write_bytes(b"not a jpeg at all")
    ds = LFWDataset(tree_copy, on_error="skip")
    assert ds[0] is None and ds.bad_files == 1
    images, labels = collate_skipping([ds[0], ds[1], ds[2]])
    assert images.shape[0] == 2 and labels.shape == (2,)


def test_grayscale_and_cmyk_are_converted(tmp_path: Path) -> None:
    write_jpeg(tmp_path / "Gray_Person" / "Gray_Person_0001.jpg", "L")
    write_jpeg(tmp_path / "Cmyk_Person" / "Cmyk_Person_0001.jpg", "CMYK")
    ds = LFWDataset(tmp_path)
    for i in range(2):
        image, _ = ds[i]
        assert image.shape == (3, 250, 250)
