"""The remote group's measurement: each pass through the proxy at the case's injected latency, with its traffic.

:class:`RemoteMember` and :class:`EndpointCeiling` are rotation members (:mod:`lfw.measure.rotation`);
:func:`remote_law` holds a case's steady rate against that ceiling and Little's law and names the limit that caps
it. Each rule: docs/remote.md ("Passes with a steady state", "Per case").
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
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
from lfw.stats.variation import coefficient_of_variation

CONCURRENCY = {"serial": 1, "threads": 8, "batch": 32}  # requests in flight per loading process
CEILING_THREADS = 16
NEAR_CEILING = 0.8  # a case at this share of the endpoint's own ceiling is limited by the endpoint
NEAR_LIMIT = 0.8  # at this share of the in-flight limit (or the pool), the configuration's concurrency is
BUSY_CORES = 0.85  # at this share of the usable cores busy (client and endpoint), the cores are
CEILING_NOISE_FLOOR = 0.10  # a steady rate may exceed the ceiling by this much before it is called invalid


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
    actually in flight over the busy span, which a steady rate should match (:func:`remote_law`)."""
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


def steady_against_ceiling(info: Mapping[str, Any], ceiling: Sequence[float]) -> dict[str, Any]:
    """The steady rate's share of the same rounds' ceiling, or, above the ceiling by more than its noise, the
    reason it is invalid (``steady_invalid``; the caller drops the rate). Empty without a steady rate."""
    rates = info.get(K.rounds(K.STEADY_IMAGES_PER_S))
    if not rates or len(rates) != len(ceiling):
        return {}
    top = median(ceiling)
    tolerance = max(CEILING_NOISE_FLOOR, 2 * coefficient_of_variation(ceiling))  # the ceiling's own noise
    if median(rates) > top * (1 + tolerance):
        return {K.STEADY_INVALID: f"steady rate {median(rates):,.1f} images/s is above the endpoint's ceiling "
                                  f"{top:,.1f} by more than its noise ({tolerance:.0%}): not a measurement"}
    shares = [r / c for r, c in zip(rates, ceiling, strict=True) if c > 0]
    return summarize(K.STEADY_CEILING_SHARE, shares, digits=4) if shares else {}


def limiting(info: Mapping[str, Any], *, in_flight_limit: int, processes: int, pool: int) -> str:
    """The limit that caps the case, from its record: the first of ``endpoint ceiling`` (steady at
    :data:`NEAR_CEILING` of it), ``in-flight limit`` or ``pool`` (the client's, at :data:`NEAR_LIMIT` of it),
    ``client CPU`` (loader and endpoint at :data:`BUSY_CORES` of the usable cores), else ``idle request slots``."""
    rate = info.get(K.STEADY_IMAGES_PER_S) or info.get(K.IMAGES_PER_S) or 0.0
    ceiling = info.get(K.ENDPOINT_CEILING_IMAGES_PER_S) or 0.0
    in_flight = info.get(K.BUSY_MEAN_IN_FLIGHT) or info.get(K.MEAN_IN_FLIGHT) or 0.0
    if ceiling and rate >= NEAR_CEILING * ceiling:
        return "endpoint ceiling"
    if in_flight >= NEAR_LIMIT * in_flight_limit:
        return "in-flight limit"
    if processes * pool < in_flight_limit and in_flight >= NEAR_LIMIT * processes * pool:
        return "pool"
    busy = (info.get(K.CPU_UTILIZATION) or 0.0) + (info.get(K.ENDPOINT_CPU_UTILIZATION) or 0.0)
    return "client CPU" if busy >= BUSY_CORES else "idle request slots"


def remote_law(info: Mapping[str, Any], ceiling: Sequence[float], *, in_flight_limit: int, processes: int,
               pool: int) -> dict[str, Any]:
    """What a remote case's record adds, and drops: the steady rate against the ceiling, Little's law's error (the
    steady rate over the law's rate for the measured in flight and request time, less 1) and the limit. Returns
    the keys to update; a key mapped to None (an invalid steady rate's) is to be removed."""
    out: dict[str, Any] = steady_against_ceiling(info, ceiling)
    if K.STEADY_INVALID in out:
        out.update({K.STEADY_IMAGES_PER_S: None, K.rounds(K.STEADY_IMAGES_PER_S): None})
    kept = {k: v for k, v in {**info, **out}.items() if v is not None}
    law, steady = kept.get(K.LITTLES_LAW_RATE), kept.get(K.STEADY_IMAGES_PER_S)
    if law and steady:
        out[K.LITTLES_LAW_ERROR] = round(steady / law - 1, 4)
    out[K.REMOTE_LIMIT] = limiting(kept, in_flight_limit=in_flight_limit, processes=processes, pool=pool)
    return out


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
    """One remote configuration in a rotation: set the latency, reset the counters, one pass, its counters in extra."""

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
        result.extra.update(traffic(stats, result.images, self.case.in_flight_limit(self.runner.loader.num_workers)))
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
    """The endpoint's own zero-latency rate in the rotation: ``CEILING_THREADS`` threads GET, nothing is decoded."""

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
