"""Regression gate for lfw-bench: two files (:func:`compare_runs`) or pass-interleaved A/B
(:func:`~lfw.gate.ab.run_ab`). The CLI is ``python -m lfw.gate``; ``--help`` prints the rule and exit codes.
"""

from __future__ import annotations

from lfw import lazy_exports

__all__ = ["Comparison", "GateReport", "Thresholds", "compare_runs"]
# Lazy, so reading a saved verdict (:mod:`lfw.gate.verdict`) does not load the comparison.
__getattr__ = lazy_exports(__name__, {"Thresholds": "lfw.gate.thresholds", "Comparison": "lfw.gate.compare",
                                      "GateReport": "lfw.gate.compare", "compare_runs": "lfw.gate.compare"})
