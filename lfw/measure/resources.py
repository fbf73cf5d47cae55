"""What a DataLoader configuration holds while it runs (:func:`loader_need`, from its knobs and one item of its
dataset), against what this process has (:meth:`Limits.read`): checked before a pass (:func:`shortfall`).
Estimates err towards skipping (docs/containers.md)."""

from __future__ import annotations

import os
import resource
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import torch

from lfw.measure.cpus import usable_cores
from lfw.measure.memory import SHM
from lfw.measure.moves import batch_bytes

MiB = 2**20
DEFAULT_PREFETCH = 2  # torch's prefetch_factor when workers are used and none is given
FDS_PER_WORKER = 8  # queues, pipes, sentinel (a unit test holds the model to a real loader)
FDS_PER_BATCH = 2  # per batch in flight: the segment and its duplicate while handed over
FDS_SPARE = 16  # room for the files a pass reads
WORKER_PRIVATE_BYTES = 128 * MiB  # a forked worker's beyond its batches: well above the worker USS groups record
SHM_SPARE = MiB  # tmpfs rounds every segment up to pages; keep a little room


@dataclass(frozen=True)
class Need:
    """What one loader holds while a pass runs: ``shm_in_flight`` (``/dev/shm`` for the batches in flight),
    ``shm_held`` (``/dev/shm`` held until the loader is gone: slot rings), ``memory`` (beyond this process), ``fds``
    (the main process's at the peak), ``in_flight`` batches and ``batch_bytes``."""

    shm_in_flight: int
    shm_held: int
    memory: int
    fds: int
    in_flight: int
    batch_bytes: int
    workers: int
    what: str  # the batches in words: "5 float32 batches of 64 x 3 x 250 x 250"

    @property
    def shm(self) -> int:
        return self.shm_in_flight + self.shm_held


@dataclass(frozen=True)
class Limits:
    """What this process may use. None: no limit known (no ``/dev/shm``, no cgroup limit)."""

    shm_total: int | None
    shm_free: int | None
    open_files: int
    memory_available: int | None
    memory_limit: int | None  # the cgroup's limit, None when unlimited
    cores: int

    @classmethod
    def read(cls, shm: Path = SHM, cgroup: Path = Path("/sys/fs/cgroup")) -> Limits:
        """This process's limits now."""
        shm_total = shm_free = None
        if shm.is_dir():
            st = os.statvfs(shm)
            shm_total, shm_free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit, used = cgroup_memory(cgroup)
        available = psutil.virtual_memory().available
        if limit is not None:
            available = min(available, max(0, limit - (used or 0)))
        open_files = soft if soft != resource.RLIM_INFINITY else 2**20
        return cls(shm_total, shm_free, open_files, available, limit, usable_cores())

    def machine_info(self) -> dict[str, Any]:
        """The limits as ``machine_info`` keys (MiB, rounded down)."""
        def mib(value: int | None) -> int | None:
            return None if value is None else value // MiB

        return {"shm_total_mib": mib(self.shm_total), "shm_free_mib": mib(self.shm_free),
                "open_files_limit": self.open_files, "memory_limit_mib": mib(self.memory_limit)}


def cgroup_memory(root: Path) -> tuple[int | None, int | None]:
    """The cgroup's memory limit and usage in bytes (v2 ``memory.max``, else v1 ``memory.limit_in_bytes``):
    limit None where the cgroup sets none, both None where there is no cgroup file to read."""
    for limit_file, usage_file in (("memory.max", "memory.current"),
                                   ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        try:
            raw = (root / limit_file).read_text().strip()
            usage = int((root / usage_file).read_text().strip())
            limit = None if raw == "max" else int(raw)
        except (OSError, ValueError):
            continue
        if limit is None or limit >= 2**60:  # v1 writes a page-rounded 2**63 for "no limit"
            return None, usage
        return limit, usage
    return None, None


def _describe(item: Any) -> str:
    first = item[0] if isinstance(item, Sequence) and not isinstance(item, str | bytes) and item else item
    if isinstance(first, torch.Tensor):
        return f"{str(first.dtype).removeprefix('torch.')} " + " x ".join(str(d) for d in first.shape)
    return type(first).__name__


def item_nbytes(dataset: Any) -> tuple[int, str]:
    """One item's bytes and shape in words: its first item, loaded here (one decode). A dataset whose first item
    cannot be loaded sizes as 0: its pass then reports the dataset's own error in full."""
    try:
        item = dataset[0]
    except Exception:
        return 0, "items of unknown size"
    return batch_bytes(item), _describe(item)


def loader_need(loader: Any, *, pinned_copy: bool = False) -> Need:
    """What ``loader`` (a :class:`torch.utils.data.DataLoader`) holds while a pass runs (:class:`Need`). A dataset
    that makes whole batches in rings of its own (``ring_bytes``: one loading process's ring) holds ``ring_bytes``
    per worker instead and sends only slot numbers."""
    dataset, workers = loader.dataset, int(loader.num_workers)
    prefetch = (loader.prefetch_factor or DEFAULT_PREFETCH) if workers else 0
    in_flight = workers * prefetch + 1 if workers else 1
    ring = getattr(dataset, "ring_bytes", None)
    if isinstance(ring, int):
        batch, shm_in_flight, shm_held = ring // max(1, getattr(dataset, "ring_size", 1)), 0, ring * workers
        what = (f"{workers} worker ring{'s' if workers != 1 else ''} of {getattr(dataset, 'ring_size', '?')} "
                f"slots of {getattr(dataset, 'batch_size', '?')} images")
    else:
        item, shape = item_nbytes(dataset)
        batch = item if getattr(dataset, "yields_batches", False) else item * int(loader.batch_size or 1)
        shm_in_flight, shm_held = (batch * in_flight if workers else 0), 0
        what = f"{in_flight} batch{'es' if in_flight > 1 else ''} of {loader.batch_size or 'whole'} x {shape}"
    pinned = 2 * batch if (loader.pin_memory or pinned_copy) else 0
    memory = shm_in_flight + shm_held + pinned + workers * WORKER_PRIVATE_BYTES + (0 if workers else batch)
    fds = open_fds() + FDS_PER_WORKER * workers + FDS_PER_BATCH * (in_flight if workers else 0) + FDS_SPARE
    return Need(shm_in_flight, shm_held, memory, fds, in_flight, batch, workers, what)


def open_fds() -> int:
    """Descriptors this process has open now."""
    return psutil.Process().num_fds()


def shortfall(need: Need, limits: Limits, *, held_beside: int = 0, in_flight_beside: int = 0,
              alone: str = "") -> str | None:
    """Why ``need`` does not fit ``limits`` (one line: the need, the limit, the fix), or None. ``held_beside`` and
    ``in_flight_beside``: what other live loaders hold; ``alone``: how to run the case by itself."""
    if need.shm and limits.shm_free is not None:
        total = held_beside + need.shm_held + max(in_flight_beside, need.shm_in_flight)
        if total + SHM_SPARE > limits.shm_free:
            others = total - need.shm
            beside = f" beside ~{others / MiB:,.0f} MiB its group's other cases use" if others > 0 else ""
            by_itself = (f", or run it alone ({alone})" if alone and others > 0
                         and need.shm + SHM_SPARE <= limits.shm_free else "")
            return (f"needs ~{need.shm / MiB:,.0f} MiB of /dev/shm for {need.what}{beside}, "
                    f"{limits.shm_free / MiB:,.0f} MiB free: docker run --shm-size=1g, or fewer workers, a smaller "
                    f"prefetch_factor or batch{', or uint8 batches' if 'float' in need.what else ''}{by_itself}")
    if need.fds > limits.open_files:
        return (f"needs ~{need.fds:,} open files ({need.workers} workers, {need.in_flight} batches in flight), "
                f"ulimit -n is {limits.open_files:,}: raise it (ulimit -n 4096) or use fewer workers")
    if limits.memory_available is not None and need.memory > limits.memory_available:
        where = "the cgroup's memory limit leaves" if limits.memory_limit is not None else "the machine has"
        return (f"needs ~{need.memory / MiB:,.0f} MiB of memory ({need.workers} workers, {need.what}), {where} "
                f"{limits.memory_available / MiB:,.0f} MiB available: give the container more memory, or use "
                "fewer workers or a smaller batch")
    return None
