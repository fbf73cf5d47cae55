"""Batches decoded straight into reusable shared-memory slots: the transfer between processes is a slot number.

Items of :class:`SlotBatches` are whole batches (``batch_size=None``; docs/decoders.md, "Slot batches"): a worker
returns a :class:`SlotBatch` of a few numbers (its rings the first time, :func:`receive_slot`); the main process
gets ``(images, labels)``, views of the slot: ``images`` (B, 3, H, W) channels-last, ``labels`` int64. Contract:
the slot is reused ``ring`` batches later; with ``prefetch_factor`` P a ring of P + 2 leaves one spare
(:meth:`~lfw.measure.LoaderConfig.build` refuses a smaller one); a consumer keeping a batch longer ``clone()``s it.
Every image must decode to one size; one that does not is a one-line error naming the file."""

from __future__ import annotations

import math
import os
import uuid
import weakref
from typing import Any

import numpy as np
import psutil
import torch
from torch.utils.data import Dataset, get_worker_info

from lfw.data.index import path_at
from lfw.errors import CorruptImageError, LFWError, corrupt_image_fix
from lfw.measure.stages import DECODE, READ, now
from lfw.pipelines.datasets import JpegFiles
from lfw.pipelines.decoders import decode, not_jpeg, read_file

RING = 4  # prefetch_factor 2 + the batch the consumer holds + one spare
Rings = tuple[torch.Tensor, torch.Tensor]  # images (ring, batch, H, W, 3) uint8, labels (ring, batch) int64
_ATTACHED: dict[tuple[str, int], Rings] = {}  # (dataset key, worker pid) -> that worker's rings, mapped here


def release_rings(key: str) -> None:
    """Let go of every ring of dataset ``key`` in this process (its memory is unmapped once no batch refers to it)."""
    for attached in [k for k in _ATTACHED if k[0] == key]:
        del _ATTACHED[attached]


def receive_slot(key: str, pid: int, slot: int, n: int, rings: Rings | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Unpickle a :class:`SlotBatch` in the main process: ``(images, labels)``, views of the slot; rings that
    arrive are kept (those of exited workers let go then, a dataset's when it is collected)."""
    if rings is not None:
        for gone in [k for k in _ATTACHED if not psutil.pid_exists(k[1])]:
            del _ATTACHED[gone]
        _ATTACHED[(key, pid)] = rings
    if (mine := _ATTACHED.get((key, pid))) is None:
        raise LFWError(f"a slot batch from worker pid {pid} names rings this process does not hold (its dataset "
                       "was collected, or the batch was unpickled by another process); iterate the loader that "
                       "made it")
    images, labels = mine
    return images[slot, :n].permute(0, 3, 1, 2), labels[slot, :n]


class SlotBatch:
    """What a worker returns for a batch: which slot of which rings, its length, and the rings the first time."""

    def __init__(self, key: str, pid: int, slot: int, n: int, rings: Rings | None) -> None:
        self.key, self.pid, self.slot, self.n, self.rings = key, pid, slot, n, rings

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return receive_slot, (self.key, self.pid, self.slot, self.n, self.rings)


def _shared(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` moved to shared memory, or a one-line error when the machine has not that much of it."""
    try:
        return tensor.share_memory_()
    except RuntimeError as exc:
        mib = tensor.numel() * tensor.element_size() / 2**20
        raise LFWError(f"cannot put a {mib:,.0f} MiB slot ring in shared memory ({' '.join(str(exc).split())[:80]}); "
                       "give the machine more shared memory (/dev/shm), or use a smaller ring or batch") from None


class SlotBatches(Dataset):
    """LFW's loose JPEGs as batches of ``batch_size`` decoded into reusable slots (see the module docstring).

    Args:
        root: LFW folder (as for :class:`~lfw.data.dataset.LFWDataset`).
        decoder: one of :data:`lfw.pipelines.decoders.DECODERS`; ``simplejpeg`` decodes into the slot itself.
        batch_size: images per batch (the last batch may be shorter).
        images: the first ``images`` images of the tree (all when None).
        ring: slots per loading process."""

    yields_batches = True  # items are whole batches: build the DataLoader with batch_size=None

    def __init__(self, root: str | os.PathLike[str], decoder: str = "simplejpeg", batch_size: int = 64,
                 images: int | None = None, ring: int = RING) -> None:
        if batch_size <= 0:
            raise LFWError(f"batch size must be a positive integer, got {batch_size}")
        if ring < 2:
            raise LFWError(f"a slot ring needs at least 2 slots (one decoding, one held), got {ring}")
        if images is not None and images < 1:
            raise LFWError(f"images must be a positive number (or None for all), got {images}")
        self.files = JpegFiles(root, decoder)
        self.stage_clock = self.files.stage_clock
        self.decoder = decoder
        self.images = len(self.files) if images is None else min(images, len(self.files))
        if self.images == 0:
            raise LFWError(f"no images to batch under {root}")
        self.batch_size = batch_size
        self.ring_size = ring
        self.paths = [path_at(self.files.paths, i) for i in range(self.images)]  # what cache modes touch
        self.labels = np.asarray(self.files.labels[: self.images], dtype=np.int64)
        height, width = decode(self.decoder, read_file(self.paths[0]), self.paths[0]).shape[1:]
        self.shape = (int(height), int(width))
        self.key = uuid.uuid4().hex
        weakref.finalize(self, release_rings, self.key)  # in the main process: the rings its workers sent
        self._ring: Rings | None = None
        self._ring_pid = 0
        self._next = 0
        self._sent = False

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_ring=None, _ring_pid=0, _next=0, _sent=False)  # a worker makes and announces its own ring
        return state

    def __len__(self) -> int:
        return math.ceil(self.images / self.batch_size)

    @property
    def ring_bytes(self) -> int:
        """Bytes of one loading process's rings (images and labels): the shared memory each worker holds."""
        return self.ring_size * self.batch_size * (self.shape[0] * self.shape[1] * 3 + 8)

    def _slot(self, in_worker: bool) -> tuple[Rings, int]:
        if self._ring is None or self._ring_pid != os.getpid():
            images = torch.empty((self.ring_size, self.batch_size, *self.shape, 3), dtype=torch.uint8)
            labels = torch.empty((self.ring_size, self.batch_size), dtype=torch.int64)
            self._ring = (_shared(images), _shared(labels)) if in_worker else (images, labels)
            self._ring_pid, self._next, self._sent = os.getpid(), 0, False
        slot, self._next = self._next, (self._next + 1) % self.ring_size
        return self._ring, slot

    def _decode_into(self, out: np.ndarray, path: str) -> None:
        t = now()
        data = read_file(path)
        t = self.stage_clock.add(READ, t, images=1)
        if self.decoder == "simplejpeg":
            import simplejpeg

            if (reason := not_jpeg(data)) is not None:
                raise CorruptImageError(f"cannot decode image {path}: {reason}; {corrupt_image_fix()}")
            try:
                image = simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True, buffer=out)
            except (ValueError, RuntimeError) as exc:
                detail = " ".join(str(exc).split())[:100]
                raise CorruptImageError(f"cannot decode image {path}: truncated, corrupt or not {self.shape[0]} x "
                                        f"{self.shape[1]} ({detail}); {corrupt_image_fix()}") from None
            decoded = image.shape[:2]
            self.stage_clock.count("simplejpeg")  # straight into the slot: the decoder counts here
        else:
            tensor = decode(self.decoder, data, path, clock=self.stage_clock)
            decoded = tuple(tensor.shape[1:])
            if decoded == self.shape:
                out[...] = tensor.permute(1, 2, 0).numpy()
        if tuple(decoded) != self.shape:
            raise CorruptImageError(f"image {path} is {decoded[0]} x {decoded[1]}, not {self.shape[0]} x "
                                    f"{self.shape[1]}: slot batches need one image size; resize the tree or use "
                                    "the per-image pipeline")
        self.stage_clock.add(DECODE, t)

    def __getitem__(self, b: int) -> tuple[torch.Tensor, torch.Tensor] | SlotBatch:
        if not 0 <= b < len(self):
            raise IndexError(f"batch {b} out of range (0..{len(self) - 1})")
        start, stop = b * self.batch_size, min((b + 1) * self.batch_size, self.images)
        in_worker = get_worker_info() is not None
        (images, labels), slot = self._slot(in_worker)
        block = images[slot].numpy()
        for j, i in enumerate(range(start, stop)):
            self._decode_into(block[j], self.paths[i])
        n = stop - start
        labels[slot, :n] = torch.from_numpy(self.labels[start:stop])
        if not in_worker:
            return images[slot, :n].permute(0, 3, 1, 2), labels[slot, :n]
        announce = None if self._sent else (images, labels)
        self._sent = True
        return SlotBatch(self.key, os.getpid(), slot, n, announce)
