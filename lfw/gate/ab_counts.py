"""Instruction counts in A/B: the cost layer counted for both revisions in the same job (instructions per image
and what a pass moves per image, :mod:`lfw.measure.moves`).

A pull request has no committed baseline of its own runner, and its wall clock needs many process pairs; its
per-image work is countable exactly. Each side runs its own ``python -m lfw.measure.cost`` (its checkout on
``PYTHONPATH``, as its pass server does), both at once: a count does not depend on what else the machine runs.
The rule is the two-file one (:func:`lfw.gate.compare.judge`: higher by more than ``--cost-threshold``), with
no statistics: a count repeats.

A side that cannot count (valgrind, its headers or a compiler missing: the cost CLI's exit 2), or a base
revision from before the cost layer, leaves the layer not judged with that reason; a count that crashes or
times out is a measurement failure.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from lfw.errors import EXIT_USAGE, MeasurementError
from lfw.gate.compare import Comparison, judge
from lfw.gate.counting import kill_group, per_image_counts
from lfw.gate.metrics import COUNTED
from lfw.gate.thresholds import Thresholds
from lfw.measure.cost import last_line

COST_MODULE = Path("lfw") / "measure" / "cost.py"


def count_case(preset: str) -> str:
    """The name a preset's count goes by in verdicts: the cost layer's own test id."""
    return f"test_cost[{preset}]"


def count_sides(commands: dict[str, tuple[list[str], Path, dict[str, str]]], timeout_s: float
                ) -> tuple[dict[str, dict[str, dict[str, float]]], str | None]:
    """Run each side's cost command (argv, cwd, env) at once; (by side, preset and metric key the per-image
    counts: instructions and what a pass moves, or the reason the layer cannot be judged)."""
    procs = {name: subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True) for name, (argv, cwd, env) in commands.items()}
    outputs: dict[str, tuple[str, str]] = {}
    try:
        for name, proc in procs.items():
            try:
                outputs[name] = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise MeasurementError(f"the {name} side's instruction count took longer than {timeout_s:g} s "
                                       "and was stopped") from None
    finally:
        for proc in procs.values():
            kill_group(proc)  # valgrind and its child too, on an interrupt as well
    counts: dict[str, dict[str, dict[str, float]]] = {}
    for name, (out, err) in outputs.items():
        code = procs[name].returncode
        if code == EXIT_USAGE:
            return {}, f"the {name} side could not count: {last_line(err).removeprefix('error: ')}"
        if code != 0:
            raise MeasurementError(f"the {name} side's instruction count failed (exit {code}): {last_line(err)}")
        counts[name] = per_image_counts(out, f"the {name} side")
    return counts, None


def judge_counts(counts: dict[str, dict[str, dict[str, float]]], base: str, current: str,
                 th: Thresholds) -> list[Comparison]:
    """One comparison per preset and count measured on both sides, under the two-file cost threshold."""
    out = []
    for preset, mine in counts[current].items():
        theirs = counts[base].get(preset, {})
        out += [judge(count_case(preset), m, [theirs[m.key]], [mine[m.key]], th)
                for m in COUNTED if m.key in mine and m.key in theirs]
    return out
