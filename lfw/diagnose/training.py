"""The measured training loop: LoaderPass with a training step, and worker-side load times to go with it.

Nothing here keeps its own clock for the pass: :class:`~lfw.measure.LoaderPass` times the pass, the waits and
the steps (``step=``), exactly as the benchmarks do. This module adds the two things LoaderPass does not know:

- what a step costs: a sleep of a given length (emulated compute, which leaves the CPU to the workers) or a
  small CNN forward and backward (real compute, on CUDA when present, synchronized before the step returns);
- when each batch was loaded and by which worker, from the :class:`~lfw.diagnose.events.LoadStamp` that the
  instrumented collate function appends to the batch. The step callback takes the stamp off before the model
  sees the batch.

Worker stamps are absolute ``perf_counter`` times (CLOCK_MONOTONIC, shared by all processes on Linux);
LoaderPass's events are relative to the pass start ``PassResult.t0`` on the same clock.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, default_collate
from tqdm import tqdm

from lfw.data.collate import collate_skipping
from lfw.diagnose.events import BatchRecord, LoadStamp, TimedDataset, split_stamp, timed_collate
from lfw.errors import LFWError
from lfw.measure import LoaderConfig, LoaderPass, PassResult
from lfw.measure.loader_pass import sleep_step

MODELS = ("cnn",)


class SmallCNN(nn.Module):
    """A deliberately small image classifier: two strided convolutions, global pooling, a linear head.

    It stands in for "a real step" on a CPU: enough arithmetic to compete with the workers for cores, small
    enough that a diagnose run stays in seconds. The first convolution has stride 4 so 250x250 inputs are
    cheap; uint8 batches are converted to float inside the step, as a training loop on uint8 data would.
    """

    def __init__(self, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=5, stride=4, padding=2), nn.ReLU(),
            nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def cnn_step(classes: int, device: torch.device) -> Callable[[Any], None]:
    """Real compute: forward, cross-entropy, backward and an SGD update of :class:`SmallCNN` on ``device``.

    On CUDA the step synchronizes before it returns, so the step's clock stops when the kernels have run, not
    when they were queued.
    """
    model = SmallCNN(max(classes, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step(batch: Any) -> None:
        images, labels = batch[0].to(device, non_blocking=True), batch[1].to(device, non_blocking=True)
        if not images.is_floating_point():
            images = images.float().div_(255)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels.long() % model.head.out_features)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return step


def make_step(model: str | None, step_ms: float | None, classes: int) -> tuple[Callable[[Any], None], str]:
    """The step callable and a label for reports (``sleep 50 ms`` or ``cnn on cpu``)."""
    if model is not None:
        if model not in MODELS:
            raise LFWError(f"unknown model {model!r}; choose one of: {', '.join(MODELS)} (or use --step-ms)")
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return cnn_step(classes, device), f"{model} on {device.type}"
    if step_ms is None or step_ms < 0 or not math.isfinite(step_ms):
        raise LFWError(f"--step-ms must be a number of milliseconds, 0 or more, got {step_ms}")
    return sleep_step(step_ms / 1e3), f"sleep {step_ms:g} ms"


class _Recorder:
    """The step LoaderPass calls: takes the stamp off the batch, notes the time, runs the real step."""

    def __init__(self, step: Callable[[Any], None], bar: tqdm) -> None:
        self.step = step
        self.bar = bar
        self.stamps: list[LoadStamp | None] = []

    def __call__(self, batch: Any) -> None:
        batch, stamp = split_stamp(batch)
        self.stamps.append(stamp)
        self.step(batch)
        self.bar.update(1)


@dataclass
class Measurement:
    """One measured training pass and the per-batch timeline reconstructed from it."""

    result: PassResult
    records: list[BatchRecord]
    config: LoaderConfig
    transform: str
    step_label: str
    batch_size: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def batches_per_s(self) -> float:
        return self.result.batches / self.result.wall_s if self.result.wall_s > 0 else 0.0

    @property
    def accelerator_utilization(self) -> float:
        """Compute time / total time with the first step excluded (MLPerf Storage's AU).

        The window runs from the end of the first step to the end of the last, so worker start-up and the
        first batch's load (paid once per epoch) do not count against the pipeline's steady state.
        """
        steps, events = self.result.steps_s, self.result.events
        if len(events) < 2:
            return 1.0 - self.result.data_wait_fraction
        window = events[-1][3] - events[0][3]
        return sum(steps[1:]) / window if window > 0 else 0.0

    @property
    def step_s(self) -> float:
        """Mean step time, the first step (model warm-up) excluded when there are others."""
        steps = self.result.steps_s[1:] or self.result.steps_s
        return statistics.fmean(steps) if steps else 0.0


def _records(result: PassResult, stamps: list[LoadStamp | None]) -> list[BatchRecord]:
    """Per-batch records on the pass's clock (seconds since it started)."""
    t0 = result.t0
    records = []
    for i, (ev, stamp) in enumerate(zip(result.events, stamps, strict=False)):
        rec = BatchRecord(i, stamp.worker if stamp else -1, ask=ev[0], got=ev[1], step_start=ev[2], step_end=ev[3])
        if stamp is not None:
            rec.load_start, rec.load_end = stamp.start - t0, stamp.end - t0
        records.append(rec)
    return records


def measure_training(dataset: Dataset, config: LoaderConfig, batches: int, step: Callable[[Any], None], *,
                     transform: str = "none", step_label: str = "", progress: bool = True) -> Measurement:
    """One LoaderPass over ``batches`` batches with ``step`` as the training step, workers instrumented.

    Memory sampling is off: its background thread would compete with the step for the same cores. The step
    moves the batch to its device itself, so a host-to-device copy counts as step time.
    """
    skipping = getattr(dataset, "on_error", "raise") == "skip"
    collate = timed_collate(collate_skipping if skipping else default_collate)
    loader = config.build(TimedDataset(dataset), collate_fn=collate)
    total = min(batches, len(loader))
    desc = f"training {step_label or 'loop'} with {config.num_workers} workers"
    with tqdm(total=total, unit="batch", desc=desc, disable=not progress, leave=False) as bar:
        recorder = _Recorder(step, bar)
        with LoaderPass(loader, batches, memory_interval_s=None, step=recorder) as runner:
            runner.setup()
            result = runner.run()
    records = _records(result, recorder.stamps)
    return Measurement(result, records, config, transform, step_label, config.batch_size)

