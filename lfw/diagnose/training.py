"""The measured training loop: :class:`~lfw.measure.LoaderPass` with a training step (a sleep, a small CNN or
the user's), and the workers' load stamps (:mod:`lfw.diagnose.events`) put on the pass's clock. Any dataset is
instrumented (:func:`instrument`), so :func:`measure_pipeline` measures a decode pipeline named by a decoders case
id or a spec (:func:`pipeline_setup`; docs/diagnose.md, "A decode pipeline instead of a preset").
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn
from torch.utils.data import Dataset
from tqdm import tqdm

from lfw.diagnose.events import BatchRecord, LoadStamp, instrument, split_stamp
from lfw.diagnose.feeds import DECODERS_GROUP
from lfw.errors import LFWError, check_choice
from lfw.measure import LoaderConfig, LoaderPass, PassResult
from lfw.measure.loader_pass import sleep_step
from lfw.suite.user_dataset import FORM, load_factory, user_dataset

if TYPE_CHECKING:
    from lfw.pipelines import Pipeline

MODELS = ("cnn",)
SUITE_FLAG = "--bench-dataset"  # the suite's option whose factory --dataset takes, named in its errors
STEP_WORDS = (("a callable that returns a Dataset", "a callable that takes a batch"),  # a factory's words, a step's
              (FORM, "MODULE:FN (e.g. examples.train_imagefolder:step)"))
DEFAULT_WORKERS = 2  # --workers when not given, a --pipeline spec's too
SPEC_EXAMPLE = "decoder=simplejpeg,threads=2"


def cnn_step(classes: int, device: torch.device) -> Callable[[Any], None]:
    """Forward, cross-entropy, backward and an SGD update of a deliberately small image classifier (two strided
    convolutions, global pooling, a linear head) on ``device`` (uint8 batches made float inside the step); on CUDA
    synchronized before it returns."""
    outputs = max(classes, 2)
    model = nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=5, stride=4, padding=2), nn.ReLU(),
        nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, outputs),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step(batch: Any) -> None:
        images, labels = batch[0].to(device, non_blocking=True), batch[1].to(device, non_blocking=True)
        if not images.is_floating_point():
            images = images.float().div_(255)
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images), labels.long() % outputs).backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return step


def make_step(model: str | None, step_ms: float | None, classes: int) -> tuple[Callable[[Any], None], str]:
    """The step callable and a label for reports (``sleep 50 ms`` or ``cnn on cpu``)."""
    if model is not None:
        check_choice("model", model, MODELS, " (or use --step-ms)")
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return cnn_step(classes, device), f"{model} on {device.type}"
    if step_ms is None or step_ms < 0 or not math.isfinite(step_ms):
        raise LFWError(f"--step-ms must be a number of milliseconds, 0 or more, got {step_ms}")
    return sleep_step(step_ms / 1e3), f"sleep {step_ms:g} ms"


# --- the user's own dataset and step: python -m lfw.diagnose --dataset MODULE:FACTORY --step MODULE:FN ----------
def dataset_from(spec: str) -> Dataset:
    """The dataset ``--dataset MODULE:FACTORY`` names, checked as ``--bench-dataset`` is
    (:func:`lfw.suite.user_dataset.user_dataset`); its errors name ``--dataset``."""
    try:
        return user_dataset(spec)
    except LFWError as exc:
        raise LFWError(str(exc).replace(SUITE_FLAG, "--dataset")) from None


def step_from(spec: str) -> Callable[[Any], None]:
    """The step ``--step MODULE:FN`` names: a callable that takes one batch as the loader yields it and runs one
    training step (on CUDA synchronizing before it returns, as :func:`cnn_step` does)."""
    try:
        return cast(Callable[[Any], None], load_factory(spec))
    except LFWError as exc:
        text = str(exc).replace(SUITE_FLAG, "--step")
        for factory, step in STEP_WORDS:
            text = text.replace(factory, step)
        raise LFWError(text) from None


@dataclass
class Measurement:
    """One measured training pass and the per-batch timeline reconstructed from it."""

    result: PassResult
    records: list[BatchRecord]
    config: LoaderConfig
    transform: str
    step_label: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def batches_per_s(self) -> float:
        return self.result.batches / self.result.wall_s if self.result.wall_s > 0 else 0.0

    @property
    def accelerator_utilization(self) -> float:
        """Compute time over :attr:`steady_window_s` (MLPerf Storage's AU: the first step excluded)."""
        if len(self.result.events) < 2:
            return 1.0 - self.result.data_wait_fraction
        window = self.steady_window_s
        return sum(self.result.steps_s[1:]) / window if window > 0 else 0.0

    @property
    def steady_window_s(self) -> float:
        """From the end of the first step to the end of the last (0 with fewer than 2 steps)."""
        events = self.result.events
        return events[-1][3] - events[0][3] if len(events) > 1 else 0.0

    @property
    def capacity(self) -> int:
        """Most batches in flight: ``prefetch_factor`` (2 when unset) x workers."""
        return (self.config.prefetch_factor or 2) * self.config.num_workers

    @property
    def step_s(self) -> float:
        """Mean step time, the first step (model warm-up) excluded when there are others."""
        steps = self.result.steps_s[1:] or self.result.steps_s
        return statistics.fmean(steps) if steps else 0.0


def measure_training(dataset: Dataset, config: LoaderConfig, batches: int, step: Callable[[Any], None], *,
                     transform: str = "none", step_label: str = "", progress: bool = True,
                     warmup: bool = False) -> Measurement:
    """One LoaderPass over ``batches`` batches with ``step`` as the training step, workers instrumented, memory
    sampling off (its thread would compete with the step). With ``warmup`` an untimed epoch without a step runs
    first (persistent workers started, buffers touched). The workers are stopped when the pass ends."""
    timed, collate = instrument(dataset, config.batch_size)
    loader = config.build(timed, collate_fn=collate)
    stamps: list[LoadStamp | None] = []
    with tqdm(total=min(batches, len(loader)), unit="batch", desc=f"training {step_label or 'loop'} with "
              f"{config.num_workers} workers", disable=not progress, leave=False) as bar:

        def recorder(batch: Any) -> None:  # takes the stamp off the batch, then runs the real step
            batch, stamp = split_stamp(batch)
            stamps.append(stamp)
            step(batch)
            bar.update(1)

        if warmup:
            warm = LoaderPass(loader, batches, memory_interval_s=None)
            warm.run()
            warm.finish()  # the warm-up epoch is drained; persistent workers stay for the measured pass
        with LoaderPass(loader, batches, memory_interval_s=None, step=recorder) as runner:
            result = runner.run()
            runner.close(stop_workers=True)  # persistent workers too: one pass, and none left to a later one
    records = [BatchRecord.stamped(i, stamp, result.t0, ev)  # on the pass's clock: seconds since it started
               for i, (ev, stamp) in enumerate(zip(result.events, stamps, strict=False))]
    return Measurement(result, records, config, transform, step_label)


# --- decode pipelines ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PipelineSetup:
    """A decode pipeline to measure: what names it (a decoders case id or a spec), the pipeline, the loader."""

    name: str
    pipeline: Pipeline
    config: LoaderConfig

    @property
    def label(self) -> str:
        """``simplejpeg-w2`` for a case; the pipeline's label and worker count for a spec."""
        return self.name if "=" not in self.name else f"{self.pipeline.label}-w{self.config.num_workers}"


def _spec(text: str) -> Pipeline:
    """A :class:`~lfw.pipelines.Pipeline` from ``key=value,...`` over its fields (``decoder=pil,storage=tar``)."""
    from lfw.pipelines import Pipeline

    fields = {f.name: f for f in dataclasses.fields(Pipeline)}
    values: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or key not in fields:
            raise LFWError(f"pipeline spec {text!r}: {part!r} is not one of {', '.join(f'{k}=...' for k in fields)}")
        if "int" in str(fields[key].type):
            if raw.lower() == "none" and "None" in str(fields[key].type):
                values[key] = None
                continue
            try:
                values[key] = int(raw)
            except ValueError:
                raise LFWError(f"pipeline spec {text!r}: {key} must be a whole number, got {raw!r}") from None
        else:
            values[key] = raw
    return Pipeline(**values)


def spec_of(pipeline: Pipeline) -> str:
    """The spec that names ``pipeline``: its decoder and every field that differs from the default."""
    from lfw.pipelines import Pipeline

    default = Pipeline()
    return ",".join(f"{f.name}={getattr(pipeline, f.name)}" for f in dataclasses.fields(pipeline)
                    if f.name == "decoder" or getattr(pipeline, f.name) != getattr(default, f.name))


def pipeline_setup(text: str, *, workers: int | None = None, batch_size: int | None = None,
                   prefetch_factor: int | None = None) -> PipelineSetup:
    """The pipeline and loader that ``text`` names: a decoders case id (``simplejpeg-w2``: its pipeline and
    LoaderConfig; ``workers`` None or the case's own) or a spec ``key=value,...`` over the pipeline's fields
    (``workers`` workers, default 2, persistent). ``batch_size`` and ``prefetch_factor`` replace the case's when
    given. Raises :class:`LFWError` (one line) on an unknown id, a bad spec or a contradicting worker count."""
    if "=" in text:
        pipeline = _spec(text)
        n = DEFAULT_WORKERS if workers is None else workers
        config = LoaderConfig(batch_size=64 if batch_size is None else batch_size, num_workers=n,
                              persistent_workers=n > 0, prefetch_factor=prefetch_factor if n else None)
        return PipelineSetup(text, pipeline, config)
    from lfw.suite.matrix import GROUPS  # the benchmark matrix: imported only when a pipeline is asked for

    group = GROUPS[DECODERS_GROUP]
    if text not in group.ids:
        other = next((g.name for g in GROUPS.values() if text in g.ids), None)
        what = f"{text!r} is a {other} case, not a decode pipeline" if other else f"unknown pipeline {text!r}"
        raise LFWError(f"{what}; give a decoders case ({', '.join(group.ids)}) or a spec such as {SPEC_EXAMPLE}")
    case = group.case(text)
    if case.pipeline is None:
        raise LFWError(f"decoders case {text!r} has no pipeline")
    if workers is not None and workers != case.config.num_workers:
        raise LFWError(f"--workers {workers} contradicts case {text}, which runs {case.config.num_workers}; give "
                       f"its pipeline as a spec to choose the workers: --pipeline {spec_of(case.pipeline)} "
                       f"--workers {workers}")
    config = case.config if batch_size is None else dataclasses.replace(case.config, batch_size=batch_size)
    if prefetch_factor is not None and config.num_workers:
        config = dataclasses.replace(config, prefetch_factor=prefetch_factor)
    return PipelineSetup(text, case.pipeline, config)


def pipeline_dataset(setup: PipelineSetup, root: str | os.PathLike[str], images: int) -> Dataset:
    """The pipeline's dataset over the first ``images`` images under ``root`` (batches of the loader's size
    where the pipeline makes its own batches)."""
    return setup.pipeline.dataset(Path(root), images, batch_size=setup.config.batch_size)


def full_step(setup: PipelineSetup, step: Callable[[Any], None]) -> Callable[[Any], None]:
    """``step`` after the pipeline's own per-batch work (a ``deferred`` pipeline's normalization), if it has any."""
    consumer = setup.pipeline.consumer_step()
    if consumer is None:
        return step

    def both(batch: Any) -> None:
        consumer(batch)
        step(batch)

    return both


def measure_pipeline(setup: PipelineSetup, root: str | os.PathLike[str], batches: int, step: Callable[[Any], None],
                     *, dataset: Dataset | None = None, step_label: str = "",
                     progress: bool = True, warmup: bool = False) -> Measurement:
    """One measured training pass (:func:`measure_training`) through a decode pipeline over ``dataset`` (else
    :func:`pipeline_dataset` of ``batches x batch_size`` images under ``root``); the pipeline's own per-batch
    work counts as step time (:func:`full_step`); ``extra["pipeline"]`` names the pipeline."""
    if dataset is None:
        dataset = pipeline_dataset(setup, root, batches * setup.config.batch_size)
    m = measure_training(dataset, setup.config, batches, full_step(setup, step), transform=setup.pipeline.label,
                         step_label=step_label, progress=progress, warmup=warmup)
    m.extra["pipeline"] = setup.label
    return m
