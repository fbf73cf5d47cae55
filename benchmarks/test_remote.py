"""LFW behind a real S3 API: throughput against injected latency, for three concurrency strategies.

moto's S3 server and a latency/fault proxy run on 127.0.0.1 for the session (``s3_endpoint``, stopped at the end
whatever happens); LFW is uploaded once, one object per JPEG under LFW's key layout. Each case reads through the
proxy with one strategy (``serial``: one request at a time per loading process; ``threads``: a pool of threads
per process; ``batch``: the whole batch in flight), at one injected first-byte latency, in the main process or with
persistent workers. The values live in one place each: requests in flight per process in
:data:`lfw.remote.bench.CONCURRENCY`; batch size, latencies and worker counts in :mod:`lfw.suite.matrix`
(``REMOTE_BATCH``, ``REMOTE_LATENCIES_MS``, ``REMOTE_WORKERS``). The endpoint's own zero-latency ceiling (fetch
only, ``CEILING_THREADS`` threads of :mod:`lfw.remote.bench`) is a member of the same rotation, so every case is
also a share of it, paired by round. Each case records the traffic the proxy saw in its pass: requests and
bytes per image (an extra HEAD per GET shows here), first-byte p50/p99, mean requests in flight and the rate
Little's law gives for them. Passes are long enough for a steady state (:func:`lfw.suite.matrix.remote_pass_batches`):
the steady rate, its share of the ceiling, Little's law beside it and the limit that caps the case are recorded apart
from the time to first batch; a case too slow for that says why it has no steady rate.

Runs in the smoke (the low latencies and few workers of its ``remote_limits``) and full profiles, and in quick
with ``--bench-remote`` or ``-k remote``.
"""

from __future__ import annotations

import pytest

from lfw.measure.loader_pass import STEADY_MIN_BATCHES
from lfw.results import keys as K
from lfw.suite.matrix import GROUPS

GROUP = GROUPS["remote"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_remote(rotated_case, profile, strategy: str, latency_ms: float, num_workers: int) -> None:
    info = rotated_case()
    case = GROUP.case_for({"strategy": strategy, "latency_ms": latency_ms, "num_workers": num_workers})
    assert info[K.IMAGES] == case.pass_images(profile), "a pass must be exactly one epoch of the pass's objects"
    assert info[K.REQUESTS_PER_IMAGE] >= 1 and info[K.HEAD_PER_IMAGE] == 0, "one GET per image, no HEAD"
    assert info[K.ENDPOINT_CEILING_SHARE] > 0 and info[K.MEAN_IN_FLIGHT] > 0
    assert info[K.REMOTE_LIMIT], "every remote case names the limit that caps it"
    if K.STEADY_IMAGES_PER_S not in info:
        assert info.get(K.STEADY_ABSENT) or info.get(K.STEADY_INVALID), "a missing steady rate says why"
    else:
        assert info[K.STEADY_BATCHES] >= STEADY_MIN_BATCHES
