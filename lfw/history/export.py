"""The judged metrics of a run in Bencher's Metric Format (BMF), for tools outside this suite.

BMF (https://bencher.dev/docs/reference/bencher-metric-format/) is a JSON object: benchmark name -> measure name
-> ``{"value", "lower_value", "upper_value"}``. Here the benchmark is the case key (``group/id``, the identity the
gate matches on), the measure is the gate's metric key (``instructions_per_image``, ``efficiency``,
``pss_growth_mib``...), the value is the median over rounds and the bounds are the smallest and largest round:
exactly what the history store keeps per case, with the rounds' range beside it. The same metrics and the
same rules (positive controls, metrics a group does not judge, wall clock with too few rounds left out) as the
gate and the history: :func:`lfw.history.store.judged_rounds`. The schema: ``docs/schema/bmf.schema.json``.

    python -m lfw.history export RUN.json [--out metrics.json]
    bencher run --adapter json --file metrics.json ...
"""

from __future__ import annotations

from statistics import median
from typing import Any

from lfw.history.store import judged_rounds
from lfw.results import Run


def bencher_metrics(run: Run) -> dict[str, dict[str, dict[str, float]]]:
    """The run's judged metrics as a BMF object (case key -> metric key -> value, lower and upper value)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for key, metric, values in judged_rounds(run):
        out.setdefault(key, {})[metric.key] = {"value": float(median(values)), "lower_value": min(values),
                                               "upper_value": max(values)}
    return out


def describe(metrics: dict[str, Any]) -> str:
    """One line: how many benchmarks and measures an export holds."""
    measures = sum(len(m) for m in metrics.values())
    return f"{len(metrics)} cases, {measures} measures"
