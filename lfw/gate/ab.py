"""Same-job A/B: run the base revision and the working tree alternately on one machine, then gate.

Why: a committed baseline was measured on another day, maybe on another VM of the same runner class, and on
a shared 2-core machine the same code can differ by tens of percent between sessions. Running both sides in
one job, interleaved, exposes them to the same drift and the same neighbours, which is what makes a 10-15%
difference detectable (Laaber et al., EMSE 2019). The order is ABBA (base, current, current, base, ...) so
that a machine that drifts steadily during the job favours neither side.

The base revision is checked out with ``git worktree add --detach`` under a temporary folder; each side runs
``python -m pytest benchmarks -k SELECTION --benchmark-json=...`` in its own tree with ``PYTHONPATH`` set to
that tree, so ``import lfw`` finds that side's code even though the package is installed editable. Per-round
values of each side are pooled over its runs and the pooled runs go through the ordinary gate.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from lfw.errors import LFWError
from lfw.gate.load import Run, load_run

BASE, CURRENT = "base", "current"
Runner = Callable[..., subprocess.CompletedProcess]


@dataclass(frozen=True)
class ABPlan:
    """What to run: base revision, pytest ``-k`` selection, repetitions per side, benchmark profile."""

    base_rev: str
    selection: str = "workers0-none or workers2-none"
    repeats: int = 3
    profile: str = "quick"
    python: str = sys.executable


def run_order(repeats: int) -> list[str]:
    """ABBA order over ``repeats`` pairs: base, current, current, base, base, current, ..."""
    if repeats < 1:
        raise LFWError(f"--repeats must be at least 1, not {repeats}")
    return [side for i in range(repeats) for side in ((BASE, CURRENT) if i % 2 == 0 else (CURRENT, BASE))]


def pytest_command(plan: ABPlan, json_path: Path) -> list[str]:
    """The benchmark command of one side: the selection, this profile, JSON with per-round data, no cache."""
    return [plan.python, "-m", "pytest", "benchmarks", "-k", plan.selection, f"--bench-profile={plan.profile}",
            f"--benchmark-json={json_path}", "-q", "-p", "no:cacheprovider"]


def side_env(tree: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` with ``tree`` first on PYTHONPATH, so ``lfw`` imports from that side's checkout."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    return env


def pool_runs(runs: Sequence[Run]) -> Run:
    """One run whose cases hold the rounds of every run in ``runs`` (matched on fullname).

    ``stats.data`` and every ``*_rounds`` list in ``extra_info`` are concatenated, and the scalar beside
    each list (``images_per_s`` beside ``images_per_s_rounds``) becomes the pooled median, so the result reads
    like an ordinary run with more rounds. Machine info comes from the first run.
    """
    if not runs:
        raise LFWError("no runs to pool")
    pooled: dict[str, dict[str, Any]] = {}
    for run in runs:
        for case in run["benchmarks"]:
            name = case["fullname"]
            if name not in pooled:
                pooled[name] = {**case, "stats": {**case["stats"], "data": list(case["stats"]["data"])},
                                "extra_info": dict(case.get("extra_info") or {})}
                continue
            target = pooled[name]
            target["stats"]["data"] += case["stats"]["data"]
            for key, value in (case.get("extra_info") or {}).items():
                if key.endswith("_rounds") and isinstance(value, list):
                    target["extra_info"][key] = list(target["extra_info"].get(key, [])) + value
    for case in pooled.values():
        case["stats"]["rounds"] = len(case["stats"]["data"])
        case["stats"]["median"] = median(case["stats"]["data"])
        info = case["extra_info"]
        for key in [k for k in info if k.endswith("_rounds") and isinstance(info[k], list) and info[k]]:
            info[key.removesuffix("_rounds")] = median(info[key])
    return {**runs[0], "benchmarks": list(pooled.values()), "ab_runs": len(runs)}


def git(repo: Path, *args: str, runner: Runner = subprocess.run) -> str:
    result = runner(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise LFWError(f"git {' '.join(args)} failed: {message[-1] if message else 'no output'}")
    return result.stdout.strip()


def run_side(plan: ABPlan, side: str, tree: Path, json_path: Path, runner: Runner = subprocess.run) -> Run:
    """Run one side's benchmarks in ``tree`` and load its JSON; a failed run is a one-line error."""
    log = json_path.with_suffix(".log")
    with log.open("w") as handle:
        result = runner(pytest_command(plan, json_path), cwd=tree, env=side_env(tree), stdout=handle,
                        stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        raise LFWError(f"{side} benchmarks failed (exit {result.returncode}) in {tree}; log: {log}")
    return load_run(json_path)


def run_ab(plan: ABPlan, repo: Path, out_dir: Path | None = None,
           runner: Runner = subprocess.run) -> tuple[Run, Run, str]:
    """Check out ``plan.base_rev`` in a worktree, run both sides in ABBA order, return (base, current, sha).

    Runs are written to ``out_dir`` (kept) or to the temporary folder (removed with the worktree).
    """
    repo = Path(git(repo, "rev-parse", "--show-toplevel", runner=runner))
    try:
        sha = git(repo, "rev-parse", "--verify", "--quiet", f"{plan.base_rev}^{{commit}}", runner=runner)
    except LFWError:
        raise LFWError(f"unknown base revision {plan.base_rev!r}: not a commit in {repo}") from None
    with tempfile.TemporaryDirectory(prefix="lfw-gate-ab-") as tmp:
        base_tree = Path(tmp) / "base"
        out = Path(out_dir) if out_dir else Path(tmp) / "runs"
        out.mkdir(parents=True, exist_ok=True)
        git(repo, "worktree", "add", "--detach", str(base_tree), sha, runner=runner)
        try:
            if not (base_tree / "benchmarks").is_dir():
                raise LFWError(f"base revision {plan.base_rev} has no benchmarks/ folder to run")
            trees = {BASE: base_tree, CURRENT: repo}
            runs: dict[str, list[Run]] = {BASE: [], CURRENT: []}
            order = run_order(plan.repeats)
            for i, side in enumerate(order, 1):
                print(f"[ab] run {i}/{len(order)}: {side} ({plan.selection})", file=sys.stderr, flush=True)
                runs[side].append(run_side(plan, side, trees[side], out / f"{i:02d}_{side}.json", runner))
        finally:  # never raise from here: it would hide the error that got us here
            runner(["git", "-C", str(repo), "worktree", "remove", "--force", str(base_tree)],
                   capture_output=True, check=False)
        return pool_runs(runs[BASE]), pool_runs(runs[CURRENT]), sha
