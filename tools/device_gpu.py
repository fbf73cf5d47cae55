"""What the device campaign measures on a CUDA device that no benchmark of the suite measures.

- :func:`copy_bandwidth`: host-to-device copy rate of one buffer size, pinned or pageable, several repeats;
- :func:`jpeg_bytes`, :func:`collate_bytes` and :func:`decode_step`: DataLoader workers read each file's bytes,
  the main process decodes the whole batch in one ``torchvision.io.decode_jpeg(list, device=...)`` call; the pass
  is timed by :class:`lfw.measure.LoaderPass` with the decode as its ``step``, like any other configuration;
- :func:`decode_only`: the decode of already-read bytes alone, the GPU decoder's own ceiling;
- :func:`matmul_step`: a training step of a chosen length (square matrix products, repeated).

Every function takes the ``device`` it runs on. On ``cuda``, what runs on the device alone is timed with CUDA
events (the device's own clock; a copy or a decode is asynchronous to the host). On ``cpu`` the same code runs as
the dry run's stand-in (:data:`tools.device_context.STAND_IN`), timed with ``perf_counter``: it exercises every
line that the GPU run takes, and its figures are never GPU figures. :func:`cuda_missing` says in one line why
there is no CUDA device here.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Subset

MATMUL_SIZE = 4096  # on the GPU: a bf16 product of about 0.2 ms on an H100
STAND_IN_MATMUL_SIZE = 256  # on the CPU stand-in: a product of a few ms on one thread


def cuda_missing() -> str | None:
    """Why the GPU measurements cannot run on this machine, in one line; None when a CUDA device is there."""
    if not torch.cuda.is_available():
        cuda = torch.version.cuda or "none (a CPU-only build)"
        return f"no CUDA device (torch {torch.__version__}, built with CUDA {cuda}; torch.cuda.is_available() is False)"
    return None


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed_ms(device: str, work: Callable[[], object]) -> float:
    """Milliseconds ``work`` takes: between two CUDA events on the current stream on ``cuda`` (the host is only
    waited on for the end event), by ``perf_counter`` on the CPU."""
    if device != "cuda":
        t0 = time.perf_counter()
        work()
        return (time.perf_counter() - t0) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, lowest, highest and the 10th/90th percentiles of ``values`` (at least one)."""
    ordered = sorted(values)
    decile = statistics.quantiles(ordered, n=10, method="inclusive") if len(ordered) > 1 else [ordered[0]] * 9
    return {"median": round(statistics.median(ordered), 4), "min": round(ordered[0], 4),
            "max": round(ordered[-1], 4), "p10": round(decile[0], 4), "p90": round(decile[-1], 4)}


def copy_bandwidth(nbytes: int, *, pinned: bool, repeats: int, device: str = "cuda", warmup: int = 2) -> list[float]:
    """GB/s (10^9 bytes per second) of ``repeats`` host-to-``device`` copies of a ``nbytes`` buffer
    (:func:`timed_ms`), after ``warmup`` untimed copies (allocator, first touch). Pinning needs an accelerator:
    on the CPU stand-in both kinds are pageable host-to-host copies."""
    rates = _copy_rates(nbytes, pinned and device == "cuda", pinned, warmup + repeats, device)[warmup:]
    if device == "cuda":
        torch.cuda.empty_cache()  # the buffers are gone: give their memory back for the next step
    return rates


def _copy_rates(nbytes: int, pin: bool, non_blocking: bool, copies: int, device: str) -> list[float]:
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pin)
    host.fill_(0xA5)  # every page written: a copy of untouched memory reads the shared zero page
    target = torch.empty(nbytes, dtype=torch.uint8, device=device)
    return [nbytes / (timed_ms(device, lambda: target.copy_(host, non_blocking=non_blocking)) * 1e-3) / 1e9
            for _ in range(copies)]


def read_bytes(path: str) -> torch.Tensor:
    """A file's bytes as a 1-D uint8 tensor in ordinary memory: all a worker does before a GPU decode.

    Not ``torchvision.io.read_file``: its tensor cannot be handed from a worker to the main process (the worker's
    queue fails on its storage with EBADF, and the batch never arrives).
    """
    with open(path, "rb") as handle:
        return torch.frombuffer(bytearray(handle.read()), dtype=torch.uint8)


def jpeg_bytes(root: str | Path, images: int | None = None) -> Subset[Any]:
    """The first ``images`` JPEGs of LFW under ``root`` as ``(bytes, label)``: LFW's own dataset with
    :func:`read_bytes` as its loader and no transform."""
    from lfw.data.dataset import LFWDataset

    files = LFWDataset(root, transform=None, loader=read_bytes)
    return Subset(files, range(min(len(files), images or len(files))))


def collate_bytes(items: list[tuple[torch.Tensor, int]]) -> list[Any]:
    """A batch of encoded images: ``[bytes_list, labels]``, the images' bytes as a list (they differ in length)
    of views into one tensor, so a worker hands the batch over in one shared-memory segment, not one per image.
    The pass counts the batch's images by the list's length (:func:`lfw.measure.loader_pass.batch_images`)."""
    flat = torch.cat([b for b, _ in items])
    return [list(flat.split([len(b) for b, _ in items])), torch.tensor([label for _, label in items])]


def decode_step(device: str) -> Callable[[Any], None]:
    """The pass's ``step``: decode the batch's bytes on ``device`` in one call, then synchronize."""
    from torchvision.io import decode_jpeg

    def step(batch: Any) -> None:
        decode_jpeg(batch[0], device=device)
        synchronize(device)

    return step


def decode_only(dataset: Subset[Any], batch_size: int, batches: int, device: str = "cuda") -> list[float]:
    """Images/s of ``decode_jpeg(list, device=device)`` on bytes already in memory, one value per batch
    (:func:`timed_ms`): the decoder's ceiling, with no reading and no DataLoader."""
    from torchvision.io import decode_jpeg

    data = [dataset[i][0] for i in range(min(len(dataset), batch_size * batches))]
    chunks = [data[i:i + batch_size] for i in range(0, len(data), batch_size)]
    decode_jpeg(chunks[0], device=device)  # warm-up: the decoder's handle and buffers
    synchronize(device)
    return [len(chunk) / (timed_ms(device, partial(decode_jpeg, chunk, device=device)) * 1e-3) for chunk in chunks]


class MatmulStep:
    """A training step of about a chosen length on ``device``: the batch copied over (non-blocking) and
    converted to float, then ``products`` bf16 products of two ``size`` x ``size`` matrices, synchronized before
    it returns. Every product reads the same two inputs and writes :attr:`output`, so the values stay finite
    however many there are (a chain of products of random matrices grows by about sqrt(size) per product and
    reaches bf16's infinity after a few dozen)."""

    def __init__(self, device: str, size: int, products: int) -> None:
        self.device, self.size, self.products = device, size, products
        self.a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
        self.b = torch.randn(size, size, device=device, dtype=torch.bfloat16) / size ** 0.5
        self.output = torch.empty(size, size, device=device, dtype=torch.bfloat16)

    def product(self) -> None:
        torch.mm(self.a, self.b, out=self.output)

    def __call__(self, batch: Any) -> None:
        images = batch[0].to(self.device, non_blocking=True)
        images = images.float().div_(255) if not images.is_floating_point() else images
        for _ in range(self.products):
            self.product()
        synchronize(self.device)

    def output_finite(self) -> bool:
        return bool(torch.isfinite(self.output).all())


def matmul_step(step_ms: float, device: str = "cuda", size: int | None = None,
                products: int | None = None) -> tuple[MatmulStep, dict[str, float]]:
    """A :class:`MatmulStep` that takes about ``step_ms`` on ``device``: ``products`` is calibrated here, when not
    given, from the median of ten timed products (:func:`timed_ms`) after two untimed ones; the returned facts
    give the products, the calibrated milliseconds per product and the size."""
    size = size or (MATMUL_SIZE if device == "cuda" else STAND_IN_MATMUL_SIZE)
    step = MatmulStep(device, size, 1)
    times = [timed_ms(device, step.product) for _ in range(12)]
    per_mm = statistics.median(times[2:])
    step.products = products or max(1, round(step_ms / per_mm))
    return step, {"matmuls_per_step": step.products, "ms_per_matmul": round(per_mm, 4), "matmul_size": size}
