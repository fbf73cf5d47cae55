"""One step of the device campaign, in a process of its own: ``python3 -m tools.device_steps NAME --fragment F ...``.

The campaign (:mod:`tools.device_campaign`) starts this in a new process group and stops the group when the step
outruns its budget. Steps that the suite's benchmarks already measure run them (``pytest benchmarks -k ...``,
the same plugin, rotation and record as ``make bench``); the others are in :mod:`tools.device_measure`.

The fragment (JSON) holds ``status`` (``done`` or ``skipped``, with a one-line ``reason``), the step's
``summary`` and the files it wrote. Exit codes: 0 done or skipped; 1 the step's own check failed (an A/A gate that
did not pass); 2 bad input (an existing baseline without ``--force``); 4 the measurement failed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lfw.cli.args import OneLineParser
from lfw.errors import LFWError, MeasurementError, cli_entry, one_line
from lfw.measure.machine import runner_class
from lfw.measure.resources import usable_cores
from lfw.results import keys as K
from lfw.results import load_run
from tools import device_measure
from tools.device_context import (
    GATE_MD,
    PIN_RUN,
    STEP_NAMES,
    WORKERS_RUN,
    Context,
    Skip,
    parse_workers,
    profile_named,
    step_spec,
    write_json,
)
from tools.device_gpu import cuda_missing

REPO = Path(__file__).resolve().parents[1]
PRESETS = ("none", "uint8")  # the presets the quick profile crosses with every worker count
CASE_KEYS = (K.IMAGES_PER_S, K.CEILING_IMAGES_PER_S, K.EFFICIENCY, K.MAIN_CPU_SHARE, K.CPU_UTILIZATION,
             K.CPU_MS_PER_IMAGE, K.H2D_MS_PER_BATCH, K.TTFB_S)


def pytest_run(ctx: Context, keyword: str, json_path: Path, *extra: str) -> int:
    """``pytest benchmarks`` on the context's profile with ``-k keyword``, saved to ``json_path``; its exit code."""
    argv = [sys.executable, "-m", "pytest", "benchmarks", "-q", "-p", "no:cacheprovider", "--bench-profile",
            ctx.profile.name, "-k", keyword, f"--benchmark-json={json_path}", *extra]
    print("$ " + shlex.join(["python3", *argv[1:]]), flush=True)
    return subprocess.run(argv, cwd=REPO, check=False).returncode


def case_summary(path: Path, group: str) -> dict[str, dict[str, Any]]:
    """Each case of ``group`` in a saved run: its medians and per-round values of :data:`CASE_KEYS`."""
    cases = {}
    for case in load_run(path).group(group):
        row: dict[str, Any] = {"params": dict(case.params)}
        for key in CASE_KEYS:
            if case.number(key) is not None:
                row[key] = case.number(key)
                row[K.rounds(key)] = case.rounds(key)
        cases[case.label] = row
    return cases


def fail_on(ctx: Context, pytest_exit: int) -> None:
    """A step whose pytest failed (a case's assertion, an interrupt) ends failed, its figures kept: never done."""
    if pytest_exit != 0:
        ctx.facts["exit_code"] = 1


def step_pin(ctx: Context) -> dict[str, Any]:
    """pin_memory off and on with the copy in the timed pass (benchmarks/test_pin_memory.py), beside the copy's
    floor: one batch's bytes at this machine's best pinned copy rate."""
    path = ctx.out / PIN_RUN
    code = pytest_run(ctx, "pin_memory", path)
    if not path.exists():
        raise MeasurementError(f"pytest -k pin_memory wrote no run (exit {code})")
    peak = max(device_measure.peak_rates())
    batch = device_measure.preset_batch_bytes(ctx, "none")
    cases = case_summary(path, "pin-memory")
    fail_on(ctx, code)
    return {"pytest_exit": code, "cases": cases, "peak_h2d_gb_s": round(peak, 2), "batch_bytes": batch,
            "h2d_floor_ms_per_batch": round(batch / (peak * 1e9) * 1e3, 3), "files": [PIN_RUN]}


def workers_keyword(workers: tuple[int, ...]) -> str:
    """The ``-k`` expression selecting the workers cases of :data:`PRESETS` at ``workers`` (exact ids)."""
    return " or ".join(f"workers{w}-{t}" for w in workers for t in PRESETS)


def step_workers(ctx: Context) -> dict[str, Any]:
    """The workers curve of the quick presets (benchmarks/test_workers_transforms.py), the knee per preset
    (:func:`lfw.results.recommend.recommendations`) and the per-batch counts that say what saturates."""
    from lfw.results.recommend import recommendations

    path = ctx.out / WORKERS_RUN
    code = pytest_run(ctx, workers_keyword(ctx.workers), path)
    if not path.exists():
        raise MeasurementError(f"pytest -k workers... wrote no run (exit {code})")
    knees = {r.transform: {"workers": r.workers, "verdict": r.verdict(), "evidence": r.evidence(),
                           "paired": r.paired} for r in recommendations(load_run(path))}
    fail_on(ctx, code)
    return {"pytest_exit": code, "cases": case_summary(path, "workers-transform"), "knee": knees,
            "per_batch": {t: device_measure.batch_counts(ctx, t) for t in PRESETS}, "files": [WORKERS_RUN]}


def step_baseline(ctx: Context) -> dict[str, Any]:
    """``make baseline``'s run for the full profile's GPU cases (``-k pin_memory``), saved as this runner's
    baseline (never over an existing one without ``--force``), copied back, then gated A/A against it."""
    runner = runner_class()
    if not runner.startswith("gpu"):
        raise Skip(f"runner class is {runner}, not gpu: {cuda_missing() or 'set LFW_RUNNER=gpu'}")
    own = REPO / "benchmarks" / "baselines" / f"{runner}.json"
    if own.exists() and not ctx.force:
        raise LFWError(f"{own.relative_to(REPO)} exists; refresh it deliberately with --force (make baseline FORCE=1)")
    tmp = own.with_suffix(".json.tmp")
    code = pytest_run(ctx, "pin_memory", tmp, "--bench-cost", "--benchmark-autosave")
    if code != 0 or not tmp.exists():
        raise MeasurementError(f"the baseline run failed (pytest exit {code}); nothing saved")
    os.replace(tmp, own)
    shutil.copyfile(own, ctx.out / own.name)
    gate_run = ctx.work / "gate-run.json"
    code = pytest_run(ctx, "pin_memory", gate_run, "--bench-cost")
    if not gate_run.exists():
        raise MeasurementError(f"the gate's run failed (pytest exit {code})")
    gate = subprocess.run([sys.executable, "-m", "lfw.gate", str(own), str(gate_run), "--summary-md",
                           str(ctx.out / GATE_MD)], cwd=REPO, check=False)
    ctx.facts["exit_code"] = 0 if gate.returncode == 0 else 1
    return {"runner_class": runner, "baseline": str(own.relative_to(REPO)), "gate_exit": gate.returncode,
            "aa_passed": gate.returncode == 0, "files": [own.name, GATE_MD]}


STEP_FUNCTIONS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "pin": step_pin, "bandwidth": device_measure.step_bandwidth, "decode": device_measure.step_decode,
    "workers": step_workers, "feed": device_measure.step_feed, "baseline": step_baseline,
}


def run_step(ctx: Context) -> tuple[dict[str, Any], int]:
    """Run ``ctx.step``: its fragment and the exit code to end with. A GPU step without CUDA is skipped."""
    spec = step_spec(ctx.step)
    missing = cuda_missing() if spec.gpu else None
    if missing is not None:
        return {"status": "skipped", "reason": missing}, 0
    try:
        summary = STEP_FUNCTIONS[ctx.step](ctx)
    except Skip as skip:
        return {"status": "skipped", "reason": str(skip)}, 0
    code = int(ctx.facts.get("exit_code", 0))
    return {"status": "done" if code == 0 else "failed", "summary": summary}, code


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python3 -m tools.device_steps", description=__doc__)
    parser.add_argument("step", choices=STEP_NAMES)
    parser.add_argument("--fragment", type=Path, required=True, help="where to write the step's result (JSON)")
    parser.add_argument("--out", type=Path, required=True, help="the campaign's output folder")
    parser.add_argument("--work", type=Path, required=True, help="a private folder for what must not come back")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--workers", default="0,1,2")
    parser.add_argument("--pipeline", default="decoder=simplejpeg,batching=slots")
    parser.add_argument("--feed-workers", type=int, default=None)
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    ctx = Context(args.step, args.out, args.work, profile_named(args.profile), parse_workers(args.workers),
                  usable_cores(), args.dry_run, args.pipeline, args.feed_workers, args.step_ms, args.force)
    try:
        fragment, code = run_step(ctx)
    except LFWError as exc:
        write_json(args.fragment, {"status": "failed", "reason": one_line(exc)})
        raise
    write_json(args.fragment, fragment)
    return code


if __name__ == "__main__":
    sys.exit(main())
