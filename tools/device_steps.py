"""One step of the device campaign, in a process of its own: ``python3 -m tools.device_steps NAME --fragment F ...``.

The campaign (:mod:`tools.device_campaign`) starts this as its child, in the command's own process group, and
sends it SIGTERM when the step outruns its budget: the step then stops what it runs (a pytest run is given SIGTERM
and saves its partial run marked incomplete), keeps the figures it has and ends ``incomplete``. Steps that the
suite's benchmarks already measure run them (``pytest benchmarks -k ...``, the same plugin, rotation and record as
``make bench``); the others are in :mod:`tools.device_measure`.

Without a CUDA device a GPU step is skipped, saying why; in a dry run (``--dry-run``) it runs all the same on the
CPU stand-in (:data:`tools.device_context.STAND_IN`, its figures marked so), and the baseline goes to a scratch
folder, never ``benchmarks/baselines/``; with ``--require-cuda`` (the probe) a step that would use the stand-in
fails instead.

The fragment (JSON) holds ``status`` (``done``, ``skipped``, ``failed`` or ``incomplete``, with a one-line
``reason`` where not done), ``measured_on`` and the step's ``summary``: the figures it has, also when it failed or
was stopped. Exit codes: 0 done or skipped; 1 the step's own check failed (an A/A gate that did not pass, a pytest
case that failed); 2 bad input (an existing baseline without ``--force``); 3 stopped; 4 the measurement failed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
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
from lfw.suite.profiles import COST
from tools import device_measure
from tools.device_context import (
    GATE_MD,
    PIN_RUN,
    STAND_IN,
    STEP_NAMES,
    WORKERS_RUN,
    Context,
    Skip,
    Stopped,
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
PYTEST_GRACE_S = 10.0  # for a stopped pytest to save its partial run (the campaign kills all 20 s after stopping)
EXIT_CHECK, EXIT_STOPPED, EXIT_FAILED = 1, 3, 4
GATE_REGRESSION = 1  # lfw.gate's exit code for a regression found
BASELINE_ARGS = ("--bench-cost",)  # what `make baseline` adds to the profile; the pin step's run adds it too


def pytest_run(ctx: Context, keyword: str, json_path: Path, *extra: str) -> int:
    """``pytest benchmarks`` on the context's profile with ``-k keyword``, saved to ``json_path``; its exit code.

    Stopped (SIGTERM, or Ctrl-C, which reaches pytest too), it gives pytest SIGTERM and the time to save its
    partial run marked incomplete, sets ``ctx.stopped`` and returns pytest's exit code: the step then summarizes
    what was saved."""
    argv = [sys.executable, "-m", "pytest", "benchmarks", "-q", "-p", "no:cacheprovider", "-p",
            "pytest_benchmark.plugin", "--bench-profile", ctx.profile.name, "-k", keyword,
            f"--benchmark-json={json_path}", *extra]
    print("$ " + shlex.join(["python3", *argv[1:]]), flush=True)
    # Only the plugin the suite needs: a machine's own plugins (xdist, cov, hypothesis...) stay unloaded, so none of
    # their warnings meets the suite's filterwarnings=error.
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    try:
        return proc.wait()
    except (Stopped, KeyboardInterrupt) as exc:
        ctx.stopped = True
        if isinstance(exc, Stopped):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=PYTEST_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


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


def pytest_step(ctx: Context, keyword: str, path: Path, group: str, *extra: str) -> None:
    """Run the benchmarks of ``keyword`` into ``path`` and put their cases into ``ctx.summary``. A failed pytest
    (a case's assertion, e.g. the GPU-only pinning check) fails the step, its figures kept; a stopped one keeps
    what it saved."""
    s = ctx.summary
    s["files"] = [path.name]
    s["pytest_exit"] = code = pytest_run(ctx, keyword, path, *extra)
    if not path.exists():
        ctx.check_stopped()
        raise MeasurementError(f"pytest -k {keyword!r} wrote no run (exit {code})")
    s["cases"] = case_summary(path, group)
    ctx.check_stopped()
    if code != 0:
        ctx.facts["exit_code"] = EXIT_CHECK


def step_pin(ctx: Context) -> dict[str, Any]:
    """pin_memory off and on with the copy in the timed pass (benchmarks/test_pin_memory.py), beside the copy's
    floor: one batch's bytes at this machine's best pinned copy rate."""
    device = ctx.gpu_device()
    pytest_step(ctx, "pin_memory", ctx.out / PIN_RUN, "pin-memory", *BASELINE_ARGS)
    peak = max(device_measure.peak_rates(device))
    batch = device_measure.preset_batch_bytes(ctx, "none")
    ctx.summary.update({"peak_h2d_gb_s": round(peak, 2), "batch_bytes": batch,
                        "h2d_floor_ms_per_batch": round(batch / (peak * 1e9) * 1e3, 3)})
    return ctx.summary


def reusable_pin_run(ctx: Context, runner: str) -> Path | None:
    """The pin step's run in OUT when it can stand as this runner's baseline: made on this runner class, on the
    context's profile, with :data:`BASELINE_ARGS` (the pin step adds them), whole (no case failed, stopped or never
    run); else None. It is the same ``-k pin_memory`` run ``make baseline`` makes, so the baseline step need not
    run it again (on the H200 machine each such run of the full profile took about a minute)."""
    path = ctx.out / PIN_RUN
    if not path.exists():
        return None
    try:
        run = load_run(path)
    except LFWError:
        return None
    selection = run.selection
    whole = selection is not None and run.incomplete is None and any(
        o.status == "passed" for o in selection.outcomes.values())
    same = (run.machine.get("runner_class") == runner and selection is not None
            and selection.profile == ctx.profile.name and COST in selection.layers)
    return path if whole and same else None


def workers_keyword(workers: tuple[int, ...]) -> str:
    """The ``-k`` expression selecting the workers cases of :data:`PRESETS` at ``workers`` (exact ids)."""
    return " or ".join(f"workers{w}-{t}" for w in workers for t in PRESETS)


def step_workers(ctx: Context) -> dict[str, Any]:
    """The workers curve of the quick presets (benchmarks/test_workers_transforms.py), the knee per preset
    (:func:`lfw.results.recommend.recommendations`) and the per-batch counts that say what saturates."""
    from lfw.results.recommend import recommendations

    path = ctx.out / WORKERS_RUN
    pytest_step(ctx, workers_keyword(ctx.workers), path, "workers-transform")
    ctx.summary["knee"] = {r.transform: {"workers": r.workers, "verdict": r.verdict(), "evidence": r.evidence(),
                                         "paired": r.paired} for r in recommendations(load_run(path))}
    ctx.summary["per_batch"] = {t: device_measure.batch_counts(ctx, t) for t in PRESETS}
    return ctx.summary


def step_baseline(ctx: Context) -> dict[str, Any]:
    """``make baseline``'s run for the full profile's GPU cases (``-k pin_memory``), saved as this runner's
    baseline (never over an existing one without ``--force``), copied back, then gated A/A against it. A dry run
    saves into a scratch folder and keeps it there: its baseline is never one to commit."""
    runner = runner_class()
    if not ctx.dry_run and not runner.startswith("gpu"):
        raise Skip(f"runner class is {runner}, not gpu: {cuda_missing() or 'set LFW_RUNNER=gpu'}")
    folder = ctx.work / "baselines" if ctx.dry_run else REPO / "benchmarks" / "baselines"
    own = folder / f"{runner}.json"
    if own.exists() and not ctx.force and not ctx.dry_run:
        raise LFWError(f"{own.relative_to(REPO)} exists; refresh it deliberately with --force (make baseline FORCE=1)")
    folder.mkdir(parents=True, exist_ok=True)
    storage = [f"--benchmark-storage=file://{ctx.work / 'benchmarks'}"] if ctx.dry_run else []
    tmp = own.with_suffix(".json.tmp")
    s = ctx.summary
    s.update({"runner_class": runner, "scratch": ctx.dry_run, "files": []})
    pin_run = reusable_pin_run(ctx, runner)
    s["from_pin_run"] = pin_run is not None
    if pin_run is not None:  # the pin step's whole run of the same cases: copied, not run a second time
        shutil.copyfile(pin_run, tmp)
    else:
        s["baseline_pytest_exit"] = code = pytest_run(ctx, "pin_memory", tmp, *BASELINE_ARGS, "--benchmark-autosave",
                                                      *storage)
        ctx.check_stopped()  # a partial run is never saved as a baseline
        if code != 0 or not tmp.exists():
            raise MeasurementError(f"the baseline run failed (pytest exit {code}); nothing saved")
    os.replace(tmp, own)
    s["baseline"] = str(own if ctx.dry_run else own.relative_to(REPO))
    if not ctx.dry_run:
        shutil.copyfile(own, ctx.out / own.name)
        s["files"].append(own.name)
    gate_run = ctx.work / "gate-run.json"
    s["gate_pytest_exit"] = code = pytest_run(ctx, "pin_memory", gate_run, *BASELINE_ARGS, *storage)
    ctx.check_stopped()
    if not gate_run.exists():
        raise MeasurementError(f"the gate's run failed (pytest exit {code})")
    code = run_gate(own, gate_run, ctx.out / GATE_MD, ctx.work / "verdict.json")
    s["files"].append(GATE_MD)
    # A dry run's A/A gate compares two one-round smoke runs: its path is checked (it must reach a verdict), its
    # verdict is recorded, not judged; exit 1 (a regression) is then no failure, any other is.
    s.update({"gate_exit": code, "aa_passed": code == 0, "aa_judged": not ctx.dry_run})
    if code != 0 and (code != GATE_REGRESSION or not ctx.dry_run):
        ctx.facts["exit_code"] = EXIT_CHECK
    return s


def run_gate(baseline: Path, run: Path, page: Path, verdict: Path) -> int:
    """``python -m lfw.gate baseline run``, its page at ``page`` and its verdict at ``verdict`` (never beside the
    page, which is in OUT: only the campaign's files go there); the gate's exit code."""
    return subprocess.run([sys.executable, "-m", "lfw.gate", str(baseline), str(run), "--summary-md", str(page),
                           "--verdict-json", str(verdict)], cwd=REPO, check=False).returncode


STEP_FUNCTIONS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "pin": step_pin, "bandwidth": device_measure.step_bandwidth, "decode": device_measure.step_decode,
    "workers": step_workers, "feed": device_measure.step_feed, "baseline": step_baseline,
}


def measured_on(ctx: Context) -> str:
    """Where the step's figures come from: ``cuda``; the CPU stand-in of a dry run (a GPU step's figures, or the
    GPU part of the decode step: never GPU figures); or ``cpu``."""
    spec = step_spec(ctx.step)
    if spec.uses_gpu and ctx.stand_in:
        return STAND_IN if spec.gpu else f"cpu; its GPU part on the {STAND_IN}"
    return "cuda" if spec.gpu and ctx.device == "cuda" else "cpu"


def run_step(ctx: Context, require_cuda: bool = False) -> tuple[dict[str, Any], int]:
    """Run ``ctx.step``: its fragment and the exit code to end with. Without CUDA, a GPU step is skipped, runs on
    the CPU stand-in in a dry run, and fails where CUDA is required. An error other than bad input (whatever its
    type) fails the step with the figures it has; a stop keeps them too."""
    spec = step_spec(ctx.step)
    missing = cuda_missing() if spec.uses_gpu else None
    if missing is not None and require_cuda:
        return {"status": "failed", "reason": f"the probe needs a CUDA device: {missing}"}, EXIT_FAILED
    if missing is not None:
        ctx.device = "cpu" if ctx.dry_run else None
    if missing is not None and spec.gpu and not ctx.dry_run:
        return {"status": "skipped", "reason": missing}, 0
    base: dict[str, Any] = {"measured_on": measured_on(ctx)}
    try:
        STEP_FUNCTIONS[ctx.step](ctx)
    except Skip as skip:
        if require_cuda:  # the probe passes through every GPU path, or fails saying which it could not take
            return {**base, "status": "failed", "reason": f"the probe could not run it: {skip}"}, EXIT_FAILED
        return {"status": "skipped", "reason": str(skip)}, 0
    except Stopped:
        return {**base, "status": "incomplete", "reason": "stopped", "summary": ctx.summary}, EXIT_STOPPED
    except LFWError as exc:
        if not isinstance(exc, MeasurementError):
            raise  # bad input: one line, exit 2, the fragment written by main
        return {**base, "status": "failed", "reason": one_line(exc), "summary": ctx.summary}, EXIT_FAILED
    except Exception as exc:
        return {**base, "status": "failed", "reason": f"{type(exc).__name__}: {one_line(exc)}",
                "summary": ctx.summary}, EXIT_FAILED
    if ctx.stopped:
        return {**base, "status": "incomplete", "reason": "stopped", "summary": ctx.summary}, EXIT_STOPPED
    code = int(ctx.facts.get("exit_code", 0))
    return {**base, "status": "done" if code == 0 else "failed", "summary": ctx.summary}, code


def _stop(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the step is winding down
    raise Stopped()


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python3 -m tools.device_steps", description=__doc__)
    parser.add_argument("step", choices=STEP_NAMES)
    parser.add_argument("--fragment", type=Path, required=True, help="where to write the step's result (JSON)")
    parser.add_argument("--out", type=Path, required=True, help="the campaign's output folder")
    parser.add_argument("--work", type=Path, required=True, help="a private folder for what must not come back")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--workers", default="0,2")
    parser.add_argument("--pipeline", default="decoder=simplejpeg,batching=slots")
    parser.add_argument("--feed-workers", type=int, default=None)
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--require-cuda", action="store_true", help="fail a step that would use the CPU stand-in")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    ctx = Context(args.step, args.out, args.work, profile_named(args.profile), parse_workers(args.workers),
                  usable_cores(), args.dry_run, args.pipeline, args.feed_workers, args.step_ms, args.force)
    try:
        fragment, code = run_step(ctx, args.require_cuda)
    except Stopped:  # before the step's own code ran
        fragment, code = {"status": "incomplete", "reason": "stopped", "summary": ctx.summary}, EXIT_STOPPED
    except LFWError as exc:
        write_json(args.fragment, {"status": "failed", "reason": one_line(exc), "summary": ctx.summary})
        raise
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    write_json(args.fragment, fragment)
    return code


if __name__ == "__main__":
    sys.exit(main())
