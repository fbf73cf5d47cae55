"""Decode pipelines: every decoder agrees on good images and behaves the same on bad ones; storage formats."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision import transforms as T

from lfw.data.dataset import LFWDataset
from lfw.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from lfw.errors import CorruptImageError, LFWError
from lfw.measure import LoaderConfig, LoaderPass
from lfw.pipelines import Pipeline
from lfw.pipelines.datasets import JpegFiles, TarShards
from lfw.pipelines.decoders import DECODERS, decode, read_file
from lfw.pipelines.storage import decoded_memmap, tar_shards
from tests.trees import TINY_IMAGES, first_image, write_jpeg

FULL_SIZE = [d for d in DECODERS if d != "pil-draft"]


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (250, 250), (10, 20, 30)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards and memmaps go to a temporary cache, never the benchmarks' one."""
    monkeypatch.setenv("LFW_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.mark.parametrize("decoder", FULL_SIZE)
def test_decoders_agree_with_pil_on_real_images(tiny_tree: Path, decoder: str) -> None:
    path = str(first_image(tiny_tree))
    reference = decode("pil", read_file(path), path)
    image = decode(decoder, read_file(path), path)
    assert image.shape == (3, 250, 250) and image.dtype == torch.uint8
    assert (image.int() - reference.int()).abs().float().mean() < 1.5  # libjpeg-turbo in all: rounding at most


def test_draft_decodes_at_reduced_scale_no_smaller_than_asked(tiny_tree: Path) -> None:
    path = str(first_image(tiny_tree))
    assert decode("pil-draft", read_file(path), path, size=112).shape == (3, 125, 125)
    assert decode("pil-draft", read_file(path), path, size=200).shape == (3, 250, 250)


@pytest.mark.parametrize("mode", ["L", "CMYK"])
@pytest.mark.parametrize("decoder", DECODERS)
def test_grayscale_and_cmyk_become_rgb_in_every_decoder(tmp_path: Path, decoder: str, mode: str) -> None:
    path = tmp_path / "p" / "p_0001.jpg"
    write_jpeg(path, mode)
    image = decode(decoder, read_file(str(path)), str(path))
    assert image.shape == (3, 250, 250)


BAD = {
    "zero-byte": (lambda good: b"", "empty file (0 bytes)"),
    "truncated": (lambda good: good[: len(good) // 2], "truncated or corrupt JPEG"),
    "png-in-jpg": (lambda good: png_bytes(), "PNG data, not a JPEG"),
    "garbage": (lambda good: b"\x00" * 500, "not a JPEG"),
}


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("decoder", DECODERS)
def test_bad_files_are_one_line_errors_naming_the_file_in_every_decoder(tiny_tree: Path, decoder: str,
                                                                         bad: str) -> None:
    make, reason = BAD[bad]
    data = make(first_image(tiny_tree).read_bytes())
    with pytest.raises(CorruptImageError) as caught:
        decode(decoder, data, "Some_Person/Some_Person_0001.jpg", size=112)
    message = str(caught.value)
    assert "Some_Person/Some_Person_0001.jpg" in message and reason in message and "\n" not in message


@pytest.mark.parametrize("decoder", DECODERS)
def test_skip_mode_drops_and_counts_bad_files_in_every_decoder(tree_copy: Path, decoder: str) -> None:
    victims = sorted(tree_copy.glob("*/*.jpg"))[:3]
    victims[0].write_bytes(b"")
    victims[1].write_bytes(victims[1].read_bytes()[:300])
    victims[2].write_bytes(png_bytes())
    strict = JpegFiles(tree_copy, decoder)
    with pytest.raises(CorruptImageError, match="cannot decode image"):
        strict[0]
    lenient = JpegFiles(tree_copy, decoder, on_error="skip", threads=2)
    items = lenient.__getitems__(list(range(len(lenient))))
    assert sum(item is None for item in items) == 3 and lenient.bad_files == 3
    images, _ = LoaderConfig(batch_size=TINY_IMAGES).build(lenient).__iter__().__next__()
    assert images.shape[0] == TINY_IMAGES - 3


def test_pil_presets_refuse_png_data_as_the_decoders_do(tree_copy: Path) -> None:
    first_image(tree_copy).write_bytes(png_bytes())
    with pytest.raises(CorruptImageError, match="PNG data, not a JPEG"):
        LFWDataset(tree_copy)[0]


def test_threads_give_the_same_batch_as_one_at_a_time(tiny_tree: Path) -> None:
    serial, threaded = JpegFiles(tiny_tree, "pil"), JpegFiles(tiny_tree, "pil", threads=3)
    a = serial.__getitems__(list(range(10)))
    b = threaded.__getitems__(list(range(10)))
    assert all(torch.equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(a, b, strict=True))


def test_outputs_resize_and_normalize_as_the_presets_do(tiny_tree: Path) -> None:
    uint8 = Pipeline("pil", size=112).dataset(tiny_tree)[0][0]
    floats = Pipeline("pil", output="float").dataset(tiny_tree)[0][0]
    preset = T.Compose([T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    reference = LFWDataset(tiny_tree, transform=preset)[0][0]
    assert uint8.shape == (3, 112, 112) and uint8.dtype == torch.uint8
    assert floats.dtype == torch.float32 and torch.allclose(floats, reference, atol=1e-5)


def test_deferred_output_loads_uint8_and_normalizes_in_the_consumer(tiny_tree: Path) -> None:
    pipeline = Pipeline("simplejpeg", output="deferred")
    data = pipeline.dataset(tiny_tree, images=16)
    step = pipeline.consumer_step()
    assert step is not None and Pipeline("pil").consumer_step() is None
    loader = LoaderConfig(batch_size=8).build(data)
    with LoaderPass(loader, 2, step=step, memory_interval_s=None) as runner:
        result = runner.run()
    assert result.images == 16 and len(result.steps_s) == 2 and next(iter(loader))[0].dtype == torch.uint8


def test_tar_shards_hold_the_tree_and_split_among_workers(tiny_tree: Path) -> None:
    shards = tar_shards(tiny_tree, images_per_shard=8, images=32)
    assert len(shards.shards) == 4 and shards.images == 32
    assert tar_shards(tiny_tree, images_per_shard=8, images=32) == shards  # made once, then reused
    data = TarShards(shards.shards, shards.classes, shards.images)
    files = LFWDataset(tiny_tree, transform="uint8")
    items = list(data)
    assert len(items) == 32 and all(torch.equal(items[i][0], files[i][0]) for i in (0, 31))
    assert [label for _, label in items] == [int(files.labels[i]) for i in range(32)]
    loader = LoaderConfig(batch_size=4, num_workers=2).build(data)
    labels = sorted(int(v) for _, batch in loader for v in batch)
    assert labels == sorted(int(files.labels[i]) for i in range(32))  # every image once, split between workers


def test_a_corrupt_tar_member_is_named_or_skipped(tmp_path: Path, tiny_tree: Path) -> None:
    shard = tmp_path / "shard-00000.tar"
    good = first_image(tiny_tree).read_bytes()
    with tarfile.open(shard, "w") as tar:
        for name, data in (("A/A_0001.jpg", good), ("A/A_0002.jpg", good[:200]), ("B/B_0001.jpg", good)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(CorruptImageError, match=r"shard-00000.tar:A/A_0002.jpg: truncated or corrupt JPEG"):
        list(TarShards([shard], ["A", "B"], 3))
    lenient = TarShards([shard], ["A", "B"], 3, on_error="skip")
    items = list(lenient)
    assert [item[1] if item else None for item in items] == [0, None, 1] and lenient.bad_files == 1
    shard.write_bytes(b"not a tar at all" * 64)
    with pytest.raises(CorruptImageError, match="cannot read tar shard"):
        list(TarShards([shard], ["A"], 1))


def test_memmap_holds_the_decoded_tree(tiny_tree: Path) -> None:
    images, labels = decoded_memmap(tiny_tree)
    array = np.load(images, mmap_mode="r")
    files = LFWDataset(tiny_tree, transform="uint8")
    assert array.shape == (TINY_IMAGES, 250, 250, 3) and array.dtype == np.uint8
    assert np.load(labels).tolist() == [int(v) for v in files.labels]
    assert torch.equal(torch.from_numpy(np.array(array[5])).permute(2, 0, 1), files[5][0])
    data = Pipeline(storage="memmap").dataset(tiny_tree, images=8)
    batch = next(iter(LoaderConfig(batch_size=8).build(data)))
    assert batch[0].shape == (8, 3, 250, 250) and batch[1].tolist() == [int(files.labels[i]) for i in range(8)]


def test_bad_pipeline_settings_are_user_errors(tiny_tree: Path) -> None:
    with pytest.raises(LFWError, match="unknown decoder 'turbo'"):
        Pipeline("turbo")
    with pytest.raises(LFWError, match="unknown storage"):
        Pipeline(storage="hdf5")
    with pytest.raises(LFWError, match="decode threads apply to loose files only"):
        Pipeline(storage="tar", threads=2)
    with pytest.raises(LFWError, match="threads must be 0"):
        JpegFiles(tiny_tree, threads=-1)
