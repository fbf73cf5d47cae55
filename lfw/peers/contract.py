"""The one contract every peer adapter meets, in the loader shape :class:`~lfw.measure.LoaderPass` measures.

Each ``iter()`` of a :class:`PeerLoader` is one epoch of whole batches ``(images, labels)`` over :class:`PassImages`:
``images`` ``uint8`` ``(B, 3, H, W)`` (``float32`` ImageNet-normalized for a ``float`` case; ``layout``: a view of
channels-last memory or not), ``labels`` ``int64`` ``(B,)``; with ``with_index=True`` also the images' positions
(:mod:`lfw.peers.check`). A batch has a deadline; :meth:`PeerLoader.close` stops what the peer left (docs/peers.md)."""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch

from lfw.cli.stop import stop_tree
from lfw.errors import LFWError, check_choice

KNOBS = ("threads", "workers")  # what a peer's parallelism counts: threads of this process, or worker processes
OUTPUTS = ("uint8", "float")
LAYOUTS = ("chw", "hwc-view")  # contiguous (B, 3, H, W), or a (B, 3, H, W) view of channels-last memory
PEER_TIMEOUT_S = 60.0  # the longest wait for one batch (the cold first batch of a spawned worker included)
STOP_GRACE_S = 2.0  # how long a process the peer left behind gets to end when asked
INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")  # not the peer's processes
MAX_PER_SHARD = 128  # images per shard or chunk of a peer's own format, where the pass is long enough
MIN_SHARDS = 16  # so up to 16 workers each read a shard of their own


@dataclass(frozen=True)
class PassImages:
    """The images every member of the peers group reads: ``paths`` and ``labels`` (``int64``), in scan order."""

    root: Path
    paths: tuple[str, ...]
    labels: np.ndarray
    classes: tuple[str, ...]

    @classmethod
    def first(cls, root: str | os.PathLike[str], images: int | None = None) -> PassImages:
        """The first ``images`` images of the tree at ``root`` (all when None), in scan order."""
        from lfw.data.dataset import scan_images

        scan = scan_images(root)
        count = len(scan.paths) if images is None else min(images, len(scan.paths))
        if count == 0:
            raise LFWError(f"no images under {root}: a peer needs at least one")
        return cls(scan.image_root, tuple(scan.paths[:count]), np.asarray(scan.labels[:count], dtype=np.int64),
                   tuple(scan.classes))

    def __len__(self) -> int:
        return len(self.paths)


@dataclass(frozen=True)
class PeerSpec:
    """One peer case: ``peer`` at ``parallelism`` (its knob, :data:`KNOBS`), batches of ``batch_size``, ``output``
    ``uint8`` or ``float``; ``mode`` picks between a peer's own engines (Grain: ``threads`` or ``processes``)."""

    peer: str
    parallelism: int
    knob: str = "threads"
    output: str = "uint8"
    batch_size: int = 64
    mode: str = ""

    def __post_init__(self) -> None:
        check_choice("peer knob", self.knob, KNOBS)
        check_choice("peer output", self.output, OUTPUTS)
        if self.parallelism < 1 or self.batch_size < 1:
            raise LFWError(f"{self.peer}: parallelism and batch size must be 1 or more, got {self.parallelism} and "
                           f"{self.batch_size}")

    @property
    def label(self) -> str:
        """``dali-t2``, ``grain-processes-w2``, ``spdl-t2-float``: the case id."""
        words = (self.peer, self.mode, f"{self.knob[0]}{self.parallelism}", "float" if self.output == "float" else "")
        return "-".join(w for w in words if w)


def library(name: str) -> Any:
    """A peer's module, imported on first use inside :func:`process_kept` (typed ``Any``: the peers are optional)."""
    if name in sys.modules:  # the hot path: SPDL's decode asks for its module once per batch
        return sys.modules[name]
    with process_kept():
        return importlib.import_module(name)


@contextmanager
def process_kept() -> Iterator[None]:
    """Puts back on exit what a peer's import or conversion changes in this process: the start method, the SIGINT and
    SIGTERM handlers, the environment, the root logger's handlers and torch's intra-op threads (only what changed)."""
    method = multiprocessing.get_start_method(allow_none=True)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    environment, root, threads = dict(os.environ), list(logging.root.handlers), torch.get_num_threads()
    try:
        yield
    finally:
        if multiprocessing.get_start_method(allow_none=True) != method:
            multiprocessing.set_start_method(method, force=True)
        for number, handler in handlers.items():
            if signal.getsignal(number) is not handler:
                signal.signal(number, handler)
        for key in set(os.environ) - set(environment):
            del os.environ[key]
        os.environ.update({k: v for k, v in environment.items() if os.environ.get(k) != v})
        logging.root.handlers[:] = root
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def not_importable(name: str, install: str, *modules: str) -> str | None:
    """Why ``modules`` cannot be imported (one line: the peer, the error, ``install``), or None."""
    try:
        for module in modules:
            library(module)
    except Exception as exc:  # an import error, or a wheel that cannot load its own libraries
        return f"{name} not importable ({' '.join(str(exc).split())[:160]}); {install}"
    return None


def labels_tensor(labels: Any) -> torch.Tensor:
    """Labels as the contract's ``int64`` vector, whatever shape and integer type the peer gave."""
    return torch.as_tensor(np.asarray(labels)).reshape(-1).to(torch.int64)


class Feeder:
    """A daemon thread that runs ``next()`` of the peer's iterator on request, so a batch can be given up on after
    ``timeout_s`` (a hang is one line, not a stuck run); it never fetches ahead of the consumer."""

    def __init__(self, name: str) -> None:
        self._requests: queue.Queue[Iterator[Any] | None] = queue.Queue()
        self._results: queue.Queue[tuple[bool, Any]] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=f"lfw-peer-{name}", daemon=True)
        self._thread.start()
        self.stuck = False

    def next(self, source: Iterator[Any], timeout_s: float) -> Any:
        if self.stuck:
            raise RuntimeError("timed out earlier: its feeder thread is still waiting for the peer")
        self._requests.put(source)
        try:
            ok, value = self._results.get(timeout=timeout_s)
        except queue.Empty:
            self.stuck = True
            raise RuntimeError(f"no batch within {timeout_s:g} s: timed out (the peer hangs or is far too "
                               "slow)") from None
        if not ok:
            raise value
        return value

    def _loop(self) -> None:
        while (source := self._requests.get()) is not None:
            try:
                self._results.put((True, next(source)))
            except BaseException as exc:  # StopIteration too: handed to the caller, raised there
                self._results.put((False, exc))

    def stop(self) -> None:
        self._requests.put(None)
        if not self.stuck:
            self._thread.join(5.0)


def descendants() -> set[int]:
    """Pids of every process under this one, except the interpreter's resource tracker and fork server."""
    found: set[int] = set()
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return found
    for proc in children:
        try:
            command = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if not any(helper in command for helper in INTERPRETER_HELPERS):
            found.add(proc.pid)
    return found


class PeerPass(Iterator[Any]):
    """One epoch of a :class:`PeerLoader` (its first batch's types checked; indices dropped unless asked)."""

    def __init__(self, loader: PeerLoader, source: Iterator[Any], with_index: bool) -> None:
        self._loader = loader
        self._source = source
        self._left = len(loader)
        self._with_index = with_index
        self._checked = False

    def __next__(self) -> Any:
        if self._left <= 0:
            raise StopIteration
        try:
            images, labels, indices = self._loader.feeder.next(self._source, self._loader.timeout)
        except StopIteration:
            raise RuntimeError(f"{self._loader.name}: the epoch ended {self._left} batches early") from None
        self._left -= 1
        if not self._checked:
            self._loader.check_types(images, labels)
            self._checked = True
        return (images, labels, indices) if self._with_index else (images, labels)

    def close(self) -> None:
        """The end of a pass: a peer that persists keeps its engine; one that does not stops it here."""
        if not self._loader.persistent_workers:
            self._loader.stop_engine()


class PeerLoader:
    """A peer's engine behind the contract. Subclasses implement :meth:`start` (build the engine, inside the clock),
    :meth:`epoch` (one epoch's ``(images, labels, indices)``) and :meth:`stop` (idempotent).

    Args:
        spec: the case.
        images: what it reads.
        layout: :data:`LAYOUTS`: how its batches are laid out in memory.
        persistent: the engine lives from one pass to the next (else each pass builds and stops its own).
        processes: worker processes it loads in (0: threads of this process): the start-up wave."""

    def __init__(self, spec: PeerSpec, images: PassImages, *, layout: str, persistent: bool, processes: int = 0,
                 timeout_s: float = PEER_TIMEOUT_S) -> None:
        check_choice("layout", layout, LAYOUTS)
        if len(images) % spec.batch_size:
            raise LFWError(f"{spec.label}: {len(images)} images are not whole batches of {spec.batch_size}")
        self.spec = spec
        self.images = images
        self.layout = layout
        self.persistent_workers = persistent
        self.num_workers = processes
        self.timeout = timeout_s
        self.name = spec.label
        self._feeder: Feeder | None = None
        self._started = False
        self._baseline: set[int] | None = None  # processes alive before this pass (none of them this peer's)
        self._noted = False  # the baseline was taken, untimed, for the coming pass
        self._in_pass = False  # a pass began whose new processes have not been adopted yet
        self._owned: set[int] = set()

    def start(self) -> None:
        raise NotImplementedError

    def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.images) // self.spec.batch_size

    @property
    def feeder(self) -> Feeder:
        if self._feeder is None:
            self._feeder = Feeder(self.name)
        return self._feeder

    def iterate(self, with_index: bool = False) -> PeerPass:
        """One epoch; the engine started first where it is not running (inside the caller's clock)."""
        if not self._noted:
            self._baseline = descendants()
        self._noted, self._in_pass = False, True
        if self._started and not self.persistent_workers:  # the previous pass's engine, not stopped by its close()
            self.stop_engine()
        if not self._started:
            self._started = True
            try:
                self.start()
            except BaseException:
                self.close()
                raise
        return PeerPass(self, self.epoch(), with_index)

    def __iter__(self) -> PeerPass:
        return self.iterate()

    def note_processes(self) -> None:
        """Untimed, before a pass: the processes alive now are not this peer's (else ``iter()`` notes them)."""
        self._baseline, self._noted = descendants(), True

    def worker_pids(self, iterator: Any = None) -> list[int]:
        """The processes this peer started that are alive; with ``iterator``, the pass's new ones too."""
        if iterator is not None and self._in_pass:
            self._adopt()
        return [pid for pid in sorted(self._owned) if _running(pid)]

    def _adopt(self) -> None:
        """Take as this peer's the processes that appeared since the baseline of the pass in flight."""
        if self._baseline is not None and self._in_pass:
            self._owned |= descendants() - self._baseline
        self._in_pass = False

    def check_types(self, images: Any, labels: Any) -> None:
        """The contract's types and shapes, on a pass's first batch: a one-line error naming the peer."""
        want = torch.uint8 if self.spec.output == "uint8" else torch.float32
        size = self.spec.batch_size
        if not isinstance(images, torch.Tensor) or images.dtype != want or images.ndim != 4 or \
                images.shape[0] != size or images.shape[1] != 3:
            got = f"{type(images).__name__} {getattr(images, 'dtype', '')} {tuple(getattr(images, 'shape', ()))}"
            raise LFWError(f"{self.name}: a batch must be {want} of shape ({size}, 3, H, W), got {got}")
        if not isinstance(labels, torch.Tensor) or labels.dtype != torch.int64 or tuple(labels.shape) != (size,):
            raise LFWError(f"{self.name}: labels must be int64 of shape ({size},), got "
                           f"{getattr(labels, 'dtype', type(labels).__name__)} {tuple(getattr(labels, 'shape', ()))}")

    def output(self, images: torch.Tensor) -> torch.Tensor:
        """A uint8 batch as the case hands it out: as it is, or normalized for a ``float`` case (in this process)."""
        if self.spec.output != "float":
            return images
        from lfw.pipelines.datasets import normalize

        return normalize(images)

    def stop_engine(self) -> None:
        """Stop the engine (the next ``iter()`` starts a new one)."""
        if self._started:
            self._started = False
            self.stop()

    def close(self) -> None:
        """Stop the engine, the feeder, then by signal any process the peer left; raises a one-line ``RuntimeError``
        (after the clean-up) saying what had to be forced."""
        problems = []
        try:
            self.stop_engine()
        except Exception as exc:
            problems.append(f"its engine failed to stop ({' '.join(str(exc).split())[:200]})")
        if self._feeder is not None:
            self._feeder.stop()
            if self._feeder.stuck:
                problems.append("a batch it never delivered holds a thread of this process (a daemon)")
            self._feeder = None
        self._adopt()
        left = self.worker_pids()
        stop_tree(left, STOP_GRACE_S)
        if left:
            problems.append(f"{len(left)} of its processes outlived its shutdown and were stopped by signal")
        self._owned.clear()
        if problems:
            raise RuntimeError(f"{self.name}: " + "; ".join(problems))


class DataLoaderPeer(PeerLoader):
    """A peer whose engine is a DataLoader subclass, made by :meth:`make_loader` with persistent workers."""

    def __init__(self, spec: PeerSpec, images: PassImages) -> None:
        super().__init__(spec, images, layout="chw", persistent=True, processes=spec.parallelism)
        self._loader: Any = None

    def make_loader(self) -> Any:
        raise NotImplementedError

    def fields(self, batch: Any) -> tuple[Any, Any, Any]:
        """``(images, labels, indices)`` of one of its batches (by default the batch is that tuple)."""
        return batch

    def start(self) -> None:
        self._loader = self.make_loader()

    def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        for batch in self._loader:
            images, labels, index = self.fields(batch)
            yield self.output(images), labels, index

    def stop(self) -> None:
        from lfw.measure.torch_compat import drop_persistent_workers

        loader, self._loader = self._loader, None
        if loader is not None:
            drop_persistent_workers(loader)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def images_per_shard(images: int) -> int:
    """Images per shard or chunk for a pass of ``images``: at most :data:`MAX_PER_SHARD`, :data:`MIN_SHARDS` shards."""
    return max(1, min(MAX_PER_SHARD, images // MIN_SHARDS))
