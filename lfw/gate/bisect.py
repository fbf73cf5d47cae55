"""The first commit between GOOD and BAD whose instructions (or another count) per image moved beyond the cost
threshold relative to GOOD (``--help``). A count repeats, so one count per commit decides; why not ``git bisect
run``, and the output: docs/history.md, "Bisect".

Exit codes: 0 the first bad commit found; 2 bad input (unknown revision, GOOD not an ancestor of BAD, BAD not
moved, an unknown case or metric, a revision without a cost layer); 4 a count failed or timed out; 130
interrupted.
"""

from __future__ import annotations

import math
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lfw.cli.args import OneLineParser
from lfw.cli.table import table
from lfw.errors import LFWError, check_choice, cli_entry
from lfw.gate.ab import parse_cases, side_env
from lfw.gate.counting import COST_MODULE, cost_command, run_counts
from lfw.gate.metrics import COUNTED, INSTRUCTIONS, Metric
from lfw.gate.table import fmt_value
from lfw.gate.thresholds import Thresholds
from lfw.gate.worktree import checkout, git, resolve, sigterm_as_interrupt, toplevel
from lfw.measure.cost import CHILD_TIMEOUT_S
from lfw.suite.profiles import PROFILES

METRICS: dict[str, Metric] = {m.key: m for m in COUNTED}
GOOD, BAD = "good", "bad"


@dataclass(frozen=True)
class BisectPlan:
    """What to bisect; ``cases`` empty: every case GOOD counts."""

    good: str
    bad: str
    cases: tuple[str, ...] = ()
    metric: Metric = INSTRUCTIONS
    threshold: float = Thresholds().cost
    count_cmd: str | None = None
    timeout_s: float = CHILD_TIMEOUT_S
    python: str = sys.executable


@dataclass(frozen=True)
class StepCount:
    """One counted commit: per case the metric's value, the verdict against GOOD, the seconds it took."""

    label: str  # "GOOD", "BAD" or the step number
    commit: str
    values: dict[str, float]
    verdict: str
    seconds: float


@dataclass
class BisectResult:
    """The search: every count taken in order, the first bad commit, the cases BAD moved."""

    plan: BisectPlan
    good: str
    bad: str
    commits: list[str]
    steps: list[StepCount] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    first_bad: str = ""
    last_good: str = ""
    seconds: float = 0.0

    def count_of(self, commit: str) -> StepCount:
        return next(s for s in self.steps if s.commit == commit)


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """Commits after GOOD up to BAD on the ancestry path, oldest first; LFWError unless GOOD is a proper ancestor."""
    if good == bad:
        raise LFWError(f"GOOD and BAD are the same commit ({good[:10]}); nothing to bisect")
    ancestor = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", good, bad], check=False,
                              capture_output=True)
    if ancestor.returncode != 0:
        raise LFWError(f"GOOD {good[:10]} is not an ancestor of BAD {bad[:10]}; bisect needs GOOD before BAD on "
                       "one line of history (swap them?)")
    return git(repo, "rev-list", "--ancestry-path", "--topo-order", "--reverse", f"{good}..{bad}").split()


def moved(metric: Metric, base: float, value: float, threshold: float) -> bool:
    """Beyond ``threshold`` relative to ``base`` in the metric's bad direction (a count from zero moved)."""
    return metric.sign * metric.change(base, value) > threshold


class Counter:
    """Counts commits of ``repo``, each in a worktree under ``tmp`` removed right after its count."""

    def __init__(self, plan: BisectPlan, repo: Path, tmp: Path) -> None:
        self.plan, self.repo, self.tmp = plan, repo, tmp
        self.root: Path | None = None
        self.presets: tuple[str, ...] = ()
        if plan.count_cmd is None:
            from lfw.suite.matrix import TRANSFORMS

            for case in plan.cases:
                check_choice("cost preset", case, TRANSFORMS)
            self.presets = plan.cases or TRANSFORMS

    def command(self) -> list[str]:
        if self.plan.count_cmd is not None:
            return shlex.split(self.plan.count_cmd)
        from lfw.data.root import resolve_root  # torchvision, only when a count is run

        if self.root is None:
            self.root = resolve_root(synthetic_images=PROFILES["quick"].synthetic_images).path
        return cost_command(self.plan.python, self.presets, self.root, PROFILES["quick"].cost_images,
                            self.tmp / "callgrind")

    def count(self, commit: str) -> dict[str, float]:
        """``plan.metric`` per image of each case counted at ``commit``."""
        who = f"commit {commit[:10]}"
        with checkout(self.repo, commit, self.tmp / commit[:12]) as tree:
            if self.plan.count_cmd is None and not (tree / COST_MODULE).is_file():
                raise LFWError(f"revision {commit[:10]} has no cost layer ({COST_MODULE}); choose a later GOOD")
            counts = run_counts({who: (self.command(), tree, side_env(tree))}, self.plan.timeout_s)[who]
        key = self.plan.metric.key
        return {case: float(v[key]) for case, v in counts.items() if key in v}


def run_bisect(plan: BisectPlan, repo: Path, progress: bool = True) -> BisectResult:
    """The first commit after GOOD whose count moved beyond the threshold; ``progress`` prints each count on stdout.

    Raises LFWError (bad input) or MeasurementError (a count failed); every worktree is removed whatever happens.
    """
    t0 = time.perf_counter()
    repo = toplevel(repo)
    good, bad = resolve(repo, plan.good, "GOOD"), resolve(repo, plan.bad, "BAD")
    commits = commits_between(repo, good, bad)
    result = BisectResult(plan, good, bad, commits)
    scratch = tempfile.TemporaryDirectory(prefix="lfw-bisect-")  # the worktrees and callgrind's cache
    try:
        counter = Counter(plan, repo, Path(scratch.name))

        def take(label: str, commit: str, verdict_of: Callable[[dict[str, float]], str]) -> StepCount:
            start = time.perf_counter()
            values = counter.count(commit)
            step = StepCount(label, commit, values, verdict_of(values), time.perf_counter() - start)
            result.steps.append(step)
            if progress:
                print(f"counted {label} {commit[:10]}: {step.verdict} ({step.seconds:.1f} s)", flush=True)
            return step

        def verdict(values: dict[str, float]) -> str:
            if missing := [c for c in result.moved if c not in values]:
                raise LFWError(f"a count has no {plan.metric.key} for {', '.join(missing)}")
            return BAD if any(moved(plan.metric, base[c], values[c], plan.threshold) for c in result.moved) else GOOD

        base = take("GOOD", good, lambda values: GOOD).values
        cases = list(plan.cases) or sorted(base)
        unknown = [c for c in cases if c not in base]
        if unknown:
            raise LFWError(f"case {unknown[0]!r} not counted at GOOD {good[:10]} (it counts: "
                           f"{', '.join(sorted(base)) or 'nothing'})")

        def moved_at_bad(values: dict[str, float]) -> str:
            result.moved = [c for c in cases if c in values and moved(plan.metric, base[c], values[c], plan.threshold)]
            return BAD if result.moved else GOOD

        at_bad = take("BAD", bad, moved_at_bad).values
        if not result.moved:
            changes = ", ".join(f"{c} {at_bad[c] / base[c] - 1:+.2%}" for c in cases if c in at_bad and base[c])
            raise LFWError(f"BAD {bad[:10]} has not moved beyond {plan.threshold * 100:g}% relative to GOOD "
                           f"{good[:10]} ({plan.metric.label}: {changes or 'no case counted on both'}); nothing "
                           "to bisect")
        lo, hi = -1, len(commits) - 1  # commits[lo] is good (-1: GOOD itself), commits[hi] is bad
        step_no = 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            step_no += 1
            if take(str(step_no), commits[mid], verdict).verdict == BAD:
                hi = mid
            else:
                lo = mid
        result.first_bad = commits[hi]
        result.last_good = commits[lo] if lo >= 0 else good
    finally:
        scratch.cleanup()
        result.seconds = time.perf_counter() - t0
    return result


def render(result: BisectResult, repo: Path) -> str:
    """The bisect's text: the range, every count taken, the first bad commit and its change, the wall time."""
    plan, m = result.plan, result.plan.metric
    base = result.count_of(result.good).values

    def cell(step: StepCount, case: str) -> str:
        if case not in step.values:
            return "-"
        value = fmt_value(m.key, m.unit, step.values[case])
        if step.commit == result.good or not base.get(case):
            return value
        return f"{value} ({step.values[case] / base[case] - 1:+.2%})"

    lines = [f"bisect {plan.good} ({result.good[:10]}) .. {plan.bad} ({result.bad[:10]}): {len(result.commits)} "
             f"commits; {m.label} beyond +{plan.threshold * 100:g}% relative to GOOD; cases moved at BAD: "
             f"{', '.join(result.moved)}"]
    lines.append(table(("step", "commit", *result.moved, "verdict", "seconds"),
                       [(s.label, s.commit[:10], *(cell(s, c) for c in result.moved), s.verdict,
                         f"{s.seconds:.1f}") for s in result.steps], right={0, len(result.moved) + 3}))
    subject = git(repo, "log", "-1", "--format=%s", result.first_bad)
    first = result.count_of(result.first_bad).values
    lines.append(f"first bad commit: {result.first_bad} {subject}")
    lines += [f"  {c}: {m.label} {fmt_value(m.key, m.unit, base[c])} at GOOD -> "
              f"{fmt_value(m.key, m.unit, first[c])} ({first[c] / base[c] - 1:+.2%})" for c in result.moved
              if base.get(c)]
    searched, n = len(result.steps) - 2, len(result.commits)
    lines.append(f"counted {len(result.steps)} commits in {result.seconds:.1f} s: GOOD, BAD and {searched} search "
                 f"steps (at most ceil(log2 {n}) = {math.ceil(math.log2(n))} for {n} commits); last good: "
                 f"{result.last_good[:10]}")
    return "\n".join(lines)


def bisect_command(good: str, bad: str, *, cases: str | None = None, metric: str = INSTRUCTIONS.key,
                   threshold: float = Thresholds().cost, count_cmd: str | None = None,
                   timeout_s: float = CHILD_TIMEOUT_S, repo: Path | None = None) -> int:
    """Bisect and print the result; 0 when found. For front ends wrapped by :func:`lfw.errors.cli_entry`."""
    if metric not in METRICS:
        raise LFWError(f"--metric {metric!r} is not a deterministic count; choose from {', '.join(METRICS)}")
    if not (math.isfinite(threshold) and threshold > 0):
        raise LFWError(f"--threshold must be a positive fraction, got {threshold:g}")
    plan = BisectPlan(good, bad, parse_cases(cases) if cases else (), METRICS[metric], threshold, count_cmd,
                      timeout_s)
    repo = repo or Path.cwd()
    with sigterm_as_interrupt():  # unwinds through run_bisect's clean-up: count stopped, worktrees removed
        result = run_bisect(plan, repo)
    print(render(result, repo))
    return 0


def parser() -> OneLineParser:
    p = OneLineParser(prog="python -m lfw.gate.bisect",
                      description="The first commit between GOOD and BAD whose instructions (or another "
                                  "deterministic count) per image moved beyond the threshold relative to GOOD.")
    p.add_argument("good", metavar="GOOD", help="a revision whose count is the base")
    p.add_argument("bad", metavar="BAD", help="a later revision whose count moved")
    p.add_argument("-k", dest="cases", help="cases (cost presets, comma- or 'or'-separated; default: all)")
    p.add_argument("--metric", default=INSTRUCTIONS.key, choices=sorted(METRICS),
                   help=f"the count to bisect (default {INSTRUCTIONS.key})")
    p.add_argument("--threshold", type=float, default=Thresholds().cost, metavar="FRACTION",
                   help=f"rise relative to GOOD that makes a commit bad (default: the gate's {Thresholds().cost})")
    p.add_argument("--count-cmd", help="count with this command in each worktree instead of the revision's own "
                                       "cost layer; its last line must be the cost CLI's JSON")
    p.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds per count (default %(default)g)")
    p.add_argument("--repo", type=Path, help="the repository (default: the current directory's)")
    return p


@cli_entry
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return bisect_command(args.good, args.bad, cases=args.cases, metric=args.metric, threshold=args.threshold,
                          count_cmd=args.count_cmd, timeout_s=args.timeout, repo=args.repo)


if __name__ == "__main__":
    sys.exit(main())
