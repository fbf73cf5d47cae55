"""``python -m lfw.remote.proxy --upstream 127.0.0.1:PORT``: latency, bandwidth and faults between client and S3.

A small asyncio HTTP/1.1 proxy (standard library only; docs/remote.md) that relays request by request and can
hold each response's first byte for ``latency_ms`` times a seeded log-normal jitter (a ``tail_p`` share
``tail_x`` times more), cap each connection's bandwidth, and inject faults for the next ``count`` requests whose
path holds ``match``: ``503``/``500`` (an S3 error document), ``reset`` (half the body, then a TCP reset),
``stall`` (the head, then nothing). It counts what crossed it (:class:`Window`).

It binds 127.0.0.1 on a free port and prints ``{"port": N}``, then answers one JSON line per JSON command on its
standard input (``configure``, ``fault``, ``clear-faults``, ``stats`` with ``reset``), and exits when that closes.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import socket
import struct
import sys
import threading
import time
from collections import Counter
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from typing import Any

from lfw.cli.args import OneLineParser
from lfw.errors import LFWError, cli_entry

CHUNK = 64 * 1024
FAULT_KINDS = ("503", "500", "reset", "stall")
MAX_SAMPLES = 200_000
ERROR_BODY = ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>injected by lfw.remote.proxy'
              '</Message></Error>')
REASONS = {"503": ("503 Slow Down", "SlowDown"), "500": ("500 Internal Server Error", "InternalError")}


@dataclass
class Shaping:
    """What the proxy does to every response: delay (ms), its jitter and tail, and a bandwidth cap."""

    latency_ms: float = 0.0
    jitter: float = 0.2  # sigma of a log-normal factor with mean 1
    tail_p: float = 0.01
    tail_x: float = 5.0
    bandwidth_mbps: float = 0.0  # per connection; 0: no cap


@dataclass
class Fault:
    kind: str
    count: int
    match: str = ""


@dataclass
class Window:
    """Counters since the last reset: requests by kind, connections, bytes each way, GETs of a key fetched already
    (retries), faults, first-byte times and durations, and requests in flight over time and over the busy span
    (first request to last reply, what Little's law is taken over)."""

    started: float = field(default_factory=time.perf_counter)
    requests: Counter[str] = field(default_factory=Counter)
    connections: int = 0
    bytes_in: int = 0  # client to proxy
    bytes_out: int = 0  # proxy to client
    faults: Counter[str] = field(default_factory=Counter)
    repeated_gets: int = 0
    first_byte_s: list[float] = field(default_factory=list)
    duration_s: list[float] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    in_flight_area: float = 0.0  # integral of requests in flight over time
    last_change: float = field(default_factory=time.perf_counter)
    keys: set[str] = field(default_factory=set)
    first_start: float | None = None  # the busy span: from the window's first request to its last reply
    last_end: float | None = None

    def flight(self, change: int) -> None:
        now = time.perf_counter()
        self.in_flight_area += self.in_flight * (now - self.last_change)
        self.last_change = now
        if change > 0 and self.first_start is None:
            self.first_start = now
        elif change < 0:
            self.last_end = now
        self.in_flight += change
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def successor(self) -> Window:
        """The next window: requests still in flight are carried into it, and it counts their end."""
        after = Window(in_flight=self.in_flight, max_in_flight=self.in_flight)
        if self.in_flight:
            after.first_start = after.started
        return after

    def summary(self) -> dict[str, Any]:
        self.flight(0)
        seconds = max(time.perf_counter() - self.started, 1e-9)
        busy = (self.last_end - self.first_start if self.first_start is not None and self.last_end is not None
                else 0.0)

        def pct(values: list[float], q: float) -> float | None:
            if not values:
                return None
            ordered = sorted(values)
            return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

        return {"seconds": seconds, "requests": dict(self.requests), "connections": self.connections,
                "bytes_in": self.bytes_in, "bytes_out": self.bytes_out, "faults": dict(self.faults),
                "repeated_gets": self.repeated_gets, "mean_in_flight": self.in_flight_area / seconds,
                "max_in_flight": self.max_in_flight, "busy_s": busy,
                "busy_mean_in_flight": self.in_flight_area / busy if busy > 0 else None,
                "first_byte_p50_s": pct(self.first_byte_s, 0.50), "first_byte_p99_s": pct(self.first_byte_s, 0.99),
                "mean_duration_s": sum(self.duration_s) / len(self.duration_s) if self.duration_s else None,
                "completed": len(self.duration_s)}


class Proxy:
    def __init__(self, upstream: tuple[str, int], seed: int) -> None:
        self.upstream = upstream
        self.shaping = Shaping()
        self.faults: list[Fault] = []
        self.window = Window()
        self.rng = random.Random(seed)

    def control(self, message: dict[str, Any]) -> dict[str, Any]:
        """Answer one command (called in the event loop)."""
        op = message.get("op")
        if op == "configure":
            values = {k: float(v) for k, v in message.items() if k != "op"}
            unknown = set(values) - set(asdict(self.shaping))
            if unknown or any(not math.isfinite(v) or v < 0 for v in values.values()):
                return {"error": f"bad shaping {message}: known {sorted(asdict(self.shaping))}, finite and >= 0"}
            self.shaping = Shaping(**{**asdict(self.shaping), **values})
            return {"ok": True, "shaping": asdict(self.shaping)}
        if op == "fault":
            kind, count = str(message.get("kind")), int(message.get("count", 1))
            if kind not in FAULT_KINDS or count < 0:
                return {"error": f"fault kind must be one of {FAULT_KINDS} with count >= 0"}
            self.faults.append(Fault(kind, count, str(message.get("match", ""))))
            return {"ok": True}
        if op == "clear-faults":
            self.faults.clear()
            return {"ok": True}
        if op == "stats":
            stats = self.window.summary()
            if message.get("reset"):
                self.window = self.window.successor()
            return stats
        return {"error": f"unknown op {op!r}"}

    def delay_s(self) -> float:
        s = self.shaping
        if s.latency_ms <= 0:
            return 0.0
        factor = math.exp(self.rng.gauss(-s.jitter * s.jitter / 2, s.jitter)) if s.jitter > 0 else 1.0
        if s.tail_p > 0 and self.rng.random() < s.tail_p:
            factor *= s.tail_x
        return s.latency_ms / 1e3 * factor

    def take_fault(self, target: str) -> str | None:
        for fault in self.faults:
            if fault.count > 0 and fault.match in target:
                fault.count -= 1
                self.window.faults[fault.kind] += 1
                return fault.kind
        return None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.window.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        try:
            with suppress(ConnectionError, asyncio.IncompleteReadError, ValueError):
                while await self.one_exchange(reader, writer, up_reader, up_writer):
                    pass
        finally:
            writer.close()
            up_writer.close()

    async def one_exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> bool:
        """Relay one request and its response; False when the client closed the connection."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        request_line, headers = parse_head(head)
        method, target, _version = request_line.split(" ", 2)
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        window = self.window
        window.bytes_in += len(head) + len(body)
        kind = request_kind(method, target)
        window.requests[kind] += 1
        if kind == "GET":
            if target in window.keys:
                window.repeated_gets += 1
            window.keys.add(target)
        t0 = time.perf_counter()
        window.flight(+1)
        try:
            fault = self.take_fault(target)
            delay = self.delay_s()
            if fault in REASONS:
                await asyncio.sleep(delay)
                reason, code = REASONS[fault]
                payload = ERROR_BODY.format(code=code).encode()
                writer.write(f"HTTP/1.1 {reason}\r\nContent-Type: application/xml\r\nContent-Length: {len(payload)}"
                             "\r\n\r\n".encode() + payload)
                await writer.drain()
                self.done(t0, t0 + delay, len(payload))
                return True
            up_writer.write(head + body)
            await up_writer.drain()
            response_head = await up_reader.readuntil(b"\r\n\r\n")
            status_line, response_headers = parse_head(response_head)
            await asyncio.sleep(delay)
            if fault == "stall":
                await reader.read()  # nothing more is sent; wait for the client to give up and close
                return False
            writer.write(response_head)
            first_byte = time.perf_counter()
            sent = len(response_head)
            keep_alive = True
            status = int(status_line.split()[1])
            if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
                pass
            elif "chunked" in response_headers.get("transfer-encoding", "").lower():
                sent += await self.relay_chunked(up_reader, writer)
            elif "content-length" in response_headers:
                length = int(response_headers["content-length"])
                if fault == "reset":
                    sent += await self.relay(up_reader, writer, length // 2)
                    reset(writer)
                    self.done(t0, first_byte, sent)
                    return False
                sent += await self.relay(up_reader, writer, length)
            else:  # no length: the body runs to the end of the connection
                while chunk := await up_reader.read(CHUNK):
                    writer.write(chunk)
                    sent += len(chunk)
                keep_alive = False
            await writer.drain()
            self.done(t0, first_byte, sent)
            return keep_alive
        finally:
            self.window.flight(-1)  # the current window: one reset while this request flew carried it there

    def done(self, t0: float, first_byte: float, sent: int) -> None:
        """Count a finished request in the current window (where a reset during it carried it)."""
        window = self.window
        window.bytes_out += sent
        if len(window.duration_s) < MAX_SAMPLES:
            window.first_byte_s.append(first_byte - t0)
            window.duration_s.append(time.perf_counter() - t0)

    async def relay(self, source: asyncio.StreamReader, writer: asyncio.StreamWriter, length: int) -> int:
        """Copy ``length`` bytes, paced to the bandwidth cap; returns the bytes sent."""
        left = length
        while left > 0:
            chunk = await source.readexactly(min(CHUNK, left))
            writer.write(chunk)
            left -= len(chunk)
            if self.shaping.bandwidth_mbps > 0:
                await writer.drain()
                await asyncio.sleep(len(chunk) * 8 / (self.shaping.bandwidth_mbps * 1e6))
        return length

    async def relay_chunked(self, source: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        sent = 0
        while True:
            size_line = await source.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip(), 16)
            writer.write(size_line)
            sent += len(size_line)
            if size == 0:
                while True:  # trailers, then the empty line
                    line = await source.readuntil(b"\r\n")
                    writer.write(line)
                    sent += len(line)
                    if line == b"\r\n":
                        return sent
            sent += await self.relay(source, writer, size + 2)  # the data and its CRLF


def parse_head(head: bytes) -> tuple[str, dict[str, str]]:
    """A request's or a response's first line and its headers (names lower-cased)."""
    first, *lines = head.decode("latin-1").split("\r\n")
    fields = (line.partition(":") for line in lines)
    return first, {name.strip().lower(): value.strip() for name, sep, value in fields if sep}


def request_kind(method: str, target: str) -> str:
    """GET (an object), LIST (a bucket listing), HEAD, PUT, or the method itself."""
    path, _, query = target.partition("?")
    if method == "GET" and (path.rstrip("/").count("/") <= 1 or "list-type" in query or "prefix=" in query):
        return "LIST"
    return method


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), the way a dropped connection looks to the client."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def serve(upstream: tuple[str, int], seed: int) -> None:
    proxy = Proxy(upstream, seed)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def read_commands() -> None:  # a thread: stdin is blocking; each command runs in the loop
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                answer: dict[str, Any] = {"error": "not JSON"}
            else:
                answer = asyncio.run_coroutine_threadsafe(_call(proxy, message), loop).result()
            print(json.dumps(answer), flush=True)
        loop.call_soon_threadsafe(stop.set)  # stdin closed: stop serving

    threading.Thread(target=read_commands, daemon=True, name="proxy-control").start()
    async with server:
        await stop.wait()


async def _call(proxy: Proxy, message: Any) -> dict[str, Any]:
    try:
        return proxy.control(message)
    except (AttributeError, TypeError, ValueError) as exc:  # not an object, or a value of the wrong kind
        return {"error": f"bad command {json.dumps(message)}: {exc}"}


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m lfw.remote.proxy", description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT of the S3 endpoint")
    parser.add_argument("--seed", type=int, default=0, help="seed of the injected jitter and tail")
    args = parser.parse_args(argv)
    host, _, port = args.upstream.rpartition(":")
    if not (host and port.isdigit()):
        raise LFWError(f"--upstream must be HOST:PORT, got {args.upstream!r}")
    asyncio.run(serve((host, int(port)), args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
