"""Is this training loop waiting for data? A torchvision ImageFolder, a small model, one line added: ``watch``.

    python examples/train_imagefolder.py                        # CPU, or CUDA when present
    python examples/train_imagefolder.py --augment heavy --workers 1 --model tiny     # waits for data
    python examples/train_imagefolder.py --augment light --workers 2 --model resnet   # computes
    python -m lfw.diagnose --dataset examples.imagefolder:faces --step examples.train_imagefolder:step

The loop below is an ordinary one; the only change for the watcher is ``watch(loader)`` where the loop used
``loader``. When the epoch ends the watcher prints its verdict line to stderr; ``--json`` saves the record and
``--chart`` the timeline. ``step`` is also usable alone as ``--step`` of ``python -m lfw.diagnose`` (it builds
its model on first use). It reads ``LFW_ROOT`` if set, else the synthetic tree of the quick profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Subset
from torchvision import models, transforms
from torchvision.datasets import ImageFolder

from lfw.data.root import resolve_root
from lfw.diagnose import watch

AUGMENT = {
    # decode, resize, tensor: cheap per image
    "light": transforms.Compose([transforms.Resize(112), transforms.ToTensor()]),
    # random crops, flips, colour: several times the decode's cost per image
    "heavy": transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                                 transforms.ColorJitter(0.4, 0.4, 0.4, 0.1), transforms.RandomRotation(10),
                                 transforms.ToTensor(), transforms.Normalize([0.5] * 3, [0.25] * 3)]),
}


def build_model(name: str, classes: int) -> nn.Module:
    """``tiny``: two small convolutions (milliseconds a batch); ``resnet``: torchvision's ResNet-18."""
    if name == "resnet":
        return models.resnet18(num_classes=classes)
    return nn.Sequential(nn.Conv2d(3, 8, 5, stride=4, padding=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(8, classes))


class Trainer:
    """One SGD step of a model on a batch ``(images, labels)``, on ``device``."""

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        self.model, self.device = model.to(device), device
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.loss = nn.CrossEntropyLoss()

    def __call__(self, batch: Any) -> float:
        images, labels = batch[0].to(self.device, non_blocking=True), batch[1].to(self.device, non_blocking=True)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(self.model(images), labels)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())  # reading the loss waits for the step, as most loops do now and then


_trainer: Trainer | None = None


def step(batch: Any) -> None:
    """A training step for ``python -m lfw.diagnose --step examples.train_imagefolder:step`` (tiny model)."""
    global _trainer
    if _trainer is None:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        _trainer = Trainer(build_model("tiny", 5749), device)
    labels = batch[1] % 5749
    _trainer([batch[0], labels])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--augment", choices=sorted(AUGMENT), default="light")
    p.add_argument("--model", choices=("tiny", "resnet"), default="tiny")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=60, help="batches to train on (default 60)")
    p.add_argument("--threads", type=int, default=1, help="torch threads of the step (default 1)")
    p.add_argument("--json", type=Path, default=None, help="save the watcher's record here")
    p.add_argument("--chart", type=Path, default=None, help="draw the timeline here (PNG)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = ImageFolder(str(resolve_root().path), transform=AUGMENT[args.augment])
    data_subset = Subset(data, range(min(len(data), args.steps * args.batch_size)))
    loader = DataLoader(data_subset, batch_size=args.batch_size, shuffle=False, num_workers=args.workers,
                        pin_memory=device.type == "cuda", drop_last=True)
    train = Trainer(build_model(args.model, len(data.classes)), device)

    w = watch(loader)  # the one line: iterate w where the loop iterated loader
    for images, labels in w:
        train([images, labels])

    if args.json is not None:
        print(f"record: {w.save(args.json, name=f'{args.augment}-{args.model}-w{args.workers}')}", file=sys.stderr)
    if args.chart is not None:
        print(f"chart: {w.chart(args.chart)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
