"""WebDataset: the suite's own tar shards (:func:`lfw.pipelines.storage.tar_shards`, at least as many as workers)
through ``wds.WebDataset`` and ``wds.WebLoader``, as its docs show (docs/peers.md); the label is the member's
person folder. The one-off conversion is the shards' build."""

from __future__ import annotations

from functools import partial
from typing import Any

import torch

from lfw.measure.loader_config import die_with_parent
from lfw.peers.contract import DataLoaderPeer, PassImages, images_per_shard, library, not_importable

DISTRIBUTIONS = ("webdataset",)
INSTALL = "pip install webdataset (make peers)"
DECODER = "pil"
missing = partial(not_importable, "webdataset", INSTALL, "webdataset")  # why it cannot run here, or None


def convert(images: PassImages) -> dict[str, Any]:
    """The shards of ``images`` (made on first use): the seconds their build took, bytes on disk, folder."""
    from lfw.pipelines.storage import tar_shards

    shards = tar_shards(images.root, images_per_shard(len(images)), len(images))
    return {"seconds": shards.build_s, "bytes": sum(p.stat().st_size for p in shards.shards),
            "path": str(shards.shards[0].parent)}


class ToItem:
    """A WebDataset sample to ``(image, label, index)``, by its folder and name (a class: workers unpickle it)."""

    def __init__(self, images: PassImages) -> None:
        root = images.root
        self.label_of = {name: i for i, name in enumerate(images.classes)}
        self.index_of = {str(p.relative_to(root).with_suffix("")): i
                         for i, p in enumerate(map(type(root), images.paths))}

    def __call__(self, sample: dict[str, Any]) -> tuple[torch.Tensor, int, int]:
        key = sample["__key__"]
        return sample["jpg"], self.label_of[key.split("/", 1)[0]], self.index_of[key]


class WebDatasetLoader(DataLoaderPeer):
    """WebDataset's loader (module docstring) behind the peers' contract."""

    def make_loader(self) -> Any:
        from lfw.pipelines.storage import tar_shards

        wds = library("webdataset")
        shards = tar_shards(self.images.root, images_per_shard(len(self.images)), len(self.images))
        if len(shards.shards) < self.spec.parallelism:
            raise RuntimeError(f"{len(shards.shards)} shards for {self.spec.parallelism} workers: a worker would idle")
        dataset = wds.WebDataset([str(p) for p in shards.shards], shardshuffle=False, empty_check=False) \
            .decode("torchrgb8").map(ToItem(self.images)).batched(self.spec.batch_size)
        return wds.WebLoader(dataset, batch_size=None, num_workers=self.spec.parallelism, persistent_workers=True,
                             timeout=self.timeout, worker_init_fn=die_with_parent)


build = WebDatasetLoader  # build(spec, images): the adapter's loader (lfw.peers)
