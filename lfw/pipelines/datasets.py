"""The datasets a decode pipeline reads through, each giving ``(image, label)`` items, the image a (3, H, W) ``uint8``
or ImageNet-normalized ``float32`` tensor, optionally resized to ``size`` x ``size``: :class:`JpegFiles` (loose JPEGs,
optionally on a decode thread pool), :class:`TarShards` (one sequential read per shard) and :class:`DecodedMemmap`
(a pre-decoded uint8 memmap: no decode, the decode-free ceiling)."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, get_args

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info
from torchvision.transforms.v2 import functional as F

from lfw.data.dataset import LFWDataset, OnError
from lfw.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from lfw.errors import CorruptImageError, LFWError, check_choice
from lfw.measure.stages import DECODE, READ, TRANSFORM, StageClock, now
from lfw.pipelines.decoders import DECODERS, check_decoder, decode, read_file

OUTPUTS = ("uint8", "float")
Item = tuple[torch.Tensor, int] | None
T = TypeVar("T")


def normalize(images: torch.Tensor) -> torch.Tensor:
    """``uint8`` images (one or a batch) to ``float32`` in ImageNet units: what ``ToTensor`` + ``Normalize`` give."""
    return F.normalize(images.float().div_(255), IMAGENET_MEAN, IMAGENET_STD)


class ProcessThreads:
    """A thread pool owned by the process that uses it: made lazily, never pickled, remade larger when asked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pool: ThreadPoolExecutor | None = None
        self._pid = self._size = 0

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_pool": None, "_pid": 0, "_size": 0}

    def map(self, size: int, fn: Callable[[int], T], items: Sequence[int]) -> list[T]:
        """``[fn(i) for i in items]`` on this process's pool of at least ``size`` threads."""
        if self._pool is None or self._pid != os.getpid() or self._size < size:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.shutdown(wait=False)
            self._pool = ThreadPoolExecutor(size, thread_name_prefix=self.name)
            self._pid, self._size = os.getpid(), size
        return list(self._pool.map(fn, items))


class TensorOutput:
    """Resize to ``size`` (antialiased), then ``uint8`` or normalized ``float32``, timed as the ``transform`` stage."""

    def __init__(self, clock: StageClock, size: int | None = None, output: str = "uint8") -> None:
        check_choice("output", output, OUTPUTS)
        if size is not None and size <= 0:
            raise LFWError(f"output size must be a positive number of pixels, got {size}")
        self.size = size
        self.output = output
        self.clock = clock

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        t = now()
        if self.size is not None:
            image = F.resize(image, [self.size, self.size], antialias=True)
        out = normalize(image) if self.output == "float" else image
        self.clock.add(TRANSFORM, t)
        return out


class DecodeFile:
    """The loader of :class:`JpegFiles`: a path to a (3, H, W) uint8 tensor (``read`` and ``decode`` timed)."""

    def __init__(self, clock: StageClock, decoder: str, size: int | None = None) -> None:
        self.decoder = check_decoder(decoder)
        self.size = size
        self.clock = clock

    def __call__(self, path: str) -> torch.Tensor:
        t = now()
        data = read_file(path)
        t = self.clock.add(READ, t, images=1)
        image = decode(self.decoder, data, path, self.size, self.clock)
        self.clock.add(DECODE, t)
        return image


class JpegFiles(LFWDataset):
    """LFW's loose JPEGs through ``decoder``; with ``threads > 0`` the DataLoader's batched fetch (``__getitems__``)
    decodes the batch on the loading process's :class:`ProcessThreads`.

    Args:
        root, on_error: as for :class:`~lfw.data.dataset.LFWDataset` (``on_error``: ``"raise"`` or ``"skip"``).
        decoder: one of :data:`lfw.pipelines.decoders.DECODERS`.
        size: resize to ``size`` x ``size`` after decoding (``pil-draft`` decodes at a reduced scale for it).
        output: ``"uint8"`` or ``"float"`` (normalized in the loading process).
        threads: 0 for one item at a time; N for a pool of N decode threads per loading process."""

    def __init__(self, root: str | os.PathLike[str], decoder: str = "pil", size: int | None = None,
                 output: str = "uint8", threads: int = 0, on_error: OnError = "raise") -> None:
        if threads < 0:
            raise LFWError(f"threads must be 0 (one item at a time) or more, got {threads}")
        self.stage_clock = StageClock(counts=DECODERS)
        super().__init__(root, transform=TensorOutput(self.stage_clock, size, output), index="numpy",
                         on_error=on_error,
                         loader=DecodeFile(self.stage_clock, decoder, size if decoder == "pil-draft" else None))
        self.threads = threads
        self.pool = ProcessThreads("lfw-decode")

    def __getitems__(self, indices: Sequence[int]) -> list[Item]:
        """A whole batch, on this process's thread pool when ``threads > 0`` (the DataLoader calls this)."""
        if self.threads == 0:
            return [self[i] for i in indices]
        return self.pool.map(self.threads, self.__getitem__, indices)


class TarShards(IterableDataset):
    """Images stored as tar shards (``<Person>/<file>.jpg`` members), read sequentially, decoded by ``decoder``;
    worker n reads every n-th shard. A member that cannot be decoded is a :class:`~lfw.errors.CorruptImageError`
    naming ``shard:member`` or, with ``on_error="skip"``, dropped and counted in :attr:`bad_files`."""

    def __init__(self, shards: Sequence[Path], classes: Sequence[str], images: int, decoder: str = "pil",
                 size: int | None = None, output: str = "uint8", on_error: OnError = "raise") -> None:
        if not shards:
            raise LFWError("no tar shards given; build them with lfw.pipelines.storage.tar_shards")
        check_choice("on_error", on_error, get_args(OnError))
        self.shards = [Path(s) for s in shards]
        self.paths = [str(s) for s in self.shards]  # the files it reads (what warm and cold cache modes touch)
        self.label_of = {name: i for i, name in enumerate(classes)}
        self.images = images
        self.decoder = check_decoder(decoder)
        self.draft = size if decoder == "pil-draft" else None
        self.stage_clock = StageClock(counts=DECODERS)
        self.finish = TensorOutput(self.stage_clock, size, output)
        self.on_error = on_error
        self.bad_files = 0

    def __len__(self) -> int:
        return self.images

    def mine(self) -> list[Path]:
        """The shards this process reads: all of them in the main process, every n-th in worker n."""
        info = get_worker_info()
        return self.shards if info is None else self.shards[info.id::info.num_workers]

    def __iter__(self) -> Iterator[Item]:
        for shard in self.mine():
            yield from self._read(shard)

    def _read(self, shard: Path) -> Iterator[Item]:
        try:
            clock = self.stage_clock
            t = now()
            with tarfile.open(shard, mode="r|") as tar:  # a stream: one sequential read of the shard
                for member in tar:  # the read stage: from the end of the last item to this member's bytes
                    if not member.isfile():
                        continue
                    handle = tar.extractfile(member)
                    data = handle.read() if handle is not None else b""
                    t = clock.add(READ, t, images=1)
                    try:
                        image = decode(self.decoder, data, f"{shard.name}:{member.name}", self.draft, clock)
                        t = clock.add(DECODE, t)
                    except CorruptImageError:
                        if self.on_error == "raise":
                            raise
                        self.bad_files += 1
                        yield None
                        t = now()
                        continue
                    yield self.finish(image), self.label_of.get(member.name.split("/", 1)[0], -1)
                    t = now()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise CorruptImageError(f"cannot read tar shard {shard}: {exc}; rebuild it (delete the file and "
                                    "run again) or replace it") from None


class DecodedMemmap(Dataset):
    """Images decoded once into a (N, H, W, 3) ``uint8`` ``.npy`` array, read through a memory map."""

    def __init__(self, images: Path, labels: Path, size: int | None = None, output: str = "uint8") -> None:
        self.images = np.load(images, mmap_mode="r")
        self.paths = [str(images)]  # the file it reads (what warm and cold cache modes touch)
        self.labels = np.load(labels)
        if self.images.ndim != 4 or self.images.dtype != np.uint8 or len(self.labels) != len(self.images):
            raise LFWError(f"{images} is not a decoded LFW memmap (N x H x W x 3 uint8 with N labels); delete it "
                           "and run again to rebuild it")
        self.stage_clock = StageClock()
        self.finish = TensorOutput(self.stage_clock, size, output)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        t = now()
        image = torch.from_numpy(np.array(self.images[i])).permute(2, 0, 1)
        self.stage_clock.add(READ, t, images=1)
        return self.finish(image), int(self.labels[i])

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[torch.Tensor, int]]:
        t = now()
        batch = torch.from_numpy(self.images[np.asarray(indices)]).permute(0, 3, 1, 2)
        self.stage_clock.add(READ, t, images=len(indices))
        return [(self.finish(image), int(self.labels[i])) for image, i in zip(batch, indices, strict=True)]
