"""The cost layer counted in other checkouts (the A/B sides, each commit bisect counts).

Each checkout runs its own ``python -m lfw.measure.cost`` in its own process group, several at once, and prints
last ``{"counts": {CASE: {"instructions": N, "images": M, "moves": {...}}}}``. Its exit 2 (valgrind missing ...)
raises :class:`CannotCount`; a crash or timeout is a :class:`~lfw.errors.MeasurementError`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from lfw.cli.stop import stop_tree
from lfw.errors import EXIT_USAGE, LFWError, MeasurementError
from lfw.gate.compare import Comparison, judge
from lfw.gate.metrics import COUNTED, INSTRUCTIONS
from lfw.gate.thresholds import Thresholds
from lfw.measure.cost import last_line

COST_MODULE = Path("lfw") / "measure" / "cost.py"
GRACE_S = 5.0  # for a stopped count to end before its process group is killed
Counts = dict[str, dict[str, float]]  # case -> metric key -> count per image


class CannotCount(LFWError):
    """A checkout cannot count here (the cost CLI's exit 2: valgrind missing ...)."""


def cost_command(python: str, presets: Sequence[str], root: Path, images: int, cache_dir: Path) -> list[str]:
    """A revision's own cost CLI counting one batch of ``images`` images of each preset."""
    return [python, "-m", "lfw.measure.cost", *presets, "--root", str(root), "--batch-size", str(images),
            "--batches", "1", "--cache-dir", str(cache_dir)]


def per_image_counts(output: str, who: str) -> Counts:
    """Per case, every count per image from the cost CLI's last line: instructions / images, and the moves."""
    try:
        found = json.loads(output.strip().splitlines()[-1])["counts"]
        return {str(case): {INSTRUCTIONS.key: c["instructions"] / c["images"], **c.get("moves", {})}
                for case, c in found.items()}
    except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError):
        raise MeasurementError(f"the count of {who} wrote no counts: {last_line(output)[:120]}") from None


def run_counts(commands: Mapping[str, tuple[list[str], Path, dict[str, str]]], timeout_s: float
               ) -> dict[str, Counts]:
    """Run each count (``who`` -> argv, cwd, env) at once; per ``who``, its counts per image. Raises CannotCount
    (exit 2 of a count) or MeasurementError (a count failed or timed out)."""
    procs = {who: subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True) for who, (argv, cwd, env) in commands.items()}
    outputs: dict[str, tuple[str, str]] = {}
    try:
        for who, proc in procs.items():
            try:
                outputs[who] = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise MeasurementError(f"the count of {who} took longer than {timeout_s:g} s and was "
                                       "stopped") from None
    finally:
        for proc in procs.values():
            stop_tree([proc], GRACE_S, ask_all=True, group=True)  # valgrind and its child too, on an interrupt
    for who, (out, err) in outputs.items():
        code = procs[who].returncode
        if code == EXIT_USAGE:
            raise CannotCount(f"{who} could not count: {last_line(err).removeprefix('error: ')}")
        if code != 0:
            raise MeasurementError(f"the count of {who} failed (exit {code}): {last_line(err or out)}")
    return {who: per_image_counts(out, who) for who, (out, _) in outputs.items()}


def judge_counts(base: Counts, current: Counts, th: Thresholds) -> list[Comparison]:
    """One comparison (``test_cost[PRESET]``) per preset and count of both sides, under the cost threshold."""
    out = []
    for preset, mine in current.items():
        theirs = base.get(preset, {})
        out += [judge(f"test_cost[{preset}]", m, [theirs[m.key]], [mine[m.key]], th)
                for m in COUNTED if m.key in mine and m.key in theirs]
    return out
