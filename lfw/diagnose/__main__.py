"""``python -m lfw.diagnose``: is training data-bound? Measure (a preset, ``--pipeline`` or ``--dataset``, with a
sleeping, CNN or ``--step`` step), predict, recommend and draw the timeline, or ``--simulate`` the model alone.
Examples: :data:`EXAMPLES` (``--help``) and docs/diagnose.md.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Subset

from lfw.cli.args import OneLineParser, parse_counts
from lfw.data.dataset import LFWDataset
from lfw.data.root import DataSource, resolve_root
from lfw.data.transforms import PRESETS
from lfw.diagnose.predict import Diagnosis, diagnose, sweep, workers_text
from lfw.diagnose.simulator import PipelineModel, simulate
from lfw.diagnose.timeline import Panel, animate_timeline, draw_timeline
from lfw.diagnose.training import (
    DEFAULT_WORKERS,
    MODELS,
    SPEC_EXAMPLE,
    Measurement,
    PipelineSetup,
    dataset_from,
    make_step,
    measure_pipeline,
    measure_training,
    pipeline_dataset,
    pipeline_setup,
    step_from,
)
from lfw.errors import LFWError, check_choice, cli_entry
from lfw.measure import LoaderConfig
from lfw.measure.resources import usable_cores

DEFAULT_OUT = Path("reports/diagnose")
DEFAULTS = {"workers": DEFAULT_WORKERS, "batch_size": 64, "prefetch_factor": 2, "transform": "none",
            "step_ms": 100.0}  # of the flags left unset (:func:`_defaults`)
DESCRIPTION = "Is training data-bound? Measure the wait for data, predict it with a simulator, draw the timeline."
EXAMPLES = """examples:
  python -m lfw.diagnose --workers 2 --step-ms 50          # emulated 50 ms step (a sleep)
  python -m lfw.diagnose --workers 2 --model cnn --gif     # a real CPU (or CUDA) step, plus an animation
  python -m lfw.diagnose --pipeline simplejpeg-w2 --step-ms 25   # a decode pipeline of the decoders group
  python -m lfw.diagnose --dataset examples.imagefolder:faces --model cnn   # your dataset, a real step
  python -m lfw.diagnose --dataset examples.imagefolder:faces --step examples.train_imagefolder:step
  python -m lfw.diagnose --model cnn --sweep-workers 0,1,2,4   # the worker count for training, measured
  python -m lfw.diagnose --simulate --workers 7 --load-ms 2000 --step-ms 100 --seconds 30
"""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m lfw.diagnose", description=DESCRIPTION, epilog=EXAMPLES,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--simulate", action="store_true", help="run the simulator only (needs --load-ms)")
    p.add_argument("--workers", type=int, default=None, help=f"DataLoader workers / simulated loaders (default "
                   f"{DEFAULTS['workers']}; a --pipeline case runs its own)")
    p.add_argument("--step-ms", type=float, default=None,
                   help=f"step time in ms: a sleep when measuring (default {DEFAULTS['step_ms']:g})")
    p.add_argument("--model", default=None, help=f"a real training step instead of a sleep: {', '.join(MODELS)}")
    p.add_argument("--prefetch-factor", type=int, default=None,
                   help=f"batches per worker in flight (default {DEFAULTS['prefetch_factor']})")
    m = p.add_argument_group("measuring")
    m.add_argument("--path", default=None, help="LFW folder (default: $LFW_ROOT, else a cached synthetic tree)")
    m.add_argument("--batch-size", type=int, default=None, help=f"images per batch (default {DEFAULTS['batch_size']})")
    m.add_argument("--transform", default=None, help=f"preset: {', '.join(PRESETS)} (default {DEFAULTS['transform']})")
    m.add_argument("--pipeline", default=None, metavar="ID",
                   help=f"a decode pipeline instead of a preset: a decoders case id (simplejpeg-w2, pil-w0, ...) "
                        f"or a spec key=value,... ({SPEC_EXAMPLE}; --workers sets its workers)")
    m.add_argument("--dataset", default=None, metavar="MODULE:FACTORY",
                   help="your own map-style dataset instead of LFW (the factory --bench-dataset takes)")
    m.add_argument("--step", default=None, metavar="MODULE:FN",
                   help="your own training step: a callable taking one batch (instead of --step-ms or --model)")
    m.add_argument("--batches", type=int, default=30, help="batches in the measured pass (default 30)")
    m.add_argument("--sweep-workers", default=None, metavar="LIST",
                   help="measure the loop and the loader alone at each count (e.g. 0,1,2,4) and recommend the "
                        "count with the most steps/s of the loop, beside the loader's knee")
    m.add_argument("--threads", type=int, default=1,
                   help="intra-op threads of a CNN step (default 1: the workers need the other cores)")
    s = p.add_argument_group("simulating")
    s.add_argument("--load-ms", type=float, default=None, help="mean batch load time per worker, ms")
    s.add_argument("--seconds", type=float, default=30.0, help="simulated time (default 30 s)")
    s.add_argument("--load-cv", type=float, default=0.0, help="coefficient of variation of load times (default 0)")
    s.add_argument("--desync-ms", type=float, default=0.0, help="stagger of the workers' first start, ms")
    s.add_argument("--transfer-ms", type=float, default=0.0, help="per-batch host-to-device copy, ms")
    s.add_argument("--prefetcher", action="store_true", help="overlap the copy of the next batch with the step")
    s.add_argument("--seed", type=int, default=0, help="seed of the load-time draws (default 0)")
    o = p.add_argument_group("output")
    o.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"chart folder (default {DEFAULT_OUT})")
    o.add_argument("--no-chart", action="store_true", help="write no chart")
    o.add_argument("--gif", action="store_true", help="also write an animated GIF of the timeline (slower)")
    o.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


MAX_SIMULATED_S = 3600.0  # an hour of simulated training: far beyond any figure here
MAX_SIMULATED_BATCHES = 1_000_000  # the event loop's bound, so a mistyped figure cannot simulate for long
FLOATS = ("step_ms", "load_ms", "seconds", "load_cv", "desync_ms", "transfer_ms")  # finite when given
AT_LEAST = (("load_cv", 0), ("desync_ms", 0), ("transfer_ms", 0), ("step_ms", 0), ("threads", 1), ("batches", 1),
            ("batch_size", 1), ("prefetch_factor", 1))  # a flag, and the least value it takes when given
CONFLICTS = (  # two flags that cannot both be given, and the one-line error when they are
    ("model", "step_ms", "give --step-ms (an emulated step) or --model (a real one), not both"),
    ("simulate", "model", "--simulate needs a step time (--step-ms), not a model"),
    ("pipeline", "simulate", "--pipeline is measured; --simulate takes the load time itself (--load-ms)"),
    ("pipeline", "transform", "give --transform (a preset) or --pipeline (a decode pipeline), not both"),
    ("sweep_workers", "simulate", "--sweep-workers is measured; --simulate takes one worker count (--workers)"),
    ("sweep_workers", "workers", "give --workers (one count) or --sweep-workers (several), not both"),
    *(("dataset", flag, f"--dataset replaces LFW; --{flag} does not apply to it")
      for flag in ("pipeline", "transform", "path")),
    ("dataset", "simulate", "--dataset is measured; --simulate takes the load time itself (--load-ms)"),
    ("step", "model", "give one step: --step (yours), --model or --step-ms"),
    ("step", "step_ms", "give one step: --step (yours), --model or --step-ms"),
    ("step", "simulate", "--simulate needs a step time (--step-ms), not a step"),
)
PIPELINE_OWN = ("workers", "batch_size", "prefetch_factor")  # a --pipeline case's own where not given


def _check(args: argparse.Namespace) -> None:
    """Flag values that argparse's types cannot reject, as one-line errors."""
    for flag in FLOATS:
        value = getattr(args, flag)
        if value is not None and not math.isfinite(value):
            raise LFWError(f"--{flag.replace('_', '-')} must be a finite number, got {value:g}")
    if not 0 < args.seconds <= MAX_SIMULATED_S:
        raise LFWError(f"--seconds must be above 0 and at most {MAX_SIMULATED_S:g}, got {args.seconds:g}")
    for flag, least in AT_LEAST:
        value = getattr(args, flag)
        if value is not None and value < least:
            shown = f"{value:g}" if isinstance(value, float) else value
            raise LFWError(f"--{flag.replace('_', '-')} must be {least} or more, got {shown}")
    if args.workers is not None and args.workers < 0:
        raise LFWError(f"--workers must be 0 (load in the main loop) or more, got {args.workers}")
    if args.load_ms is not None and not args.load_ms > 0:
        raise LFWError(f"--load-ms must be positive, got {args.load_ms:g}")
    if args.model is not None:
        check_choice("model", args.model, MODELS, " (or use --step-ms)")
    for flag, other, message in CONFLICTS:  # given: neither None (unset) nor False (a switch left off); 0 counts
        if all(getattr(args, f) is not None and getattr(args, f) is not False for f in (flag, other)):
            raise LFWError(message)
    if args.simulate and args.load_ms is None:
        raise LFWError("--simulate needs --load-ms, the mean batch load time per worker")
    if not args.simulate and args.load_ms is not None:
        raise LFWError("--load-ms is for --simulate; a measurement takes the load time from the workers")
    if args.sweep_workers is not None:
        args.sweep_counts = parse_counts(args.sweep_workers)


def _defaults(args: argparse.Namespace) -> argparse.Namespace:
    """The flags left unset, filled in (after :func:`_check`, so a default conflicts with nothing); a --pipeline
    case keeps its own workers, batch size and prefetch instead. ``--model`` and ``--step`` ignore the step time."""
    own = PIPELINE_OWN if args.pipeline is not None else ()
    return argparse.Namespace(**{**vars(args), **{k: v for k, v in DEFAULTS.items()
                                                  if getattr(args, k) is None and k not in own}})


def _charts(args: argparse.Namespace, panels: list[Panel], name: str, title: str, label: str) -> None:
    """Write the chart (and the GIF with ``--gif``) unless ``--no-chart``, printing each path after ``label``."""
    if args.no_chart:
        return
    name = re.sub(r"[^A-Za-z0-9.-]+", "", name.replace(" ", "-"))
    print(f"{label}: {draw_timeline(panels, args.out / f'{name}.png', title)}")
    if args.gif:
        print(f"{label}: {animate_timeline(panels, args.out / f'{name}.gif', title, progress=not args.quiet)}")


def run_simulation(args: argparse.Namespace) -> int:
    step_ms = args.step_ms
    fastest_batch_ms = max(step_ms + args.transfer_ms, args.load_ms / max(args.workers, 1))
    if args.seconds * 1e3 / fastest_batch_ms > MAX_SIMULATED_BATCHES:
        raise LFWError(f"--seconds {args.seconds:g} would simulate over {MAX_SIMULATED_BATCHES:,} batches at "
                       f"{fastest_batch_ms:g} ms each; simulate a shorter time")
    model = PipelineModel(args.workers, args.load_ms / 1e3, step_ms / 1e3, args.prefetch_factor,
                          transfer_s=args.transfer_ms / 1e3, prefetcher=args.prefetcher, load_cv=args.load_cv,
                          desync_s=args.desync_ms / 1e3, seed=args.seed)
    result = simulate(model, horizon_s=args.seconds)
    print(f"simulated {args.seconds:g} s: {workers_text(args.workers)}, load {args.load_ms:g} ms "
          f"(cv {args.load_cv:g}), step {step_ms:g} ms, transfer {args.transfer_ms:g} ms"
          f"{' with a prefetcher' if args.prefetcher else ''}, queue {model.capacity} batches")
    print(f"batches completed: {result.completed}")
    print(f"batches/s: {result.batches_per_s:.2f} (steady state {model.steady_batches_per_s():.2f}); "
          f"data wait {result.data_wait_fraction:.1%}")
    if model.step_s + model.transfer_s <= 0:
        print("workers to end the stalls: none can (the step costs nothing)")
    else:
        fed = model.stalls_ended()
        check = simulate(fed, max_batches=max(100, 8 * fed.workers))
        print(f"workers to end the stalls: {fed.workers} (smallest N with N / load >= 1 / step; simulated steady "
              f"state {check.steady_batches_per_s:.2f} batches/s, data wait {check.steady_data_wait_fraction:.1%})")
    title = f"simulated: {workers_text(args.workers)}, load {args.load_ms:g} ms, step {step_ms:g} ms"
    panels = [Panel(f"{title}: {result.completed} batches in {args.seconds:g} s", result.records, args.workers,
                    model.capacity or None)]
    name = f"simulated-w{args.workers}-load{args.load_ms:g}ms-step{step_ms:g}ms"
    _charts(args, panels, name, "Loader pipeline timeline (simulated)", "chart")
    return 0


def _classes(dataset: Any) -> int:
    """Classes a dataset labels with (through a ``Subset``), for the CNN's head; 2 when it does not say."""
    while isinstance(dataset, Subset):
        dataset = dataset.dataset
    for attr in ("classes", "label_of"):
        named = getattr(dataset, attr, None)
        if named is not None:
            return len(named)
    inner = getattr(dataset, "files", None)  # a dataset of whole batches over loose files
    return _classes(inner) if inner is not None else 2


def _setup(args: argparse.Namespace) -> PipelineSetup | None:
    """``--pipeline``'s decode pipeline and loader; None for a preset or a dataset."""
    return pipeline_setup(args.pipeline, workers=args.workers, batch_size=args.batch_size,
                          prefetch_factor=args.prefetch_factor) if args.pipeline is not None else None


def measure(args: argparse.Namespace, source: DataSource | None, setup: PipelineSetup | None) -> Measurement:
    """The measured pass the flags describe: ``--dataset``'s dataset, ``setup``'s decode pipeline or a preset
    through LFWDataset, the last two under ``source``."""
    if args.model is not None:
        torch.set_num_threads(args.threads)
    if args.dataset is not None:  # never with --pipeline (CONFLICTS)
        dataset = dataset_from(args.dataset)
    else:
        assert source is not None
        dataset = (LFWDataset(source.path, transform=args.transform) if setup is None
                   else pipeline_dataset(setup, source.path, args.batches * setup.config.batch_size))
    step, label = ((step_from(args.step), args.step) if args.step is not None
                   else make_step(args.model, args.step_ms, _classes(dataset)))
    if setup is not None:
        assert source is not None
        return measure_pipeline(setup, source.path, args.batches, step, dataset=dataset, step_label=label,
                                progress=not args.quiet)
    config = LoaderConfig(batch_size=args.batch_size, num_workers=args.workers,
                          prefetch_factor=args.prefetch_factor if args.workers else None)
    return measure_training(dataset, config, args.batches, step, transform=args.dataset or args.transform,
                            step_label=label, progress=not args.quiet)


def run_sweep(args: argparse.Namespace) -> int:
    """``--sweep-workers``: the loop and the loader alone at each count, and the count for training."""
    source = resolve_root(args.path) if args.dataset is None else None
    loader_alone = argparse.Namespace(**{**vars(args), "model": None, "step": None, "step_ms": 0.0})

    def measure_at(workers: int, with_step: bool) -> Measurement:
        at = argparse.Namespace(**{**vars(args if with_step else loader_alone), "workers": workers})
        return measure(at, source, _setup(at))

    result = sweep(args.sweep_counts, measure_at)
    print(f"sweep      : {args.dataset or args.pipeline or f'transform {args.transform}'}, step "
          f"{result.points[0].loop.step_label}, {args.batches} batches per pass, {usable_cores()} usable cores")
    for line in result.lines():
        print(line)
    return 0


def run_measurement(args: argparse.Namespace) -> int:
    setup = _setup(args)
    source = resolve_root(args.path) if args.dataset is None else None
    measurement = measure(args, source, setup)
    if source is None:
        where, reads = f"dataset {args.dataset}", "its own transform"
        what = args.dataset.split(":")[-1]
    else:
        where = f"{source.kind} data at {source.path}"
        what = setup.label if setup is not None else args.transform
        reads = f"{'pipeline' if setup is not None else 'transform'} {what}"
    config, label = measurement.config, measurement.step_label
    workers = config.num_workers
    result = diagnose(measurement, usable_cores(), emulated_step=args.model is None and args.step is None)
    _report(measurement, result, where, reads)
    sim = simulate(result.model, max_batches=measurement.result.batches)
    panels = [
        Panel(f"measured: {measurement.result.batches} batches, {measurement.batches_per_s:.2f} batches/s",
              measurement.records, workers, measurement.capacity or None),
        Panel(f"simulated from the measured times: {result.predicted_batches_per_s:.2f} batches/s",
              sim.records, workers, result.model.capacity or None),
    ]
    read = where if source is None else f"{reads} ({source.kind} LFW)"
    title = f"{workers_text(workers)}, batch {config.batch_size}, {read}, step {label}"
    name = f"timeline-w{workers}-b{config.batch_size}-{what}-{label}"
    _charts(args, panels, name, title, "chart      ")
    return 0


def _report(m: Measurement, d: Diagnosis, where: str, reads: str) -> None:
    r, model = m.result, d.model
    print(f"diagnose   : {r.batches} batches of {m.config.batch_size}, {reads}, "
          f"{workers_text(m.config.num_workers)}, step {m.step_label}; {where}")
    print(f"measured   : {d.measured_batches_per_s:.2f} batches/s, data wait {d.data_wait_fraction:.1%} of the "
          f"pass, accelerator utilization {d.accelerator_utilization:.1%} (first step excluded), "
          f"first batch after {r.ttfb_s:.2f} s")
    print(f"per batch  : load {model.load_s * 1e3:.1f} ms per worker ({d.worker_overhead_s * 1e3:.1f} ms of it "
          f"between batches; cv {model.load_cv:.2f}), step {model.step_s * 1e3:.1f} ms, hand-over "
          f"{model.transfer_s * 1e3:.1f} ms, worker start-up {model.startup_s * 1e3:.0f} ms")
    print(f"bottleneck : {d.bottleneck}")
    print(f"simulated  : {d.predicted_batches_per_s:.2f} batches/s for the same {r.batches} batches "
          f"(error {d.error:+.1%} vs measured; steady state {model.steady_batches_per_s():.2f})")
    print("stalls end : never (the step costs nothing)" if d.workers_needed is None else
          f"stalls end : at {workers_text(d.workers_needed)} (simulated steady state {d.predicted_at_needed:.2f} "
          "batches/s, if each worker keeps its load time)")
    print(f"recommend  : {d.recommendation}")


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _check(args)
    args = _defaults(args)
    if args.simulate:
        return run_simulation(args)
    return run_sweep(args) if args.sweep_workers is not None else run_measurement(args)


if __name__ == "__main__":
    sys.exit(main())
