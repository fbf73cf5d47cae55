"""A DataLoader configuration: every knob lfw-bench measures, validated once, built one way."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from lfw.data.collate import collate_skipping
from lfw.errors import LFWError, check_choice

START_METHODS = ("fork", "forkserver", "spawn")
DEFAULT_TIMEOUT_S = 120.0
PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h): a signal the kernel sends when the parent thread exits


def die_with_parent(worker_id: int) -> None:
    """``worker_init_fn`` of every loader lfw-bench builds: a worker ends when the process that started it ends,
    however that ended (SIGKILL, the OOM killer): the kernel's ``PR_SET_PDEATHSIG`` on Linux, and a parent already
    gone is seen through multiprocessing's sentinel (torch's watchdog misses a parent killed before it starts)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():
        os._exit(1)


@dataclass(frozen=True)
class LoaderConfig:
    """The knobs of :class:`torch.utils.data.DataLoader` that lfw-bench varies.

    ``timeout_s`` bounds the wait for any one batch when workers are used, so a stuck worker fails with a clear
    message instead of hanging the run. ``seed`` fixes shuffling and the workers' random augmentation.
    """

    batch_size: int = 64
    num_workers: int = 0
    pin_memory: bool = False
    persistent_workers: bool = False
    prefetch_factor: int | None = None
    start_method: str | None = None
    shuffle: bool = False
    drop_last: bool = False
    seed: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.batch_size <= 0:
            raise LFWError(f"batch size must be a positive integer, got {self.batch_size}")
        if self.num_workers < 0:
            raise LFWError(f"num_workers must be 0 (load in the main process) or more, got {self.num_workers}")
        if self.prefetch_factor is not None and self.prefetch_factor <= 0:
            raise LFWError(f"prefetch_factor must be a positive integer, got {self.prefetch_factor}")
        if self.start_method is not None:
            check_choice("start method", self.start_method, START_METHODS)
        if self.start_method and self.start_method not in multiprocessing.get_all_start_methods():
            raise LFWError(f"start method {self.start_method!r} is not available on this platform")

    def _check_whole_batches(self, dataset: Dataset) -> None:
        """A dataset of whole batches: no ``drop_last`` (it batches itself), and a slot ring (``ring_size``) with a
        slot for every batch in flight, the one the consumer holds and one spare."""
        if self.drop_last:
            raise LFWError("drop_last applies to batches the loader makes; this dataset yields whole batches "
                           "(the last one may be shorter): build it with drop_last=False")
        ring = getattr(dataset, "ring_size", None)
        needed = (self.prefetch_factor or 2) + 2
        if self.num_workers and isinstance(ring, int) and ring < needed:
            raise LFWError(f"a slot ring of {ring} is too small for prefetch_factor={self.prefetch_factor or 2}: a "
                           f"worker would overwrite a batch still in use; make the dataset with ring >= {needed}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def build(self, dataset: Dataset, collate_fn: Any = None, sampler: Sampler | None = None) -> DataLoader:
        """The DataLoader for ``dataset``; worker-only options are passed only when there are workers.

        ``sampler`` (e.g. a ``DistributedSampler``) decides the order itself, so ``shuffle`` must then be off. A
        dataset whose ``yields_batches`` is true (:class:`~lfw.pipelines.slots.SlotBatches`) makes its own batches
        of ``batch_size``: the loader then batches nothing (``batch_size=None``) and collates nothing.
        """
        if sampler is not None and self.shuffle:
            raise LFWError("a sampler decides the order: build it with shuffle=False (the sampler shuffles)")
        kwargs: dict[str, Any] = {}
        if self.num_workers > 0:  # None for multiprocessing_context is DataLoader's own default
            kwargs = {"persistent_workers": self.persistent_workers, "prefetch_factor": self.prefetch_factor or 2,
                      "timeout": self.timeout_s, "worker_init_fn": die_with_parent,
                      "multiprocessing_context": self.start_method}
        if collate_fn is None and getattr(dataset, "on_error", "raise") == "skip":
            collate_fn = collate_skipping
        batched = getattr(dataset, "yields_batches", False)  # items are whole batches of batch_size already
        if batched:
            self._check_whole_batches(dataset)
        return DataLoader(
            dataset,
            batch_size=None if batched else self.batch_size,
            shuffle=self.shuffle,
            num_workers=self.num_workers,
            pin_memory=self.pin_memory and torch.cuda.is_available(),
            drop_last=self.drop_last,
            collate_fn=collate_fn,
            sampler=sampler,
            generator=torch.Generator().manual_seed(self.seed),
            **kwargs,
        )
