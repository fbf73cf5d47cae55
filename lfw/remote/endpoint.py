"""A real S3 endpoint on loopback with the fault-injecting proxy in front, started and stopped as one.

:func:`local_s3` starts moto (:mod:`lfw.remote.moto_server`) and the proxy (:mod:`lfw.remote.proxy`), each in its
own process on 127.0.0.1 and a free port, and stops both when the block ends, on failure too (each also exits
when its standard input closes). :func:`upload_tree` puts an LFW tree into a bucket under LFW's own layout.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.contrib.concurrent import thread_map

from lfw.cli.child import Child
from lfw.data.dataset import scan_images
from lfw.remote.client import S3Settings, s3_client

START_TIMEOUT_S = 60.0
LOCAL_CREDENTIALS = ("lfw-bench", "lfw-bench-secret")  # moto accepts any; real endpoints need real ones


@dataclass
class LocalS3:
    """moto behind the proxy: ``settings`` reach it through the proxy, ``direct`` without it."""

    moto: Child
    proxy: Child
    bucket: str = "lfw"
    prefix: str = "lfw"

    @property
    def settings(self) -> S3Settings:
        return self._settings(self.proxy.ready["port"])

    @property
    def direct(self) -> S3Settings:
        return self._settings(self.moto.ready["port"])

    def _settings(self, port: int) -> S3Settings:
        key, secret = LOCAL_CREDENTIALS
        return S3Settings(f"http://127.0.0.1:{port}", self.bucket, self.prefix, access_key=key, secret_key=secret)

    def shape(self, **shaping: float) -> dict[str, Any]:
        """Set the proxy's delay, jitter, tail or bandwidth cap (see :class:`lfw.remote.proxy.Shaping`)."""
        return self.proxy.ask({"op": "configure", **shaping})

    def fault(self, kind: str, count: int = 1, match: str = "") -> None:
        self.proxy.ask({"op": "fault", "kind": kind, "count": count, "match": match})

    def stats(self, reset: bool = True) -> dict[str, Any]:
        """What crossed the proxy since the last reset (requests, bytes, latencies, in flight)."""
        return self.proxy.ask({"op": "stats", "reset": reset})


@contextmanager
def local_s3(seed: int = 0) -> Iterator[LocalS3]:
    """moto and the proxy on 127.0.0.1, stopped when the block ends whatever happens."""
    with ExitStack() as started:  # stops them in reverse order
        moto = Child("the S3 endpoint (moto)", [sys.executable, "-m", "lfw.remote.moto_server"])
        started.callback(moto.stop)
        moto.handshake(START_TIMEOUT_S)
        proxy = Child("the latency proxy", [sys.executable, "-m", "lfw.remote.proxy", "--upstream",
                                            f"127.0.0.1:{moto.ready['port']}", "--seed", str(seed)])
        started.callback(proxy.stop)
        proxy.handshake(START_TIMEOUT_S)
        yield LocalS3(moto, proxy)


def upload_tree(settings: S3Settings, root: str | os.PathLike[str], images: int | None = None) -> int:
    """Create the bucket and put the first ``images`` JPEGs of the tree (all when None) under ``settings.prefix``
    in LFW's layout (``<prefix>/<Person>/<Person>_0001.jpg``); returns the number of objects written."""
    scan = scan_images(root)
    paths = scan.paths[:images]
    client = s3_client(settings)
    with suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=settings.bucket)

    def put(path: str) -> None:
        key = f"{settings.prefix}/{Path(path).relative_to(scan.image_root).as_posix()}"
        client.put_object(Bucket=settings.bucket, Key=key, Body=Path(path).read_bytes())

    thread_map(put, paths, max_workers=8, unit="obj", desc=f"uploading LFW to s3://{settings.bucket}")
    return len(paths)
