"""LitData: ``optimize()`` into its chunk format once, then ``StreamingDataset`` + ``StreamingDataLoader`` from
local disk, as LitData's README shows (docs/peers.md). Items are ``{"image", "label", "index"}`` (the JPEG's own
bytes), in chunks of :func:`~lfw.peers.contract.images_per_shard` items; :func:`convert` is timed and cached per
tree, and puts back what ``optimize()`` changes in the process (:func:`~lfw.peers.contract.process_kept`)."""

from __future__ import annotations

import json
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

from lfw.measure.loader_config import die_with_parent
from lfw.peers.contract import DataLoaderPeer, PassImages, images_per_shard, library, not_importable, process_kept

DISTRIBUTIONS = ("litdata",)
INSTALL = "pip install litdata (make peers)"
DECODER = "tvio"
missing = partial(not_importable, "litdata", INSTALL, "litdata")  # why it cannot run here, or None
MANIFEST = "lfw-conversion.json"


class Item:
    """LitData's ``optimize`` function: index -> the item it stores (a class: its workers unpickle it)."""

    def __init__(self, images: PassImages) -> None:
        self.paths = list(images.paths)
        self.labels = [int(v) for v in images.labels]

    def __call__(self, i: int) -> dict[str, Any]:
        from PIL import Image

        return {"image": Image.open(self.paths[i]), "label": self.labels[i], "index": i}


def chunk_dir(images: PassImages) -> Path:
    """Where the chunks of these images live: the suite's formats folder of the tree."""
    from lfw.data.dataset import scan_images
    from lfw.pipelines.storage import formats_dir

    return formats_dir(scan_images(images.root)) / f"litdata-{len(images)}-{images_per_shard(len(images))}"


def convert(images: PassImages) -> dict[str, Any]:
    """The chunks of ``images``, made on first use (timed, staged, renamed when complete): seconds, bytes, folder."""
    from lfw.data.synth import building

    litdata = library("litdata")
    final = chunk_dir(images)
    manifest = final / MANIFEST
    if not manifest.exists():
        with building(final) as staging:
            started = time.perf_counter()
            with process_kept():  # optimize() sets the start method to spawn, a SIGINT handler, its environment
                litdata.optimize(fn=Item(images), inputs=list(range(len(images))), output_dir=str(staging / "chunks"),
                                 chunk_size=images_per_shard(len(images)), num_workers=1, mode="overwrite")
            seconds = time.perf_counter() - started
            size = sum(p.stat().st_size for p in (staging / "chunks").iterdir())
            (staging / MANIFEST).write_text(json.dumps({"seconds": round(seconds, 3), "bytes": size}))
    return {**json.loads(manifest.read_text()), "path": str(final / "chunks")}


class LitDataLoader(DataLoaderPeer):
    """LitData's streaming loader (module docstring) behind the peers' contract."""

    def make_loader(self) -> Any:
        litdata = library("litdata")
        chunks = convert(images=self.images)["path"]
        if len(os.listdir(chunks)) - 1 < self.spec.parallelism:
            raise RuntimeError(f"fewer chunks than {self.spec.parallelism} workers: a worker would idle")
        dataset = litdata.StreamingDataset(chunks, shuffle=False, drop_last=False)
        return litdata.StreamingDataLoader(dataset, batch_size=self.spec.batch_size,
                                           num_workers=self.spec.parallelism, persistent_workers=True,
                                           timeout=self.timeout, worker_init_fn=die_with_parent)

    def fields(self, batch: Any) -> tuple[Any, Any, Any]:
        return batch["image"], batch["label"], batch["index"]


build = LitDataLoader  # build(spec, images): the adapter's loader (lfw.peers)
