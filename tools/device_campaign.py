"""The device campaign: one command that measures what only a GPU machine can, step by step, within a time budget.

    python3 tools/device_campaign.py --out DIR [--step NAME ...] [--workers 0,2,8,16] [--dry-run | --probe]
    make device-campaign OUT=DIR [STEPS=pin,bandwidth] [CAMPAIGN_ARGS=...]

Made for a bare GPU machine without network whose own Python holds torch, torchvision and the suite's other
common packages: it raises its soft limit of open files to the hard one, installs the wheels of ``.whl/``
(``bash tools/device_wheels.sh`` fetches them elsewhere) into a private folder beside the preinstalled torch
(``pip install --no-index --no-deps --target``), records the versions and the machine's limits, makes the
synthetic LFW tree in ``$LFW_CACHE`` (default ``.cache/lfw-bench``) and runs the steps of
:data:`tools.device_context.STEPS` in that order (the GPU steps first), each stopped when it outruns its own budget
or what is left of ``--total-budget`` (marked ``incomplete``, its figures kept). Steps run in the command's own
process group: a command cut from outside leaves nothing running.

Without CUDA a GPU step is skipped with a one-line reason. ``--dry-run`` runs every step's real code on the smoke
tree, one round, the GPU paths on a CPU stand-in whose figures are marked ``cpu stand-in`` (and the baseline in a
scratch folder). ``--probe`` is the dry run on the GPU machine, for the steps with a GPU path: a step without CUDA
fails it (docs/device.md). At most :data:`~tools.device_context.MAX_OUT_FILES` files go into DIR:
``campaign.json`` (versions, limits and every step's status and figures, merged with an earlier ``campaign.json``
there), ``campaign.log`` (everything printed) and the steps' own runs; ``tools/device_charts.py DIR...`` draws
them elsewhere.

Exit codes: 0 every step done or skipped; 2 bad input; 3 a step outran its budget (incomplete); 4 a step failed;
130 interrupted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script (python3 tools/device_campaign.py): the checkout is the package root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import signal
import tempfile
import time
from typing import Any

from lfw.cli.args import OneLineParser
from lfw.errors import LFWError, cli_entry
from tools.device_context import (
    CAMPAIGN_JSON,
    DATA_BUDGET_S,
    DEFAULT_WORKERS,
    DRY_RUN_WORKERS,
    PROBE_BUDGET_S,
    STEP_LIMIT_S,
    STEP_NAMES,
    STEPS,
    TOTAL_BUDGET_S,
    parse_workers,
    profile_named,
    step_spec,
)
from tools.device_headlines import headlines
from tools.device_run import (
    Log,
    check_out,
    environment,
    install_wheels,
    load_campaign,
    machine_limits,
    raise_open_files_limit,
    run_child,
    save_campaign,
)

REPO = Path(__file__).resolve().parents[1]
EXIT_INCOMPLETE, EXIT_FAILED = 3, 4
# The probe's steps: those with a GPU path, decode first (the one nvJPEG path: the step most likely to fail there).
PROBE_STEPS = tuple(sorted((s.name for s in STEPS if s.uses_gpu), key=lambda name: name != "decode"))


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python3 tools/device_campaign.py", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="folder for the campaign's files (8 at most)")
    p.add_argument("--step", action="append", default=None, metavar="NAME",
                   help=f"run only this step (repeatable, or comma-separated): {', '.join(STEP_NAMES)}")
    p.add_argument("--workers", default=None, help="worker counts (default 0,2,8,16; dry run and probe 0,2)")
    p.add_argument("--profile", default=None, help="smoke, quick or full (default full; dry run and probe smoke)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true",
                      help="every step's code on tiny data, one round; GPU paths on a CPU stand-in without a GPU")
    mode.add_argument("--probe", action="store_true",
                      help=f"the dry run of the steps with a GPU path ({', '.join(PROBE_STEPS)}), failing without "
                           f"CUDA; total budget {PROBE_BUDGET_S:g} s")
    p.add_argument("--total-budget", type=float, default=None, metavar="S",
                   help=f"seconds for the whole command (default {TOTAL_BUDGET_S:g}; probe {PROBE_BUDGET_S:g})")
    p.add_argument("--step-budget", type=float, default=None, metavar="S",
                   help=f"seconds for each step instead of its own budget (at most {STEP_LIMIT_S:g})")
    p.add_argument("--wheels", type=Path, default=REPO / ".whl", help="wheels to install first (default .whl/)")
    p.add_argument("--site", type=Path, default=None, help="where the wheels go (default: a temporary folder)")
    p.add_argument("--pipeline", default="decoder=simplejpeg,batching=slots",
                   help="the feed step's decode pipeline: a spec or a decoders case id")
    p.add_argument("--feed-workers", type=int, default=None, help="the feed step's workers (default min(8, cores))")
    p.add_argument("--step-ms", type=float, default=20.0, help="the feed step's GPU step in ms (default 20)")
    p.add_argument("--force", action="store_true", help="let the baseline step replace an existing baseline")
    return p


def selected_steps(asked: list[str] | None, probe: bool = False) -> list[str]:
    """The steps to run, in campaign order: all when none is named (the probe: :data:`PROBE_STEPS`)."""
    if not asked:
        return list(PROBE_STEPS if probe else STEP_NAMES)
    names = {n.strip() for a in asked for n in a.split(",") if n.strip()}
    for name in names:
        step_spec(name)  # an unknown name is a one-line error
    return [n for n in STEP_NAMES if n in names]


def child_argv(step: str, args: argparse.Namespace, fragment: Path, work: Path, profile: str,
               workers: tuple[int, ...]) -> list[str]:
    argv = [sys.executable, "-m", "tools.device_steps", step, "--fragment", str(fragment), "--out", str(args.out),
            "--work", str(work), "--profile", profile, "--workers", ",".join(map(str, workers)),
            "--pipeline", args.pipeline, "--step-ms", str(args.step_ms)]
    if args.feed_workers is not None:
        argv += ["--feed-workers", str(args.feed_workers)]
    flags = {"--dry-run": args.dry_run or args.probe, "--require-cuda": args.probe, "--force": args.force}
    return argv + [flag for flag, on in flags.items() if on]


def step_env(args: argparse.Namespace, site: Path, log: Log, doc: dict[str, Any]) -> dict[str, str]:
    """The steps' environment: the wheels installed into ``site`` on their path, the data cache, pinned threads;
    records the wheels and the versions in ``doc``."""
    env = dict(os.environ)
    env.setdefault("LFW_CACHE", str(REPO / ".cache" / "lfw-bench"))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    doc["wheels"] = install_wheels(args.wheels, site, log)
    paths = (str(site) if doc["wheels"].get("installed") else "", str(REPO), env.get("PYTHONPATH", ""))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    doc["environment"] = environment(env, log)
    return env


def run_steps(args: argparse.Namespace, steps: list[str], plan: dict[str, Any], env: dict[str, str], log: Log,
              doc: dict[str, Any], tmp: Path, deadline: float) -> None:
    """Each step in turn within its budget and what is left of the total; ``doc`` saved after each."""
    for name in steps:
        doc.setdefault("steps", {})[name] = {"status": "interrupted", "reason": "the campaign was stopped"}
        spec = step_spec(name)
        left = deadline - time.monotonic()
        budget = min(args.step_budget or spec.budget_s, STEP_LIMIT_S, left)
        if budget < 1:
            result: dict[str, Any] = {"status": "incomplete",
                                      "reason": f"not run: the command's total budget ({plan['total_budget_s']:g} s) "
                                                "is spent"}
        else:
            work = tmp / f"{name}-work"
            work.mkdir(exist_ok=True)
            fragment = tmp / f"{name}.json"
            result = run_child(child_argv(name, args, fragment, work, plan["profile"], plan["workers"]), budget,
                               env, log, name, fragment)
        doc["steps"][name] = {"gpu": spec.gpu, "what": spec.what, **result}
        reason = f" ({result['reason']})" if result.get("reason") else ""
        log.line(f"== {name}: {result['status']}{reason} in {result.get('elapsed_s', 0):.1f} s of {budget:.0f} s")
        for line in headlines(name, doc["steps"][name]):
            log.line(line)
        save_campaign(args.out, doc)
        check_out(args.out)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (a command cut at its limit) stops the running step as Ctrl-C does


def plan_of(args: argparse.Namespace) -> dict[str, Any]:
    """What this command will do: its steps, worker counts, profile, mode and total budget (checked)."""
    small = args.dry_run or args.probe
    budget = args.total_budget if args.total_budget is not None else (PROBE_BUDGET_S if args.probe
                                                                       else TOTAL_BUDGET_S)
    if args.step_budget is not None and not 0 < args.step_budget <= STEP_LIMIT_S:
        raise LFWError(f"--step-budget must be between 0 and {STEP_LIMIT_S:g} seconds, got {args.step_budget:g}")
    if budget <= 0:
        raise LFWError(f"--total-budget must be more than 0 seconds, got {budget:g}")
    workers = parse_workers(args.workers) if args.workers else (DRY_RUN_WORKERS if small else DEFAULT_WORKERS)
    return {"steps": selected_steps(args.step, args.probe), "workers": workers,
            "profile": profile_named(args.profile or ("smoke" if small else "full")).name,
            "mode": "probe" if args.probe else "dry run" if args.dry_run else "campaign", "dry_run": small,
            "total_budget_s": budget}


@cli_entry
def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    plan = plan_of(args)
    deadline = started + plan["total_budget_s"]
    steps = plan["steps"]
    soft_before, _ = raise_open_files_limit()
    args.out.mkdir(parents=True, exist_ok=True)
    check_out(args.out)
    doc = load_campaign(args.out / CAMPAIGN_JSON)
    with Log(args.out) as log, tempfile.TemporaryDirectory(prefix="lfw-campaign-") as tmp:
        doc["limits"] = machine_limits(soft_before)
        log.line("limits: " + ", ".join(f"{k} {v}" for k, v in doc["limits"].items()))
        env = step_env(args, args.site or Path(tmp) / "site", log, doc)
        doc["run"] = plan
        save_campaign(args.out, doc)
        data = run_child([sys.executable, "-m", "lfw.data.cache", "--profile", plan["profile"]],
                         min(DATA_BUDGET_S, max(1.0, deadline - time.monotonic())), env, log, "data")
        if data["status"] != "done":
            raise LFWError(f"the synthetic LFW tree could not be made: {data.get('reason')}")
        try:
            run_steps(args, steps, plan, env, log, doc, Path(tmp), deadline)
        except KeyboardInterrupt:
            save_campaign(args.out, doc)  # the running step is marked interrupted
            raise
        statuses = [doc["steps"][n]["status"] for n in steps]
        log.line(f"{plan['mode']}: " + ", ".join(f"{n} {s}" for n, s in zip(steps, statuses, strict=True))
                 + f"; {time.monotonic() - started:.0f} s of {plan['total_budget_s']:g}")
    check_out(args.out)
    if "failed" in statuses:
        return EXIT_FAILED
    return EXIT_INCOMPLETE if "incomplete" in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
