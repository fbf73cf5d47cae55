"""What a pipeline moves per image: each count repeats exactly and catches the change made for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from lfw.data.dataset import LFWDataset, pil_loader
from lfw.errors import LFWError
from lfw.measure import LoaderConfig
from lfw.measure.moves import count_moves
from lfw.results import keys as K


def moves(root: Path, transform: str = "uint8", loader=pil_loader) -> dict[str, float]:
    dataset = LFWDataset(root, transform=transform, loader=loader)
    return count_moves(LoaderConfig(batch_size=8, num_workers=0).build(dataset), 2).per_image()


def opened_twice(path: str) -> Image.Image:
    with open(path, "rb"):
        pass
    return pil_loader(path)


def read_first(path: str) -> Image.Image:
    Path(path).read_bytes()  # a whole extra read of the file before decoding it
    return pil_loader(path)


def test_counts_repeat_exactly(tiny_tree: Path) -> None:
    first, second = moves(tiny_tree), moves(tiny_tree)
    assert first == second and first[K.FILES_OPENED_PER_IMAGE] == 1.0


def test_float_batches_are_four_times_the_bytes_of_uint8(tiny_tree: Path) -> None:
    assert moves(tiny_tree, "none")[K.BATCH_BYTES_PER_IMAGE] == pytest.approx(
        4 * moves(tiny_tree, "uint8")[K.BATCH_BYTES_PER_IMAGE], rel=1e-4)


def test_a_file_opened_twice_is_counted_twice(tiny_tree: Path) -> None:
    base, twice = moves(tiny_tree), moves(tiny_tree, loader=opened_twice)
    assert twice[K.FILES_OPENED_PER_IMAGE] == 2 * base[K.FILES_OPENED_PER_IMAGE]
    assert twice[K.BATCH_BYTES_PER_IMAGE] == base[K.BATCH_BYTES_PER_IMAGE]


def test_an_extra_read_of_each_file_shows_in_read_calls_and_bytes(tiny_tree: Path) -> None:
    base, extra = moves(tiny_tree), moves(tiny_tree, loader=read_first)
    assert extra[K.READ_CALLS_PER_IMAGE] > base[K.READ_CALLS_PER_IMAGE]
    assert extra[K.BYTES_READ_PER_IMAGE] >= 1.9 * base[K.BYTES_READ_PER_IMAGE]


def test_a_loader_with_workers_is_refused(tiny_tree: Path) -> None:
    loader = LoaderConfig(batch_size=8, num_workers=1).build(LFWDataset(tiny_tree, transform="uint8"))
    with pytest.raises(LFWError, match="num_workers=0"):
        count_moves(loader, 1)
