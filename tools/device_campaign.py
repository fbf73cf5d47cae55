"""The device campaign: one command that measures what only a GPU machine can, step by step, within a time budget.

    python3 tools/device_campaign.py --out DIR [--step NAME ...] [--workers 0,1,2,4,8,12,16] [--dry-run]
    make device-campaign OUT=DIR [STEPS=pin,bandwidth] [CAMPAIGN_ARGS=...]

Made for a bare GPU machine without network whose own Python holds torch, torchvision and the suite's other
common packages: it installs the wheels of ``.whl/`` (``bash tools/device_wheels.sh`` fetches them elsewhere)
into a private folder beside the preinstalled torch (``pip install --no-index --no-deps --target``), records the
versions, makes the synthetic LFW tree in ``$LFW_CACHE`` (default ``.cache/lfw-bench``) and runs the steps of
:data:`tools.device_context.STEPS`, each in its own process group, stopped when it outruns its budget (marked
``incomplete``; its workers are stopped with it, on Ctrl-C too). GPU steps without CUDA are skipped with a one-line
reason. At most :data:`~tools.device_context.MAX_OUT_FILES` files go into DIR: ``campaign.json`` (versions and
every step's status and figures, merged with an earlier ``campaign.json`` there), ``campaign.log`` (everything
printed) and the steps' own runs; ``tools/device_charts.py DIR...`` draws them elsewhere.

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
    DEFAULT_WORKERS,
    DRY_RUN_WORKERS,
    STEP_LIMIT_S,
    STEP_NAMES,
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
    run_child,
    save_campaign,
)

REPO = Path(__file__).resolve().parents[1]
EXIT_INCOMPLETE, EXIT_FAILED = 3, 4
DATA_BUDGET_S = 300.0


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python3 tools/device_campaign.py", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="folder for the campaign's files (8 at most)")
    p.add_argument("--step", action="append", default=None, metavar="NAME",
                   help=f"run only this step (repeatable, or comma-separated): {', '.join(STEP_NAMES)}")
    p.add_argument("--workers", default=None, help="worker counts (default 0,1,2,4,8,12,16; dry run 0,1,2)")
    p.add_argument("--profile", default=None, help="smoke, quick or full (default full; dry run smoke)")
    p.add_argument("--dry-run", action="store_true", help="tiny data, few worker counts, one round: a quick check")
    p.add_argument("--total-budget", type=float, default=TOTAL_BUDGET_S, metavar="S",
                   help=f"seconds for the whole campaign (default {TOTAL_BUDGET_S:g})")
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


def selected_steps(asked: list[str] | None) -> list[str]:
    """The steps to run, in campaign order: all when none is named."""
    if not asked:
        return list(STEP_NAMES)
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
    return argv + (["--dry-run"] if args.dry_run else []) + (["--force"] if args.force else [])


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
              doc: dict[str, Any], tmp: Path, started: float) -> None:
    """Each step in turn within its budget and what is left of the total; ``doc`` saved after each."""
    for name in steps:
        doc.setdefault("steps", {})[name] = {"status": "interrupted", "reason": "the campaign was stopped"}
        spec = step_spec(name)
        left = args.total_budget - (time.monotonic() - started)
        budget = min(args.step_budget or spec.budget_s, STEP_LIMIT_S, left)
        if budget < 1:
            result: dict[str, Any] = {"status": "incomplete",
                                      "reason": f"not run: the campaign's total budget ({args.total_budget:g} s) "
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


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    steps = selected_steps(args.step)
    workers = parse_workers(args.workers) if args.workers else (DRY_RUN_WORKERS if args.dry_run else DEFAULT_WORKERS)
    plan = {"steps": steps, "workers": workers, "profile": profile_named(args.profile or (
        "smoke" if args.dry_run else "full")).name, "dry_run": args.dry_run, "total_budget_s": args.total_budget}
    if args.step_budget is not None and not 0 < args.step_budget <= STEP_LIMIT_S:
        raise LFWError(f"--step-budget must be between 0 and {STEP_LIMIT_S:g} seconds, got {args.step_budget:g}")
    args.out.mkdir(parents=True, exist_ok=True)
    check_out(args.out)
    started = time.monotonic()
    doc = load_campaign(args.out / CAMPAIGN_JSON)
    with Log(args.out) as log, tempfile.TemporaryDirectory(prefix="lfw-campaign-") as tmp:
        env = step_env(args, args.site or Path(tmp) / "site", log, doc)
        doc["run"] = plan
        save_campaign(args.out, doc)
        data = run_child([sys.executable, "-m", "lfw.data.cache", "--profile", plan["profile"]], DATA_BUDGET_S, env,
                         log, "data")
        if data["status"] != "done":
            raise LFWError(f"the synthetic LFW tree could not be made: {data.get('reason')}")
        try:
            run_steps(args, steps, plan, env, log, doc, Path(tmp), started)
        except KeyboardInterrupt:
            save_campaign(args.out, doc)  # the running step is marked interrupted
            raise
        statuses = [doc["steps"][n]["status"] for n in steps]
        log.line("campaign: " + ", ".join(f"{n} {s}" for n, s in zip(steps, statuses, strict=True)))
    check_out(args.out)
    if "failed" in statuses:
        return EXIT_FAILED
    return EXIT_INCOMPLETE if "incomplete" in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
