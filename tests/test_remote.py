"""Remote storage: the local endpoint and proxy, the client's retries, and every fault's documented outcome."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
import torch

from lfw.errors import LFWError
from lfw.measure import LoaderConfig, LoaderPass
from lfw.pipelines.decoders import decode
from lfw.remote.__main__ import main as remote_main
from lfw.remote.bench import traffic
from lfw.remote.dataset import S3LFW
from lfw.remote.endpoint import LocalS3, local_s3, upload_tree
from tests.trees import TINY_IMAGES, first_image

HELPERS = ("lfw.remote.moto_server", "lfw.remote.proxy")
# Every process this module starts inherits the mark, so an orphan (no child of ours any more) is still known as
# ours, and another checkout's tests running beside these are not.
OWNER_MARK = ("LFW_TEST_REMOTE_OWNER", str(os.getpid()))
os.environ[OWNER_MARK[0]] = OWNER_MARK[1]


def _ours(proc: psutil.Process) -> bool:
    try:
        return proc.environ().get(OWNER_MARK[0]) == OWNER_MARK[1]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def helpers_alive(keep: LocalS3 | None = None) -> list[psutil.Process]:
    """moto or proxy processes started by these tests (children or orphans), but ``keep``'s own."""
    mine = {keep.moto.proc.pid, keep.proxy.proc.pid} if keep is not None else set()
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        command = " ".join(proc.info["cmdline"] or [])
        if proc.info["pid"] not in mine and proc.info["status"] != psutil.STATUS_ZOMBIE and \
                any(h in command for h in HELPERS) and _ours(proc):
            found.append(proc)
    return found


@pytest.fixture(scope="module")
def s3(tiny_tree: Path) -> Iterator[LocalS3]:
    with local_s3() as endpoint:
        upload_tree(endpoint.direct, tiny_tree)
        yield endpoint
    assert not helpers_alive(), "the endpoint and the proxy must be stopped when the block ends"


@pytest.fixture(autouse=True)
def clean_proxy(s3: LocalS3) -> Iterator[None]:
    s3.proxy.ask({"op": "clear-faults"})
    s3.shape(latency_ms=0, jitter=0.2, tail_p=0.01, bandwidth_mbps=0)
    s3.stats(reset=True)
    yield
    s3.proxy.ask({"op": "clear-faults"})


def test_a_command_the_proxy_cannot_read_is_answered_with_an_error_and_the_proxy_answers_on(s3: LocalS3) -> None:
    """A value of the wrong kind ("x" for a delay) or a message that is not an object is answered with a one-line
    error (raised by the asking side), and the proxy's command reader lives on: the next command is answered."""
    for bad in ({"op": "configure", "latency_ms": "x"}, ["not", "an", "object"]):
        with pytest.raises(LFWError, match=r"^the latency proxy: bad command [^\n]+$"):
            s3.proxy.ask(bad, timeout_s=5)  # type: ignore[arg-type]  # the list: a message that is no object
    assert "error" not in s3.stats(reset=False)


def test_objects_keep_lfw_layout_and_decode_like_the_files(s3: LocalS3, tiny_tree: Path) -> None:
    data = S3LFW(s3.settings)
    assert len(data) == TINY_IMAGES and data.key(0).startswith("lfw/") and data.key(0).count("/") == 2
    image, label = data[0]
    path = first_image(tiny_tree)
    assert torch.equal(image, decode("pil", path.read_bytes(), str(path)))
    assert data.classes[label] == path.parent.name


@pytest.mark.parametrize("strategy", ["serial", "threads", "batch"])
def test_every_strategy_reads_each_object_once_with_one_get(s3: LocalS3, strategy: str) -> None:
    data = S3LFW(s3.settings, strategy, concurrency=4, images=32)
    s3.stats(reset=True)
    loader = LoaderConfig(batch_size=8, num_workers=2).build(data)
    labels = sorted(int(v) for _, batch in loader for v in batch)
    seen = traffic(s3.stats(reset=True), 32)
    assert labels == sorted(int(v) for v in data.labels)
    assert seen["requests_per_image"] == 1.0 and seen["head_per_image"] == 0 and seen["retried_gets"] == 0


def test_injected_latency_delays_the_first_byte_and_caps_serial_reads(s3: LocalS3) -> None:
    data = S3LFW(s3.settings, "serial", images=8)
    s3.shape(latency_ms=50, jitter=0, tail_p=0)
    loader = LoaderConfig(batch_size=4).build(data)
    with LoaderPass(loader, memory_interval_s=None) as runner:
        s3.stats(reset=True)
        result = runner.run()
    seen = traffic(s3.stats(reset=True), result.images)
    assert seen["first_byte_p50_ms"] >= 50
    assert result.images_per_s < 1 / 0.050  # one request at a time: Little's law caps it at 20 images/s
    assert seen["max_in_flight"] == 1 and 0.3 < seen["mean_in_flight"] <= 1


def test_missing_key_is_one_line_naming_the_key_without_retry(s3: LocalS3) -> None:
    data = S3LFW(s3.settings, images=1)
    s3.stats(reset=True)  # the listing above is not what this test counts
    with pytest.raises(LFWError, match=r"object not found: s3://lfw/lfw/Nobody/Nobody_0001.jpg") as caught:
        data.reader.get("lfw/Nobody/Nobody_0001.jpg")
    assert "\n" not in str(caught.value) and data.reader.retries == 0
    assert s3.stats()["requests"] == {"GET": 1}


@pytest.mark.parametrize("kind", ["503", "500"])
def test_server_errors_are_retried_with_backoff_and_counted(s3: LocalS3, kind: str) -> None:
    data = S3LFW(s3.settings, images=2)
    s3.fault(kind, count=2, match=data.key(1))
    image, _ = data[1]
    assert image.shape == (3, 250, 250) and data.reader.retries == 2
    stats = s3.stats()
    assert stats["faults"] == {kind: 2} and stats["repeated_gets"] == 2


def test_a_reset_mid_body_is_detected_by_length_and_retried_not_called_corrupt(s3: LocalS3) -> None:
    data = S3LFW(s3.settings, images=1)
    s3.fault("reset", count=1, match=data.key(0))
    image, _ = data[0]
    assert image.shape == (3, 250, 250) and data.reader.retries == 1 and s3.stats()["faults"] == {"reset": 1}


def test_a_stalled_connection_ends_in_a_read_timeout_error_in_bounded_time(s3: LocalS3) -> None:
    data = S3LFW(replace(s3.settings, read_timeout_s=0.5, attempts=2), images=1)
    s3.fault("stall", count=10, match=data.key(0))
    with pytest.raises(LFWError, match=r"cannot read s3://lfw/.* after 2 attempts: ReadTimeoutError") as caught:
        data[0]
    assert "\n" not in str(caught.value)
    assert s3.stats()["faults"] == {"stall": 2}  # each attempt stalled and was given up on; no third was made


def test_retries_are_bounded_when_every_attempt_fails(s3: LocalS3) -> None:
    data = S3LFW(replace(s3.settings, attempts=3), images=1)
    s3.fault("503", count=100, match=data.key(0))
    with pytest.raises(LFWError, match="after 3 attempts: HTTP 503 SlowDown"):
        data[0]
    assert data.reader.retries == 2


def test_cli_endpoint_down_is_exit_2_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    assert remote_main(["--endpoint", f"http://127.0.0.1:{closed_port()}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: cannot read s3://lfw/lfw/") and "EndpointConnectionError" in err


def test_cli_missing_credentials_is_exit_2_in_one_line(tmp_path: Path) -> None:
    """``python -m lfw.remote`` itself (its exit code, its stderr), in an environment without credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                "AWS_EC2_METADATA_DISABLED": "true"})
    done = subprocess.run([sys.executable, "-m", "lfw.remote", "--endpoint", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no S3 credentials" in done.stderr


def test_cli_local_run_measures_and_leaves_no_process(tiny_tree: Path, s3: LocalS3,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = remote_main(["--local", "--path", str(tiny_tree), "--images", "16", "--latency-ms", "5", "--workers", "1",
                        "--repetitions", "1"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "1.00 requests per image" in printed.out and "images/s" in printed.out
    assert not helpers_alive(keep=s3)


def test_helpers_die_with_a_parent_that_was_killed(tmp_path: Path) -> None:
    script = ("import sys, time\nfrom lfw.remote.endpoint import local_s3\n"
              "with local_s3() as s3:\n    print(s3.moto.proc.pid, s3.proxy.proc.pid, flush=True)\n"
              "    time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pids = [int(p) for p in parent.stdout.readline().split()]
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    parent.stdout.close()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(p.pid in pids for p in helpers_alive()):
        time.sleep(0.2)
    assert not [p for p in helpers_alive() if p.pid in pids]


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound by the kernel's choice, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_latency_bound_case_is_judged_against_its_own_bound_not_the_endpoint() -> None:
    """One request in flight at 100 ms allows 10 images/s whatever the machine; the endpoint's ceiling grows with
    the machine. Against the bound, the same 9 images/s is the same share on a slow day and a fast one."""
    from lfw.measure.loader_pass import PassResult
    from lfw.remote.bench import endpoint_shares

    passes = [PassResult(images=9, batches=1, wall_s=1.0, ttfb_s=0.1)]
    slow_day = endpoint_shares(passes, [160.0], in_flight_limit=1, latency_ms=100)
    fast_day = endpoint_shares(passes, [400.0], in_flight_limit=1, latency_ms=100)
    assert slow_day["remote_bound_share"] == fast_day["remote_bound_share"] == 0.9
    assert fast_day["endpoint_ceiling_share"] < slow_day["endpoint_ceiling_share"]
    at_zero = endpoint_shares(passes, [160.0], in_flight_limit=1, latency_ms=0)
    assert at_zero["remote_bound_share"] == at_zero["endpoint_ceiling_share"]


def test_a_steady_rate_exists_only_with_enough_batches_and_never_above_the_endpoints_ceiling(s3: LocalS3) -> None:
    """On a slow endpoint (60 ms a request, one at a time): a short pass has no steady rate and says why; a long
    one has one, Little's law beside it and its limit named; held against a ceiling a third of it, the rate is
    flagged invalid and never kept as a result."""
    from lfw.measure.loader_pass import STEADY_MIN_BATCHES
    from lfw.remote.bench import RemoteCase, RemoteMember, remote_law
    from lfw.results import keys as K
    from lfw.suite.case_record import pass_record

    s3.shape(jitter=0, tail_p=0)

    def record(strategy: str, latency_ms: float, images: int) -> dict:
        data = S3LFW(s3.settings, strategy, images=images)
        member = RemoteMember(LoaderPass(LoaderConfig(batch_size=1).build(data), memory_interval_s=None), s3,
                              RemoteCase(strategy, latency_ms))
        try:
            return pass_record([member.measure()]).as_extra_info()
        finally:
            member.close()

    latency_ms = 60  # long beside the client's own few ms per image, so the one request is in flight >= 80% of the time
    short = record("serial", latency_ms, 4)
    assert K.STEADY_IMAGES_PER_S not in short and f"needs {STEADY_MIN_BATCHES}" in short[K.STEADY_ABSENT]
    slow = record("serial", latency_ms, STEADY_MIN_BATCHES + 4)
    steady = slow[K.STEADY_IMAGES_PER_S]
    assert 0 < steady < 1e3 / latency_ms and slow[K.STEADY_BATCHES] >= STEADY_MIN_BATCHES  # one request in flight
    assert slow[K.LITTLES_LAW_RATE] > 0 and slow[K.BUSY_MEAN_IN_FLIGHT] <= 1.0001
    law = remote_law(slow, [400.0], in_flight_limit=1, processes=1, pool=16)
    assert law[K.REMOTE_LIMIT] == "in-flight limit" and K.STEADY_INVALID not in law
    flagged = remote_law(slow, [steady / 3], in_flight_limit=1, processes=1, pool=16)
    assert "above the endpoint's ceiling" in flagged[K.STEADY_INVALID] and flagged[K.STEADY_IMAGES_PER_S] is None


def test_a_request_in_flight_across_a_stats_reset_ends_in_the_new_window() -> None:
    """A stalled request still open when the counters are reset is carried into the next window and leaves it when
    the client gives up, so later windows never count a phantom request in flight."""
    import asyncio

    from lfw.remote.proxy import Proxy

    async def scenario() -> tuple[int, int]:
        async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            await reader.read()
            writer.close()

        origin = await asyncio.start_server(upstream, "127.0.0.1", 0)
        proxy = Proxy(("127.0.0.1", origin.sockets[0].getsockname()[1]), seed=0)
        front = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
        proxy.control({"op": "fault", "kind": "stall", "count": 1})
        _, client = await asyncio.open_connection("127.0.0.1", front.sockets[0].getsockname()[1])
        client.write(b"GET /lfw/a.jpg HTTP/1.1\r\nHost: x\r\n\r\n")
        await client.drain()
        while proxy.window.in_flight == 0:
            await asyncio.sleep(0.01)
        proxy.control({"op": "stats", "reset": True})
        carried = proxy.window.in_flight
        client.close()  # the client gives up on the stalled request
        for _ in range(500):  # a hang guard, not the assertion
            if proxy.window.in_flight == 0:
                break
            await asyncio.sleep(0.01)
        left = proxy.window.in_flight
        for server in (front, origin):
            server.close()
        return carried, left

    assert asyncio.run(scenario()) == (1, 0)
