"""``python -m lfw.remote``: time loading LFW from an S3 endpoint with a concurrency strategy.

``--local`` starts moto and the latency proxy on 127.0.0.1, uploads the tree (``--path``, ``$LFW_ROOT`` or
synthetic), reads it through the proxy at ``--latency-ms`` and stops both; ``--endpoint URL --bucket B [--prefix
P]`` reads an existing endpoint (credentials as boto3 finds them). Timing is the CLI's usual one through the shared
primitive. Exit 2 for bad input (unreachable endpoint, missing credentials or objects), 4 when the machine failed.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from statistics import median

import torch

from lfw.cli.args import OneLineParser
from lfw.data.root import resolve_root
from lfw.errors import cli_entry
from lfw.measure import LoaderConfig, LoaderPass, PassResult
from lfw.measure.printout import report_timing
from lfw.remote.bench import CONCURRENCY, traffic
from lfw.remote.client import S3Settings
from lfw.remote.dataset import S3LFW, STRATEGIES
from lfw.remote.endpoint import local_s3, upload_tree
from lfw.results import keys as K


def parser() -> OneLineParser:
    p = OneLineParser(prog="python -m lfw.remote", description=__doc__.splitlines()[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", action="store_true", help="start a local S3 endpoint and the latency proxy")
    where.add_argument("--endpoint", help="URL of an existing S3 endpoint (http://host:port)")
    p.add_argument("--bucket", default="lfw", help="bucket (default lfw)")
    p.add_argument("--prefix", default="lfw", help="key prefix above the person folders (default lfw)")
    p.add_argument("--path", default=None, help="with --local: the LFW tree to upload (default $LFW_ROOT or synthetic)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="with --local: injected first-byte delay")
    p.add_argument("--strategy", choices=STRATEGIES, default="threads", help="concurrency strategy (default threads)")
    p.add_argument("--concurrency", type=int, default=None,
                   help=f"requests in flight per loading process for --strategy threads (default "
                        f"{CONCURRENCY['threads']})")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers (default 2)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--images", type=int, default=128, help="objects to read per pass (default 128)")
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--read-timeout", type=float, default=10.0, help="seconds before a silent read is retried")
    return p


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for name in ("images", "repetitions"):
        if getattr(args, name) < 1:
            parser().error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if args.latency_ms < 0:
        parser().error(f"--latency-ms must be 0 or more, got {args.latency_ms:g}")
    config = LoaderConfig(batch_size=args.batch_size, num_workers=args.workers,
                          persistent_workers=args.workers > 0)  # checks the values
    concurrency = args.concurrency or CONCURRENCY["threads"]
    torch.set_num_threads(1)
    if not args.local:
        settings = S3Settings(args.endpoint, args.bucket, args.prefix, read_timeout_s=args.read_timeout)
        measure(S3LFW(settings, args.strategy, concurrency, args.images), config, args.repetitions)
        return 0
    root = resolve_root(args.path).path
    with local_s3() as s3:
        upload_tree(s3.direct, root, args.images)
        s3.shape(latency_ms=args.latency_ms)
        settings = replace(s3.settings, read_timeout_s=args.read_timeout)
        data = S3LFW(settings, args.strategy, concurrency, args.images)
        s3.stats(reset=True)  # the passes' traffic, not the listing's
        results = measure(data, config, args.repetitions)
        passes = len(results) + 1  # the warm-up pass went through the proxy too
        seen = traffic(s3.stats(reset=True), passes * results[0].images, in_flight_limit(data, config))
        print(f"Through the proxy ({args.latency_ms:g} ms injected): {seen[K.REQUESTS_PER_IMAGE]:.2f} requests per "
              f"image, first byte p50 {seen.get(K.FIRST_BYTE_P50_MS, 0):.1f} ms, p99 "
              f"{seen.get(K.FIRST_BYTE_P99_MS, 0):.1f} ms, {seen[K.MEAN_IN_FLIGHT]:.1f} requests in flight on average; "
              f"Little's-law bound {seen.get(K.LITTLES_LAW_IMAGES_PER_S, 0):.1f} images/s")
    return 0


def in_flight_limit(data: S3LFW, config: LoaderConfig) -> int:
    """Most requests in flight: loading processes x requests each (1, the thread pool, or the batch)."""
    per_process = {"serial": 1, "threads": data.concurrency, "batch": config.batch_size}[data.strategy]
    return max(config.num_workers, 1) * per_process


def measure(data: S3LFW, config: LoaderConfig, repetitions: int) -> list[PassResult]:
    """Print what is read and how, then time it (a warm-up pass, then ``repetitions``)."""
    loader = config.build(data)
    settings = data.reader.settings
    print(f"S3 {settings.endpoint} s3://{settings.bucket}/{settings.prefix}/: {len(data)} objects, strategy "
          f"{data.strategy}, {config.num_workers} workers, batch {config.batch_size}: up to "
          f"{in_flight_limit(data, config)} requests in flight")
    results = report_timing(LoaderPass(loader, memory_interval_s=None), repetitions)
    print(f"median {median(r.images_per_s for r in results):.1f} images/s")
    return results


if __name__ == "__main__":
    sys.exit(main())
