"""Does ``watch(loader)`` read a training loop right? Its data-bound share against one measured outside it.

    flock /tmp/lfw-cpu.lock python -m tools.watch_check > docs/runs/watch-check.txt

An ordinary torchvision training loop written here, data-bound and compute-bound (:data:`CONFIGS`), in
``--repeats`` unwatched/watched pairs (docs/diagnose.md, "Does it read the loop right?"). Exit 0 when every
watched run's ``data_bound_share`` is within :data:`AGREE_POINTS` points of its time in ``next()`` timed outside
the wrapper, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Subset
from torchvision import models, transforms
from torchvision.datasets import ImageFolder

from lfw.cli.args import OneLineParser
from lfw.cli.table import table
from lfw.data.root import resolve_root
from lfw.diagnose import watch
from lfw.errors import LFWError, cli_entry
from tools.stamp import commit_label

AGREE_POINTS = 5.0

CONFIGS: dict[str, dict[str, Any]] = {
    "data-bound": {"transform": transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
        transforms.ColorJitter(0.4, 0.4, 0.4, 0.1), transforms.RandomRotation(10), transforms.ToTensor()]),
        "model": lambda classes: nn.Sequential(nn.Conv2d(3, 8, 5, stride=4, padding=2), nn.ReLU(),
                                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes)),
        "what": "heavy augmentation to 224 px, 1 worker; a two-layer CNN"},
    "compute-bound": {"transform": transforms.Compose([transforms.Resize(64), transforms.ToTensor()]),
                      "model": lambda classes: models.resnet18(num_classes=classes),
                      "what": "resize to 64 px, 1 worker; ResNet-18"},
}


def timed_loop(batches: Iterable[Any], step: Callable[[Any], None]) -> float:
    """Train over ``batches``, timing each ``next()`` from outside: time in next() over the loop's wall time."""
    iterator = iter(batches)
    in_next = 0.0
    t0 = end = time.perf_counter()
    while True:
        t = time.perf_counter()
        try:
            batch = next(iterator)
        except StopIteration:
            break
        in_next += time.perf_counter() - t
        step(batch)
        end = time.perf_counter()
    return in_next / (end - t0) if end > t0 else 0.0


def trainer(model: nn.Module) -> Callable[[Any], None]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(batch: Any) -> None:
        images, labels = batch
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        float(loss.detach())

    return step


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m tools.watch_check", description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=40, help="batches per run (default 40)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3, help="unwatched/watched pairs per configuration (default 3)")
    p.add_argument("--path", default=None, help="LFW folder (default: $LFW_ROOT, else the cached synthetic tree)")
    args = p.parse_args(argv)
    for flag in ("steps", "batch_size", "repeats"):
        if getattr(args, flag) < 1:
            raise LFWError(f"--{flag.replace('_', '-')} must be 1 or more, got {getattr(args, flag)}")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    source = resolve_root(args.path)
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, commit {commit_label()}: python -m "
          f"tools.watch_check {' '.join(sys.argv[1:] if argv is None else argv)}".rstrip())
    print(f"# {args.steps} steps of {args.batch_size} images per run, {args.repeats} unwatched/watched pairs per "
          f"configuration; {source.kind} data at {source.path}; torch threads 1; agree: within {AGREE_POINTS:g} "
          "points")
    print("# independent: time in next() over wall time, timed outside the wrapper in the same run")
    agreed = total = 0
    for name, config in CONFIGS.items():
        rows = []
        data = ImageFolder(str(source.path), transform=config["transform"])
        subset = Subset(data, range(min(len(data), args.steps * args.batch_size)))
        loader = partial(DataLoader, subset, batch_size=args.batch_size, num_workers=1, drop_last=True)
        for pair in range(1, args.repeats + 1):
            step = trainer(config["model"](len(data.classes)))
            unwatched = timed_loop(loader(), step)
            w = watch(loader(), quiet=True, run=None)
            independent = timed_loop(w, step)
            s = w.summary()
            diff = (s["data_bound_share"] - independent) * 100
            ok = abs(diff) <= AGREE_POINTS
            agreed += ok
            total += 1
            rows.append((name, str(pair), f"{unwatched:.1%}", f"{independent:.1%}", f"{s['data_bound_share']:.1%}",
                         f"{s['data_bound_low']:.0%}-{s['data_bound_high']:.0%}", f"{diff:+.2f}",
                         f"{s['step_ms_p50']:.1f} ms", f"{s['wait_ms_p50']:.1f} ms",
                         f"{s['overhead_us_per_step']:.1f} us", "yes" if ok else "NO"))
        print("\n" + table(("configuration", "pair", "unwatched", "independent", "watch", "95% CI", "diff", "step p50",
                            "wait p50", "overhead", "agree"), rows, right=range(1, 10)))
        print(f"# {name}: {config['what']}")
        print(f"# verdict of the last run: {w.verdict()}")
    print(f"\nwatched runs within {AGREE_POINTS:g} points of the independent share: {agreed} of {total}")
    return 0 if agreed == total else 1


if __name__ == "__main__":
    sys.exit(main())
