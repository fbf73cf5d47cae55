"""The device layer's engine members on tiny data and the CPU stand-in: the GPU decode as a pipeline and its own
limit, the copies, the fed step's products, the device profile's selection and worker counts, and the one rule that
leaves a GPU member out where there is neither CUDA nor a stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lfw.errors import LFWError
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.device import copy_rounds, matmul_step
from lfw.measure.resources import usable_cores
from lfw.pipelines import Pipeline
from lfw.pipelines.device_decode import DeviceDecodeSweep, JpegByteBatches, decode_step
from lfw.suite.matrix import GROUPS
from lfw.suite.profiles import DEVICE, PROFILES, device_worker_counts, device_workers
from lfw.suite.skips import Needs, Session, layers_on, skip_reason
from tests.trees import TINY_IMAGES


def test_device_worker_counts_are_half_and_all_of_the_usable_cores() -> None:
    assert device_workers(16) == (8, 16) and device_workers(2) == (1, 2) and device_workers(1) == (1,)
    assert device_worker_counts(16) == (0, 2, 8, 16) and device_worker_counts(2) == (0, 1, 2)
    group = GROUPS["device-decode"]
    counts = device_workers(usable_cores())
    half, every = counts[0], counts[-1]
    assert {f"simplejpeg-slots-w{half}", f"gpu-decode-w{every}", "gpu-decode-w0"} <= set(group.ids)
    assert all(c.on_device == c.id.startswith("gpu-decode") and c.layer == DEVICE for c in group.cases)
    assert not any(c.config.persistent_workers for c in group.cases)  # one configuration's workers alive at a time


@pytest.mark.parametrize("workers", [0, 2])
def test_the_gpu_decode_pass_counts_its_images_on_the_cpu_stand_in(tiny_tree: Path, workers: int) -> None:
    pipeline = Pipeline("tvio", batching="device")
    data = pipeline.dataset(tiny_tree, 30, batch_size=16)
    assert isinstance(data, JpegByteBatches) and len(data) == 2
    loader = LoaderConfig(batch_size=16, num_workers=workers).build(data)
    runner = LoaderPass(loader, len(loader), memory_interval_s=None, step=pipeline.consumer_step())
    try:
        result = runner.run()
    finally:
        runner.close(stop_workers=True)
    assert result.images == 30 and result.batches == 2 and len(result.steps_s) == 2
    alone = DeviceDecodeSweep(data, "cpu").measure()
    assert alone.images == 30 and alone.images_per_s > 0


def test_a_byte_batch_decodes_to_its_images_in_one_call(tiny_tree: Path) -> None:
    from torchvision.io import decode_jpeg

    images, labels = JpegByteBatches(tiny_tree, batch_size=8)[4]
    assert len(images) == len(labels) == TINY_IMAGES - 32
    assert len({t.untyped_storage().data_ptr() for t in images}) == 1  # views of one tensor: one segment
    decoded = decode_jpeg(images, device="cpu")
    assert all(d.shape[0] == 3 for d in decoded)
    decode_step("cpu")([images, labels])
    with pytest.raises(IndexError):
        JpegByteBatches(tiny_tree, batch_size=8)[5]


def test_a_decode_on_the_device_is_tvio_on_loose_files_to_uint8() -> None:
    assert Pipeline("tvio", batching="device").label == "tvio-device"
    for bad in ({"decoder": "pil"}, {"decoder": "tvio", "output": "float"}, {"decoder": "tvio", "threads": 2}):
        with pytest.raises(LFWError, match="a decode on the device reads loose files"):
            Pipeline(batching="device", **bad)


def test_copies_interleave_every_kind_and_the_step_stays_finite() -> None:
    rates = copy_rounds({"small": 1 << 16}, 3, "cpu", warmup=1)
    assert set(rates) == {"small-pinned", "small-pageable"} and all(len(r) == 3 and min(r) > 0 for r in rates.values())
    step, per_mm = matmul_step(1.0, "cpu", size=32, products=200)
    step([torch.zeros(2, 3, 4, 4, dtype=torch.uint8)])
    assert step.products == 200 and per_mm > 0 and step.output_finite()


def test_the_device_profile_selects_its_cases_and_a_gpu_member_needs_cuda_or_the_stand_in() -> None:
    device = PROFILES["device"]
    assert device.keyword and "test_device" in device.keyword and DEVICE in device.layers
    assert device.worker_counts is not None and device.worker_counts(16) == (0, 2, 8, 16)
    assert DEVICE in layers_on(PROFILES["smoke"], keyword="test_device_copy")
    assert DEVICE not in layers_on(PROFILES["full"])  # the nightly matrix leaves the GPU machine's layer out
    gpu = Needs(layer=DEVICE, device=True)
    bare = Session(PROFILES["smoke"], frozenset({DEVICE}), 2, cuda=False)
    assert "needs a CUDA device" in (skip_reason(gpu, bare) or "")
    assert skip_reason(gpu, Session(PROFILES["smoke"], frozenset({DEVICE}), 2, cuda=False, stand_in=True)) is None
    counted = Session(device, device.layers, 16, cuda=True, workers=(0, 2, 8, 16))
    assert skip_reason(Needs(workers=4), counted) == ("workers4: this run measures workers 0, 2, 8, 16 (device "
                                                      "profile or --bench-workers)")
    assert skip_reason(Needs(workers=8, layer=DEVICE, device=True), counted) is None
