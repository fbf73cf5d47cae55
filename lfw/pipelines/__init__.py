"""Decode pipelines: what would be faster than PIL through DataLoader workers?

A :class:`Pipeline` names one way of getting LFW from storage into a batch (docs/decoders.md): its ``decoder``
(:mod:`lfw.pipelines.decoders`), ``storage`` (loose ``files``, ``tar`` shards, a decoded ``memmap``), decode ``threads``
per loading process, ``output`` (``uint8``, ``float``, or ``deferred``: normalized per batch by the consumer) and
``batching`` (``items`` collated by the DataLoader, reusable shared-memory ``slots``, or ``device``: the files' bytes
decoded per batch by the consumer on the accelerator). :meth:`Pipeline.dataset` is an ordinary dataset."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch.utils.data import Subset

from lfw.data.dataset import OnError
from lfw.errors import LFWError, check_choice
from lfw.pipelines.datasets import DecodedMemmap, JpegFiles, TarShards, normalize
from lfw.pipelines.decoders import DECODERS
from lfw.pipelines.device_decode import JpegByteBatches, decode_step
from lfw.pipelines.slots import SlotBatches
from lfw.pipelines.storage import decoded_memmap, tar_shards

STORAGES = ("files", "tar", "memmap")
PIPELINE_OUTPUTS = ("uint8", "float", "deferred")
BATCHINGS = ("items", "slots", "device")
IMAGES_PER_SHARD = 128  # a pass of 1,024 images reads 8 shards: 4 per worker with 2 workers


@dataclass(frozen=True)
class Pipeline:
    """One decode pipeline; see the module docstring for the axes."""

    decoder: str = "pil"
    storage: str = "files"
    threads: int = 0
    output: str = "uint8"
    size: int | None = None
    batching: str = "items"

    def __post_init__(self) -> None:
        for what, value, choices in (("decoder", self.decoder, DECODERS), ("storage", self.storage, STORAGES),
                                     ("output", self.output, PIPELINE_OUTPUTS),
                                     ("batching", self.batching, BATCHINGS)):
            check_choice(what, value, choices)
        plain = (self.storage, self.threads, self.output, self.size) == ("files", 0, "uint8", None)
        if self.batching == "slots" and not plain:
            raise LFWError("slot batches decode loose files to uint8 at their own size, one image at a time")
        if self.batching == "device" and not (plain and self.decoder == "tvio"):
            raise LFWError("a decode on the device reads loose files and decodes them with torchvision (tvio) to uint8")
        if self.threads and self.storage != "files":
            raise LFWError("decode threads apply to loose files only (tar shards stream, a memmap does not decode)")

    def dataset(self, root: str | os.PathLike[str], images: int | None = None, on_error: OnError = "raise",
                batch_size: int = 64) -> TarShards | DecodedMemmap | JpegFiles | SlotBatches | JpegByteBatches | \
            Subset[Any]:
        """A sized dataset over the first ``images`` images of the tree at ``root`` (all when None). Slot batches and
        the device's byte batches are batches of ``batch_size`` (the DataLoader runs with ``batch_size=None``); slot
        batches stop at the first bad file."""
        if self.batching == "slots":
            return SlotBatches(root, self.decoder, batch_size, images)
        if self.batching == "device":
            return JpegByteBatches(root, batch_size, images)
        loaded = "uint8" if self.output == "deferred" else self.output
        if self.storage == "tar":
            shards = tar_shards(root, IMAGES_PER_SHARD, images)
            return TarShards(shards.shards, shards.classes, shards.images, self.decoder, self.size, loaded, on_error)
        data: DecodedMemmap | JpegFiles
        if self.storage == "memmap":
            data = DecodedMemmap(*decoded_memmap(root), size=self.size, output=loaded)
        else:
            data = JpegFiles(root, self.decoder, self.size, loaded, self.threads, on_error)
        return Subset(data, range(min(images, len(data)))) if images is not None else data

    def consumer_step(self) -> Callable[[Any], None] | None:
        """With ``output="deferred"``: the per-batch normalization the consumer does (the pass's ``step``); with
        ``batching="device"``: the decode on the accelerator."""
        if self.batching == "device":
            return decode_step()
        if self.output != "deferred":
            return None

        def step(batch: Any) -> None:
            normalize(batch[0])

        return step

    @property
    def label(self) -> str:
        """``simplejpeg-files-t2``-style words for tables (the case id adds the worker count)."""
        words = (self.decoder if self.storage != "memmap" else "memmap", "tar" if self.storage == "tar" else "",
                 f"t{self.threads}" if self.threads else "", f"r{self.size}" if self.size else "",
                 self.output if self.output != "uint8" else "", "" if self.batching == "items" else self.batching)
        return "-".join(word for word in words if word)
