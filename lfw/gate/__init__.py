"""Regression gate for lfw-bench: the verdicts pytest-benchmark's ``--benchmark-compare-fail`` cannot give.

pytest-benchmark fails a build only on timing statistics, never on ``extra_info``, and skips cases missing from
the baseline without a word. This package judges a run in layers:

- two files (:func:`compare_runs`): instruction counts per image (deterministic), memory, data wait, and
  wall-clock figures for gross regressions only, against a committed baseline of the same runner class;
- A/B (:func:`~lfw.gate.ab.run_ab`): the base revision and the working tree interleaved pass by pass in pairs
  of fresh processes, decided per pair with a signed-rank test, a minimum effect and Holm's correction
  (:mod:`lfw.gate.paired_rule`).

The CLI is ``python -m lfw.gate``; its ``--help`` prints the decision rule and the exit codes.
"""

from __future__ import annotations

from lfw import lazy_exports

__all__ = ["Comparison", "GateReport", "Thresholds", "compare_runs"]
# The comparison is imported when asked for, so reading a saved verdict (:mod:`lfw.gate.verdict`, as the report
# does) does not load it.
__getattr__ = lazy_exports(__name__, {"Thresholds": "lfw.gate.thresholds", "Comparison": "lfw.gate.compare",
                                      "GateReport": "lfw.gate.compare", "compare_runs": "lfw.gate.compare"})
