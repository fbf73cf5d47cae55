"""The remote group's measurement: each pass through the proxy at the case's injected latency, with its traffic.

A :class:`RemoteMember` is a rotation member (:mod:`lfw.measure.rotation`): one LoaderPass per ``measure()``
with the proxy's counters for exactly that pass in ``PassResult.extra``. :class:`EndpointCeiling` is the
endpoint's own zero-latency rate, measured in the same rotation (docs/remote.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from statistics import median
from typing import Any

import psutil
from torch.utils.data import SequentialSampler

from lfw.measure.loader_pass import LoaderPass, PassResult
from lfw.measure.resources import usable_cores
from lfw.remote.client import DEFAULT_POOL
from lfw.remote.dataset import S3LFW
from lfw.remote.endpoint import LocalS3
from lfw.results import keys as K
from lfw.results import summarize

CONCURRENCY = {"serial": 1, "threads": 8, "batch": 32}  # requests in flight per loading process
CEILING_THREADS = 16
NEAR_CEILING = 0.8  # a case at this share of the endpoint's own ceiling is limited by the endpoint


@dataclass(frozen=True)
class RemoteCase:
    """A remote case's strategy (:mod:`lfw.remote.dataset`) and the latency the proxy injects."""

    strategy: str
    latency_ms: float

    @property
    def concurrency(self) -> int:
        return CONCURRENCY[self.strategy]

    @property
    def pool(self) -> int:
        """Connections per loading process: the client's pool, never smaller than the concurrency (S3LFW)."""
        return max(self.concurrency, DEFAULT_POOL)

    def in_flight_limit(self, workers: int) -> int:
        """Most requests this configuration can have in flight: loading processes x per-process concurrency."""
        return max(workers, 1) * self.concurrency


def traffic(stats: dict[str, Any], images: int, in_flight_limit: int | None = None) -> dict[str, float]:
    """What one pass sent through the proxy, per image where that is what a regression would change; with
    ``in_flight_limit`` the Little's-law bound (limit / mean request time), and the law's rate for the requests
    actually in flight over the busy span, which a steady rate should match (:mod:`lfw.remote.law`)."""
    requests = stats["requests"]
    total = sum(requests.values())
    out = {K.REQUESTS_PER_IMAGE: total / images, K.HEAD_PER_IMAGE: requests.get("HEAD", 0) / images,
           K.LIST_PER_IMAGE: requests.get("LIST", 0) / images, K.BYTES_PER_IMAGE: stats["bytes_out"] / images,
           K.RETRIED_GETS: float(stats["repeated_gets"]), K.CONNECTIONS: float(stats["connections"]),
           K.MEAN_IN_FLIGHT: stats["mean_in_flight"], K.MAX_IN_FLIGHT: float(stats["max_in_flight"])}
    if stats["first_byte_p50_s"] is not None:
        out[K.FIRST_BYTE_P50_MS] = 1e3 * stats["first_byte_p50_s"]
        out[K.FIRST_BYTE_P99_MS] = 1e3 * stats["first_byte_p99_s"]
    if stats.get("busy_mean_in_flight") is not None:
        out[K.BUSY_MEAN_IN_FLIGHT] = stats["busy_mean_in_flight"]
    if stats["mean_duration_s"] and total:
        # Little's law: requests/s = in flight / time in the system; over requests per image it is images/s.
        if in_flight_limit:
            out[K.LITTLES_LAW_IMAGES_PER_S] = in_flight_limit / stats["mean_duration_s"] / (total / images)
        if stats.get("busy_mean_in_flight"):
            out[K.LITTLES_LAW_RATE] = stats["busy_mean_in_flight"] / stats["mean_duration_s"] / (total / images)
    return out


def endpoint_shares(results: Sequence[PassResult], ceiling: Sequence[float], *, in_flight_limit: int,
                    latency_ms: float) -> dict[str, Any]:
    """Each round's rate over the same round's endpoint ceiling, and over its remote bound: the lower of that
    ceiling and ``in_flight_limit / latency`` (what the gate judges: a latency-bound case does not speed up with
    the machine while the ceiling does)."""
    if len(ceiling) != len(results):
        raise ValueError(f"{len(ceiling)} endpoint ceilings for {len(results)} rounds: pair them by round")
    latency_bound = in_flight_limit * 1e3 / latency_ms if latency_ms > 0 else float("inf")
    shares = [r.images_per_s / c for r, c in zip(results, ceiling, strict=True)]
    bound_shares = [r.images_per_s / min(c, latency_bound) for r, c in zip(results, ceiling, strict=True)]
    return {**summarize(K.ENDPOINT_CEILING_IMAGES_PER_S, ceiling, digits=2),
            **summarize(K.ENDPOINT_CEILING_SHARE, shares, digits=4),
            **summarize(K.REMOTE_BOUND_SHARE, bound_shares, digits=4),
            K.NEAR_ENDPOINT_CEILING: median(shares) >= NEAR_CEILING}


class EpochOrder(SequentialSampler):
    """A pass's items in order, as a DataLoader without a sampler reads them, with epochs that can be cut short:
    an epoch started inside :meth:`first` reads only the first ``n`` items. The sampler lives in the main
    process, so persistent workers started in a short epoch serve the full ones after it unchanged."""

    def __init__(self, data_source: Any) -> None:
        super().__init__(data_source)
        self.limit: int | None = None

    def __len__(self) -> int:
        whole = len(self.data_source)
        return whole if self.limit is None else min(whole, self.limit)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self)))

    @contextmanager
    def first(self, n: int) -> Iterator[None]:
        self.limit = n
        try:
            yield
        finally:
            self.limit = None


class RemoteMember:
    """One remote configuration in a rotation: set the latency, reset the counters, one pass, read them."""

    def __init__(self, runner: LoaderPass, s3: LocalS3, case: RemoteCase) -> None:
        self.runner = runner
        self.s3 = s3
        self.case = case

    def measure(self) -> PassResult:
        self.runner.setup()
        self.s3.shape(latency_ms=self.case.latency_ms)
        self.s3.stats(reset=True)
        endpoint_cpu0 = self._endpoint_cpu()
        result = self.runner.run()
        endpoint_cpu = self._endpoint_cpu() - endpoint_cpu0
        stats = self.s3.stats(reset=True)
        self.runner.finish()
        limit = self.case.in_flight_limit(self.runner.loader.num_workers)
        result.extra.update(traffic(stats, result.images, limit))
        if result.wall_s > 0:
            result.extra[K.ENDPOINT_CPU_UTILIZATION] = endpoint_cpu / (result.wall_s * usable_cores())
        return result

    def warm_up(self) -> PassResult:
        """An untimed pass at zero latency that starts the persistent workers and their S3 clients, over the
        start-up wave alone (one batch per loading process) where the loader reads in an :class:`EpochOrder`."""
        loader = self.runner.loader
        order = loader.sampler if isinstance(loader.sampler, EpochOrder) else None
        wave = max(loader.num_workers, 1) * (loader.batch_size or 1)
        self.runner.setup()
        self.s3.shape(latency_ms=0)
        with order.first(wave) if order is not None else nullcontext():
            warm = LoaderPass(loader, memory_interval_s=None)
            result = warm.run()
            warm.finish()
        return result

    def _endpoint_cpu(self) -> float:
        """CPU seconds moto and the proxy have used: they share the cores with the loader being measured."""
        total = 0.0
        for child in (self.s3.moto, self.s3.proxy):
            with suppress(psutil.Error):
                times = psutil.Process(child.proc.pid).cpu_times()
                total += times.user + times.system
        return total

    def close(self) -> None:
        self.runner.close(stop_workers=True)


class EndpointCeiling:
    """The endpoint's zero-latency rate: ``CEILING_THREADS`` threads GET the objects, nothing is decoded."""

    def __init__(self, data: S3LFW, s3: LocalS3) -> None:
        self.data = data
        self.s3 = s3
        self.pool = ThreadPoolExecutor(CEILING_THREADS, thread_name_prefix="lfw-s3-ceiling")

    def measure(self) -> PassResult:
        self.s3.shape(latency_ms=0)
        t0 = time.perf_counter()
        list(self.pool.map(self.data.fetch, range(len(self.data))))
        return PassResult(images=len(self.data), batches=0, wall_s=time.perf_counter() - t0, ttfb_s=0.0)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
