"""Pass-interleaved A/B: the base revision and the working tree measured in turn, one pass at a time, in pairs
of fresh pass-server processes (:data:`SERVERS`); why and what is written: docs/gating.md, "4. Wall clock, A/B".

Whatever happens (a crash, a timeout, Ctrl-C, SIGTERM), the sides are stopped and the worktree removed.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tqdm import tqdm

from lfw.cli.child import Child
from lfw.cli.saving import write_atomic
from lfw.errors import LFWError, MeasurementError, check_choice
from lfw.gate.compare import EXIT_INCOMPLETE, Comparison
from lfw.gate.counting import COST_MODULE, CannotCount, cost_command, judge_counts, run_counts
from lfw.gate.metrics import AB
from lfw.gate.paired_rule import INCONCLUSIVE, REGRESSED, PairedComparison, PairedInput, decide, look_points
from lfw.gate.thresholds import Thresholds
from lfw.gate.worktree import checkout, git, resolve, toplevel
from lfw.measure.cost import CHILD_TIMEOUT_S, ONE_THREAD
from lfw.measure.machine import machine_info
from lfw.results import case_record, write_run
from lfw.results import keys as K
from lfw.results.record import CaseRecord
from lfw.suite.profiles import PROFILES

BASE, CURRENT = "base", "current"
QUADS = {"ABBA": (BASE, CURRENT, CURRENT, BASE), "BAAB": (CURRENT, BASE, BASE, CURRENT)}
# Worker cases carry less of a process pair's lasting speed difference than workers0-* (docs/gating.md).
DEFAULT_CASES = ("workers2-none", "workers2-uint8")
# Where a revision's pass server is, newest first: it moved from lfw/measure/ (which may not import lfw.suite).
SERVERS = (Path("lfw") / "suite" / "pass_server.py", Path("lfw") / "measure" / "pass_server.py")
STARTUP_TIMEOUT_S = 300.0


def parse_cases(text: str) -> tuple[str, ...]:
    """``"a, b"`` or ``"a or b"`` (pytest's ``-k`` spelling) as a tuple of case ids."""
    parts = [p.strip() for chunk in text.split(",") for p in chunk.split(" or ")]
    cases = tuple(dict.fromkeys(p for p in parts if p))
    if not cases:
        raise LFWError("no A/B cases given; name some, e.g. -k 'workers0-uint8, workers2-none'")
    return cases


@dataclass(frozen=True)
class ABPlan:
    """What to run: base revision, cases, the pair budget and its looks, the pass lengths (profile)."""

    base_rev: str
    cases: tuple[str, ...] = DEFAULT_CASES
    min_pairs: int = 10
    max_pairs: int = 31
    look_every: int = 7
    profile: str = "quick"
    seed: int | None = None
    timeout_s: float = 300.0
    python: str = sys.executable
    count: bool = True  # count the cost layer on both sides after the pairs

    def __post_init__(self) -> None:
        if not 5 <= self.min_pairs <= self.max_pairs or self.look_every < 1:
            raise LFWError(f"need 5 <= --min-pairs <= --max-pairs and --look-every >= 1; got {self.min_pairs}, "
                           f"{self.max_pairs}, {self.look_every}")


def server_module(tree: Path) -> str | None:
    """The pass server module ``tree`` has (the first of :data:`SERVERS` there, dotted); None: it has none."""
    found = next((path for path in SERVERS if (tree / path).is_file()), None)
    return ".".join(found.with_suffix("").parts) if found else None


def pass_servers(trees: dict[str, Path], base_label: str) -> dict[str, str]:
    """Each side's pass server module; LFWError when a side has none."""
    servers = {name: server_module(tree) for name, tree in trees.items()}
    known = " or ".join(map(str, SERVERS))
    if servers[BASE] is None:
        raise LFWError(f"{base_label} predates pass-interleaved A/B (no {known}); choose a later base revision")
    if servers[CURRENT] is None:
        raise LFWError(f"the working tree {trees[CURRENT]} has no pass server ({known})")
    return {name: module for name, module in servers.items() if module is not None}


def side_env(tree: Path) -> dict[str, str]:
    """This environment with ``PYTHONPATH`` set to ``tree`` alone (never the other checkout) and threads pinned."""
    return {**os.environ, "PYTHONPATH": str(tree), **ONE_THREAD}


def start_side(name: str, tree: Path, server: str, plan: ABPlan, root: Path, log: Path) -> Child:
    """One pass server (the module ``server``) started in ``tree``, its stderr kept in ``log``."""
    return Child(f"{name} side", [plan.python, "-m", server, "--root", str(root), "--profile", plan.profile,
                                  *plan.cases], log=log, cwd=tree, env=side_env(tree), failure=MeasurementError,
                 grace_s=30.0)


def handshake(side: Child, tree: Path) -> None:
    """Wait for the side's ready line, and check that it imported lfw from its own checkout."""
    imported = Path(side.handshake(STARTUP_TIMEOUT_S).get("lfw", ""))
    if tree.resolve() not in imported.resolve().parents:
        raise MeasurementError(f"{side.name} imported lfw from {imported}, not from its checkout "
                               f"{tree}; check PYTHONPATH and the editable install")


@dataclass
class ABRun:
    """Everything one A/B run measured and decided."""

    plan: ABPlan
    sha: str
    seed: int
    cases: list[str]
    new_cases: list[str]
    passes: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)  # side -> case -> passes
    log_ratios: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (case, metric) -> per pair
    verdicts: list[PairedComparison] = field(default_factory=list)
    pairs: int = 0
    looks: list[int] = field(default_factory=list)
    out: Path | None = None
    current_dirty: bool = False  # the working tree had uncommitted changes: they are what was measured
    counts: list[Comparison] = field(default_factory=list)  # instructions per image, base vs current
    counts_unjudged: str | None = None  # why the cost layer was not counted on both sides

    @property
    def exit_code(self) -> int:
        if any(v.verdict == REGRESSED for v in self.verdicts) or any(c.regressed for c in self.counts):
            return 1
        if not self.verdicts and not self.counts:
            return EXIT_INCOMPLETE  # nothing compared is never a pass
        return 3 if any(v.verdict == INCONCLUSIVE for v in self.verdicts) else 0


def identity(case_id: str) -> tuple[str, str, str, dict[str, Any]]:
    """(group, name, fullname, params) of a case as the A/B saves it: ``<group>[<id>]``, matched by its key."""
    from lfw.suite import matrix

    group, case = matrix.find_case(case_id)
    name = f"{group.name}[{case.id}]"
    return group.name, name, f"{__name__}::{name}", dict(case.params)


def measure_pair(run: ABRun, sides: dict[str, Child], rng: random.Random, pair: int) -> None:
    """Warm every case up on both sides at once, then one randomized quad per case, cases in random order."""
    for case in run.cases:
        for side in sides.values():
            side.send({"case": case})
        for side in sides.values():
            side.receive(run.plan.timeout_s, f"a pass of {case}")
    order = list(run.cases)
    rng.shuffle(order)
    for case in order:
        quad = rng.choice(sorted(QUADS))
        logs: dict[str, dict[str, list[float]]] = {BASE: {}, CURRENT: {}}
        for slot, name in enumerate(QUADS[quad]):
            result = sides[name].ask({"case": case}, run.plan.timeout_s, f"a pass of {case}")
            run.passes[name][case].append({**result, "pair": pair, "slot": slot, "quad": quad})
            for metric in AB:
                logs[name].setdefault(metric.key, []).append(math.log(result[metric.key]))
        for metric in AB:
            ratio = sum(logs[CURRENT][metric.key]) / 2 - sum(logs[BASE][metric.key]) / 2
            run.log_ratios.setdefault((case, metric.key), []).append(ratio)


def judge_look(run: ABRun, th: Thresholds, looks: int) -> list[PairedComparison]:
    inputs = [PairedInput(identity(case)[2], metric, tuple(run.log_ratios[(case, metric.key)]),
                          tuple(p[metric.key] for p in run.passes[BASE][case]),
                          tuple(p[metric.key] for p in run.passes[CURRENT][case]))
              for case in run.cases for metric in AB]
    return decide(inputs, th.ab(), alpha_look=th.alpha / looks)


def run_ab(plan: ABPlan, repo: Path, th: Thresholds, out_dir: Path | None = None, root: Path | None = None) -> ABRun:
    """Measure ``plan`` (base revision vs ``repo``'s working tree) over ``root``, decide, write the outputs."""
    from lfw.data.root import resolve_root
    from lfw.suite import matrix

    check_choice("profile", plan.profile, PROFILES)
    for case in plan.cases:
        matrix.find_case(case)  # an unknown id is a one-line error naming the known ones
    repo = toplevel(repo)
    sha = resolve(repo, plan.base_rev, "base", "fetch it, or name a branch, tag or commit that exists")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = out_dir or repo / ".benchmarks" / "ab" / f"{stamp}-{sha[:10]}"
    if out.exists():
        raise LFWError(f"output folder {out} exists; A/B runs are never overwritten, choose another --ab-out")
    root = root or resolve_root(synthetic_images=PROFILES[plan.profile].synthetic_images).path
    seed = plan.seed if plan.seed is not None else int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    looks = look_points(plan.min_pairs, plan.max_pairs, plan.look_every)
    out.mkdir(parents=True)
    run = ABRun(plan, sha, seed, list(plan.cases), [])
    with tempfile.TemporaryDirectory(prefix="lfw-ab-") as scratch, checkout(repo, sha) as base_tree:
        trees = {BASE: base_tree, CURRENT: repo}
        servers = pass_servers(trees, f"base revision {plan.base_rev} ({sha[:10]})")
        run.passes = {BASE: {c: [] for c in plan.cases}, CURRENT: {c: [] for c in plan.cases}}
        with tqdm(total=plan.max_pairs, desc="A/B pairs", unit="pair", file=sys.stderr) as bar:
            for pair in range(1, plan.max_pairs + 1):
                names = [BASE, CURRENT]
                rng.shuffle(names)  # which side starts first is randomized too
                sides: dict[str, Child] = {}
                try:
                    for name in names:  # one at a time, so a side that fails to start never orphans the other
                        sides[name] = start_side(name, trees[name], servers[name], plan, root, out / f"{name}.log")
                    for name, side in sides.items():
                        handshake(side, trees[name])
                    missing = set(sides[BASE].ready.get("unknown", []))
                    if missing and not run.new_cases:
                        run.new_cases = sorted(missing)
                        run.cases = [c for c in run.cases if c not in missing]
                        if not run.cases:
                            raise LFWError(f"none of the cases {', '.join(plan.cases)} exists in the base revision")
                    measure_pair(run, sides, rng, pair)
                finally:
                    for side in sides.values():
                        side.stop()
                run.pairs = pair
                bar.update()
                if pair in looks:
                    run.looks.append(pair)
                    run.verdicts = judge_look(run, th, len(looks))
                    if run.exit_code != 3:  # a regression settles the run; so does nothing left inconclusive
                        break
        if plan.count:
            measure_counts(run, trees, root, Path(scratch), th)
        else:
            run.counts_unjudged = "not counted (--no-counts)"
    run.out = out
    write_outputs(run, repo, th)
    return run


def measure_counts(run: ABRun, trees: dict[str, Path], root: Path, tmp: Path, th: Thresholds) -> None:
    """Instructions per image of every preset on both sides, counted at once; judged into ``run.counts``."""
    from lfw.suite.matrix import TRANSFORMS

    old = [name for name, tree in trees.items() if not (tree / COST_MODULE).is_file()]
    if old:
        run.counts_unjudged = f"the {old[0]} revision has no cost layer ({COST_MODULE})"
        return
    images = PROFILES[run.plan.profile].cost_images
    commands = {f"the {name} side": (cost_command(run.plan.python, TRANSFORMS, root, images, tmp / f"callgrind-{name}"),
                                     tree, side_env(tree)) for name, tree in trees.items()}
    print(f"counting instructions per image on both sides under valgrind ({', '.join(TRANSFORMS)}; about two "
          "minutes)", file=sys.stderr, flush=True)
    try:
        counts = run_counts(commands, CHILD_TIMEOUT_S)
    except CannotCount as exc:
        run.counts_unjudged = str(exc)
        return
    run.counts = judge_counts(counts[f"the {BASE} side"], counts[f"the {CURRENT} side"], th)


def side_records(run: ABRun, side: str) -> list[dict[str, Any]]:
    records = []
    for case in run.cases:
        group, name, full, params = identity(case)
        passes = run.passes[side][case]
        record = CaseRecord().add({
            K.IMAGES: passes[0]["images"], K.BATCHES: passes[0]["batches"],
            K.AB_PAIR: [p["pair"] for p in passes], K.AB_SLOT: [p["slot"] for p in passes],
            K.AB_QUAD: [p["quad"] for p in passes], K.AB_SIDE: side,
        })
        record.measure(K.IMAGES_PER_S, [p["images_per_s"] for p in passes])
        record.measure(K.TTFB_S, [p["ttfb_s"] for p in passes])
        records.append(case_record(name=name, fullname=full, group=group, params=params,
                                   seconds=[p["wall_s"] for p in passes], extra=record.as_extra_info()))
    return records


def write_outputs(run: ABRun, repo: Path, th: Thresholds) -> None:
    """``base.json`` and ``current.json`` (pytest-benchmark format, per-pass data) and ``verdicts.json``."""
    assert run.out is not None
    machine = {**machine_info(), "bench_profile": run.plan.profile, "ab_seed": run.seed}
    now = datetime.now(timezone.utc).isoformat()
    head = git(repo, "rev-parse", "HEAD")
    # Untracked files count: a new module the current side imported was measured though no commit has it.
    run.current_dirty = bool(git(repo, "status", "--porcelain"))
    commits = {BASE: {"id": run.sha, "dirty": False, "project": "lfw-bench", "branch": run.plan.base_rev},
               CURRENT: {"id": head, "dirty": run.current_dirty, "project": "lfw-bench",
                         "branch": "(working tree)"}}
    for side in (BASE, CURRENT):
        write_run(run.out / f"{side}.json", side_records(run, side), machine=machine, commit=commits[side],
                  datetime=now)
    verdicts = {"exit_code": run.exit_code, "pairs": run.pairs, "looks": run.looks, "seed": run.seed,
                "plan": {k: v for k, v in asdict(run.plan).items() if k != "python"},
                "thresholds": asdict(th), "new_cases": run.new_cases,
                "log_ratios": {f"{c}:{m}": v for (c, m), v in run.log_ratios.items()},
                "verdicts": [{**{k: v for k, v in asdict(c).items() if k != "metric"}, "metric": c.metric.key}
                             for c in run.verdicts],
                "counts": [{"case": c.case, "metric": c.metric.key, "base": c.baseline, "current": c.current,
                            "change": c.change, "rule": c.rule, "regressed": c.regressed} for c in run.counts],
                "counts_unjudged": run.counts_unjudged}
    write_atomic(run.out / "verdicts.json", json.dumps(verdicts, indent=2) + "\n")

