"""LFW in an S3 bucket, read with one of three concurrency strategies (docs/remote.md): ``serial``, one request
in flight per loading process; ``threads``, ``concurrency`` threads fetching and decoding; ``batch``, every GET of
the batch in flight at once, each image decoded by the thread that fetched it.

Keys are listed once and kept as a numpy byte array (nothing for forked workers to copy on access); labels come
from the person folder. A body that is not a JPEG is a :class:`~lfw.errors.CorruptImageError` naming its URL.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from lfw.errors import LFWError, check_choice
from lfw.pipelines.datasets import ProcessThreads
from lfw.pipelines.decoders import decode
from lfw.remote.client import S3Reader, S3Settings

STRATEGIES = ("serial", "threads", "batch")
Item = tuple[torch.Tensor, int]


class S3LFW(Dataset):
    """LFW objects under ``settings.prefix`` (``<prefix>/<Person>/<file>.jpg``), the first ``images`` of them.

    Args:
        settings: endpoint, bucket, prefix, credentials and timeouts.
        strategy: ``serial``, ``threads`` or ``batch`` (module docstring).
        concurrency: threads per loading process for ``threads``; ignored otherwise.
        images: how many of the sorted keys to use (None: all).
    """

    def __init__(self, settings: S3Settings, strategy: str = "serial", concurrency: int = 4,
                 images: int | None = None) -> None:
        check_choice("strategy", strategy, STRATEGIES)
        if concurrency < 1:
            raise LFWError(f"concurrency must be at least 1, got {concurrency}")
        self.strategy = strategy
        self.concurrency = concurrency
        self.reader = S3Reader(settings, pool=max(concurrency, settings.pool))
        keys = self.reader.list_keys()[:images]
        if not keys:
            raise LFWError(f"no JPEG objects under {settings.url(settings.prefix + '/')}; upload LFW there first "
                           "(lfw.remote.endpoint.upload_tree)")
        self.classes = sorted({k.split("/")[-2] for k in keys})
        label_of = {name: i for i, name in enumerate(self.classes)}
        self.keys = np.array([k.encode() for k in keys], dtype=np.bytes_)
        self.labels = np.array([label_of[k.split("/")[-2]] for k in keys], dtype=np.int32)
        self.pool = ProcessThreads("lfw-s3")

    def __len__(self) -> int:
        return len(self.keys)

    def key(self, i: int) -> str:
        return self.keys[i].decode()

    def fetch(self, i: int) -> bytes:
        return self.reader.get(self.key(i))

    def __getitem__(self, i: int) -> Item:
        return decode("pil", self.fetch(i), f"s3://{self.reader.settings.bucket}/{self.key(i)}"), int(self.labels[i])

    def __getitems__(self, indices: Sequence[int]) -> list[Item]:
        if self.strategy == "serial":
            return [self[i] for i in indices]
        size = self.concurrency if self.strategy == "threads" else len(indices)
        return self.pool.map(size, self.__getitem__, indices)
