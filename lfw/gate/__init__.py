"""Regression gate for lfw-bench: what pytest-benchmark's ``--benchmark-compare-fail`` cannot gate.

pytest-benchmark fails a build only on timing statistics, never on ``extra_info``, and skips cases missing
from the baseline without a word. This package compares throughput, efficiency, time to first batch, memory
growth and data-wait fraction case by case, decides from the per-round values with a minimum effect size and
a rank test (see :mod:`lfw.gate.stats`), lists cases present on one side only, and warns when the two runs
come from different machines (switching to efficiency, which ports across them).

Reuse: ``compare_runs(baseline, current)`` takes two loaded runs (:func:`load_run`) and returns a
:class:`GateReport`; the CLI is ``python -m lfw.gate``.
"""

from lfw.gate.compare import GateReport, compare_runs
from lfw.gate.load import load_run
from lfw.gate.stats import Comparison, Thresholds

__all__ = ["Comparison", "GateReport", "Thresholds", "compare_runs", "load_run"]
