"""What the device campaign measures on a CUDA device that no benchmark of the suite measures.

- :func:`copy_bandwidth`: host-to-device copy rate of one buffer size, pinned or pageable, timed with CUDA events
  (a copy is asynchronous to the host; events time it on the device's own clock), several repeats;
- :func:`jpeg_bytes` and :func:`gpu_decode_step`: DataLoader workers read each file's bytes, the main process
  decodes the whole batch on the GPU with ``torchvision.io.decode_jpeg(list, device="cuda")``; the pass is timed
  by :class:`lfw.measure.LoaderPass` with the decode as its ``step``, like any other configuration;
- :func:`gpu_decode_only`: the decode of already-read bytes alone, the GPU decoder's own ceiling;
- :func:`matmul_step`: a training step of a chosen length on the GPU (square matrix products, repeated).

Every function needs CUDA; :func:`cuda_missing` says in one line why it cannot run here.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Subset


def cuda_missing() -> str | None:
    """Why the GPU measurements cannot run on this machine, in one line; None when a CUDA device is there."""
    if not torch.cuda.is_available():
        cuda = torch.version.cuda or "none (a CPU-only build)"
        return f"no CUDA device (torch {torch.__version__}, built with CUDA {cuda}; torch.cuda.is_available() is False)"
    return None


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, lowest, highest and the 10th/90th percentiles of ``values`` (at least one)."""
    ordered = sorted(values)
    decile = statistics.quantiles(ordered, n=10, method="inclusive") if len(ordered) > 1 else [ordered[0]] * 9
    return {"median": round(statistics.median(ordered), 4), "min": round(ordered[0], 4),
            "max": round(ordered[-1], 4), "p10": round(decile[0], 4), "p90": round(decile[-1], 4)}


def copy_bandwidth(nbytes: int, *, pinned: bool, repeats: int, warmup: int = 2) -> list[float]:
    """GB/s (10^9 bytes per second) of ``repeats`` host-to-device copies of a ``nbytes`` buffer, each timed with
    a pair of CUDA events on the current stream; ``warmup`` untimed copies first (allocator, first-touch)."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    host.random_(0, 255)  # never time a copy of zeros
    device = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    rates = []
    for i in range(warmup + repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        device.copy_(host, non_blocking=pinned)
        end.record()
        end.synchronize()
        if i >= warmup:
            rates.append(nbytes / (start.elapsed_time(end) * 1e-3) / 1e9)
    del host, device
    torch.cuda.empty_cache()
    return rates


def read_bytes(path: str) -> torch.Tensor:
    """A file's bytes as a 1-D uint8 tensor (``torchvision.io.read_file``): all a worker does before a GPU decode."""
    from torchvision.io import read_file

    return read_file(path)


def jpeg_bytes(root: str | Path, images: int | None = None) -> Subset[Any]:
    """The first ``images`` JPEGs of LFW under ``root`` as ``(bytes, label)``: LFW's own dataset with
    :func:`read_bytes` as its loader and no transform."""
    from lfw.data.dataset import LFWDataset

    files = LFWDataset(root, transform=None, loader=read_bytes)
    return Subset(files, range(min(len(files), images or len(files))))


def collate_bytes(items: list[tuple[torch.Tensor, int]]) -> list[Any]:
    """A batch of byte tensors kept as a list (they differ in length): ``[bytes_list, labels]``; the first
    element is a list, so the pass counts the batch's images by its length."""
    return [[b for b, _ in items], torch.tensor([label for _, label in items])]


def gpu_decode_step() -> Callable[[Any], None]:
    """The pass's ``step``: decode the batch's bytes on the GPU in one call, then synchronize."""
    from torchvision.io import decode_jpeg

    def step(batch: Any) -> None:
        decode_jpeg(batch[0], device="cuda")
        torch.cuda.synchronize()

    return step


def gpu_decode_only(dataset: Subset[Any], batch_size: int, batches: int) -> list[float]:
    """Images/s of ``decode_jpeg(list, device="cuda")`` on bytes already in memory, one value per batch (CUDA
    events around each call): the GPU decoder's ceiling, with no reading and no DataLoader."""
    from torchvision.io import decode_jpeg

    data = [dataset[i][0] for i in range(min(len(dataset), batch_size * batches))]
    chunks = [data[i:i + batch_size] for i in range(0, len(data), batch_size)]
    decode_jpeg(chunks[0], device="cuda")  # warm-up: the decoder's handle and buffers
    rates = []
    for chunk in chunks:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        decode_jpeg(chunk, device="cuda")
        end.record()
        end.synchronize()
        rates.append(len(chunk) / (start.elapsed_time(end) * 1e-3))
    return rates


MATMUL_SIZE = 4096


def matmul_step(step_ms: float, size: int = MATMUL_SIZE) -> tuple[Callable[[Any], None], dict[str, float]]:
    """A training step that takes about ``step_ms`` on the GPU: the batch copied over (non-blocking), converted
    to float, then ``k`` bf16 products of two ``size`` x ``size`` matrices, synchronized before it returns.

    ``k`` is calibrated here from the median of timed products (CUDA events); the returned facts give ``k``
    and the calibrated milliseconds per product.
    """
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    times = []
    for _ in range(12):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.mm(a, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    per_mm = statistics.median(times[2:])
    k = max(1, round(step_ms / per_mm))

    def step(batch: Any) -> None:
        images = batch[0].to("cuda", non_blocking=True)
        images = images.float().div_(255) if not images.is_floating_point() else images
        c = a
        for _ in range(k):
            c = torch.mm(c, b)
        torch.cuda.synchronize()

    return step, {"matmuls_per_step": k, "ms_per_matmul": round(per_mm, 4), "matmul_size": size}
