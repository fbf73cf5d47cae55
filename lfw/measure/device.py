"""What only an accelerator has: host-to-device copies, a training step of a chosen length, the device's own clock.

Every function takes the ``device`` it runs on. On ``cuda``, what runs on the device alone is timed with CUDA events
(the device's own clock: a copy or a decode is asynchronous to the host). On ``cpu`` the same code runs as the CPU
stand-in of a machine without CUDA (the device campaign's dry run), timed with ``perf_counter``: it takes every line
the GPU run takes, and its figures are never GPU figures (records mark them, :data:`lfw.suite.skips.STAND_IN`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch

MATMUL_SIZE = 4096  # on the GPU: a bf16 product of about 0.2 ms on an H100
STAND_IN_MATMUL_SIZE = 256  # on the CPU stand-in: a product of a few ms on one thread
LARGE_COPY_BYTES = 256 * 2**20  # the buffer whose best pinned copy is the machine's measured copy peak


def accelerator() -> str:
    """Where a GPU member runs: ``cuda``, else ``cpu`` (the stand-in, for a run that allows one)."""
    return "cuda" if torch.cuda.is_available() else "cpu"


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


def copy_rounds(sizes: Mapping[str, int], rounds: int, device: str, warmup: int = 2) -> dict[str, list[float]]:
    """GB/s (10^9 bytes per second) of host-to-``device`` copies, pinned and pageable, of each buffer of ``sizes``
    (label -> bytes): ``<label>-pinned`` and ``<label>-pageable``, one copy of each per round in turn, so every kind
    sees the same drift; after ``warmup`` untimed copies of each (allocator, first touch). Pinning needs an
    accelerator: on the CPU stand-in both kinds are pageable host-to-host copies."""
    buffers: dict[str, tuple[torch.Tensor, torch.Tensor, bool]] = {}
    for label, nbytes in sizes.items():
        for pinned in (True, False):
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned and device == "cuda")
            host.fill_(0xA5)  # every page written: a copy of untouched memory reads the shared zero page
            target = torch.empty(nbytes, dtype=torch.uint8, device=device)
            buffers[f"{label}-{'pinned' if pinned else 'pageable'}"] = (host, target, pinned)
    rates: dict[str, list[float]] = {key: [] for key in buffers}
    for number in range(warmup + rounds):
        for key, (host, target, pinned) in buffers.items():
            ms = timed_ms(device, partial(target.copy_, host, non_blocking=pinned))
            if number >= warmup:
                rates[key].append(host.numel() / (ms * 1e-3) / 1e9)
    del buffers
    if device == "cuda":
        torch.cuda.empty_cache()  # the buffers are gone: give their memory back to what runs next
    return rates


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


def matmul_step(step_ms: float, device: str, size: int | None = None,
                products: int | None = None) -> tuple[MatmulStep, float]:
    """A :class:`MatmulStep` that takes about ``step_ms`` on ``device``, and the milliseconds of one product:
    ``products`` is calibrated here, when not given, from the median of ten timed products (:func:`timed_ms`) after
    two untimed ones."""
    size = size or (MATMUL_SIZE if device == "cuda" else STAND_IN_MATMUL_SIZE)
    step = MatmulStep(device, size, 1)
    per_mm = statistics.median([timed_ms(device, step.product) for _ in range(12)][2:])
    step.products = products or max(1, round(step_ms / per_mm))
    return step, per_mm
