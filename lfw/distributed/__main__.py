"""``torchrun --standalone --nproc-per-node=2 -m lfw.distributed``: every rank measures its loader shard.

Each rank joins the process group (gloo on CPU, nccl on GPUs) with a bounded timeout, so a rank that dies makes
the others fail within it, and runs :func:`lfw.distributed.rank.measure_rank`; rank 0 gathers, prints and saves
the run (docs/distributed.md). Exit codes: 0 done; 1 the sampler did not cover the dataset; 2 bad input
(including "not under torchrun"); 4 a rank lost the others (a rank died or stalled past --timeout).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

from lfw.cli.args import OneLineParser
from lfw.distributed.gathered import GatheredRun, gathered_coverage, lines, next_run_path, same_order_every_epoch, save
from lfw.errors import LFWError, MeasurementError, cli_entry, one_line
from lfw.suite.profiles import PROFILES

EPILOG = """\
examples:
  torchrun --standalone --nproc-per-node=2 -m lfw.distributed
  torchrun --standalone --nproc-per-node=2 -m lfw.distributed --workers 1 --epochs 3 --no-set-epoch
  # several machines: the same command on each, with the rendezvous of the first one
  torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-endpoint=HOST:29400 --rdzv-id=lfw \\
      -m lfw.distributed --path /data/lfw"""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="torchrun ... -m lfw.distributed", description=__doc__.splitlines()[0],
                      epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--path", default=None, help="LFW folder (default: $LFW_ROOT, else the profile's synthetic tree)")
    p.add_argument("--profile", choices=sorted(PROFILES), default="quick", help="synthetic tree size (default quick)")
    p.add_argument("--workers", type=int, default=1, help="DataLoader workers per rank (default 1)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--transform", default="none", help="transform preset (default none)")
    p.add_argument("--epochs", type=int, default=2, help="epochs over each rank's shard (default 2)")
    p.add_argument("--no-set-epoch", action="store_true",
                   help="do not call sampler.set_epoch, as a buggy training loop would: the run flags it")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds a rank waits for the others before failing (default 60)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank (default 1)")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON written by rank 0 (default .benchmarks/distributed/NNNN_distributed-w<N>-<time>.json)")
    return p


AT_LEAST = {"workers": 0, "batch_size": 1, "epochs": 1, "threads": 1}  # a flag, and the least value it takes


def check(args: argparse.Namespace) -> None:
    for flag, least in AT_LEAST.items():
        if getattr(args, flag) < least:
            raise LFWError(f"--{flag.replace('_', '-')} must be {least} or more, got {getattr(args, flag)}")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise LFWError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    if args.out is not None and args.out.exists():
        raise LFWError(f"refusing to overwrite {args.out}; choose another --out")


def rank_env() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun's environment, or a one-line error saying how to launch."""
    try:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", "0"))
    except (KeyError, ValueError):
        raise LFWError("not started by torchrun (RANK and WORLD_SIZE are not set); run: torchrun --standalone "
                       "--nproc-per-node=2 -m lfw.distributed") from None


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check(args)
    rank, world, local_rank = rank_env()
    # torchrun stops the group with SIGTERM: unwind as on Ctrl-C (KeyboardInterrupt), so this rank's workers stop too
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return run_rank(args, rank, world, local_rank)
    except LFWError as exc:  # every rank prints its own line: say which rank it is
        exc.args = (f"rank {rank}: {one_line(exc)}",)
        raise


def run_rank(args: argparse.Namespace, rank: int, world: int, local_rank: int) -> int:
    """This rank's part: join the group, measure its shard; rank 0 gathers, prints and saves the run."""
    import torch
    import torch.distributed as dist

    from lfw.data.dataset import LFWDataset
    from lfw.data.root import resolve_root
    from lfw.distributed.rank import measure_rank
    from lfw.measure import LoaderConfig
    from lfw.measure.machine import machine_info

    torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    if not cuda and os.environ.get("MASTER_ADDR", "") in ("localhost", "127.0.0.1"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # one machine: keep gloo's traffic on the loopback
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    config = LoaderConfig(batch_size=args.batch_size, num_workers=args.workers, timeout_s=args.timeout)
    source = resolve_root(args.path, synthetic_images=PROFILES[args.profile].synthetic_images)
    dataset = LFWDataset(source.path, transform=args.transform)
    dist.init_process_group(backend, timeout=timedelta(seconds=args.timeout))
    try:
        # One write: print() writes text and newline apart, and ranks leaving the rendezvous together interleave them.
        sys.stderr.write(f"rank {rank} of {world}: pid {os.getpid()}, {backend}\n")
        sys.stderr.flush()
        try:
            measured = measure_rank(dataset, config, args.epochs, rank=rank, world_size=world,
                                    set_epoch=not args.no_set_epoch, device=device)
            gathered: list = [None] * world
            dist.all_gather_object(gathered, {**measured.summary(), "orders": measured.orders})
        except RuntimeError as exc:
            if "DataLoader" in str(exc) and "worker" in str(exc):
                raise
            raise MeasurementError(f"rank {rank} lost the other ranks ({one_line(exc)}): a rank died, or stalled "
                                   f"longer than --timeout {args.timeout:g} s") from None
        if rank != 0:
            return 0
        gathered.sort(key=lambda g: g["rank"])
        findings = []
        if args.epochs > 1 and any(same_order_every_epoch(g["orders"]) for g in gathered):
            findings.append("every epoch visited the same order: the training loop never calls "
                            "sampler.set_epoch(epoch), so the data is not reshuffled between epochs")
        coverage = gathered_coverage([g["orders"] for g in gathered], len(dataset))
        outcome = GatheredRun([{k: v for k, v in g.items() if k != "orders"} for g in gathered], coverage, findings)
        header = (f"distributed: {world} ranks ({backend}), {args.workers} DataLoader worker(s) per rank, batch "
                  f"{args.batch_size}, transform {args.transform}, {args.epochs} epochs of {len(dataset):,} images "
                  f"({source.kind})")
        print("\n".join(lines(outcome, header)))
        out = args.out or next_run_path(Path(".benchmarks") / "distributed", world)
        settings = {**config.as_dict(), "transform": args.transform, "epochs": args.epochs,
                    "set_epoch": not args.no_set_epoch}
        machine = {**machine_info(), "dataset_kind": source.kind, "dataset_files": len(dataset)}
        save(outcome, out, settings, world, backend, machine)
        print(f"written: {out}")
        return 0 if all(c.ok for c in coverage) else 1
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
