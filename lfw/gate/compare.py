"""Case-by-case comparison of two runs: what is compared, what differs, what regressed.

Cases are matched on ``fullname`` (``file::test[params]``). Cases present on one side only are listed in the
report, never dropped: pytest-benchmark's own ``--benchmark-compare-fail`` skips a case missing from the
baseline silently, which is how a renamed benchmark escapes its gate.

The machine decides what may be compared. Two runs from the same runner class and core count compare
absolute images/s; from different machines only ``efficiency`` (images/s over the same session's single-core
ceiling) is comparable, so the gate switches to it, drops absolute time to first batch, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from lfw.gate.load import Run, cases_by_name, rounds_of
from lfw.gate.metrics import PORTABLE, SAME_MACHINE, Metric, slope_metrics
from lfw.gate.stats import Comparison, Thresholds, judge

# machine_info keys whose difference changes the numbers; the first two make the runs different machines.
MACHINE_KEYS = ("runner_class", "usable_cores", "torch", "pillow", "jpeg_library", "dataset_kind",
                "dataset_files", "bench_profile", "cache_mode")
PORTABILITY_KEYS = ("runner_class", "usable_cores")
CEILING_PREFIX = "per_core_images_per_s_"  # the session's single-core rate per transform, in machine_info
CEILING_SHIFT_NOTE = 0.15
Mode = Literal["auto", "absolute", "portable"]


@dataclass
class GateReport:
    """Everything the gate found; ``exit_code`` is 1 if any comparison regressed, else 0."""

    comparisons: list[Comparison]
    new_cases: list[str]
    missing_cases: list[str]
    machine_diffs: dict[str, tuple[Any, Any]]
    portable: bool
    metrics_note: str
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.regressed]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    @property
    def case_count(self) -> int:
        return len({c.case for c in self.comparisons})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view for the report tool."""
        return {
            "exit_code": self.exit_code,
            "portable": self.portable,
            "metrics_note": self.metrics_note,
            "machine_diffs": {k: list(v) for k, v in self.machine_diffs.items()},
            "new_cases": self.new_cases,
            "missing_cases": self.missing_cases,
            "notes": self.notes,
            "comparisons": [
                {"case": c.case, "metric": c.metric.key, "baseline": c.baseline, "current": c.current,
                 "change": c.change, "p_value": c.p_value, "n_baseline": c.n_baseline,
                 "n_current": c.n_current, "baseline_spread": c.baseline_spread, "large": c.large,
                 "regressed": c.regressed}
                for c in self.comparisons
            ],
        }


def machine_diffs(baseline: Run, current: Run) -> dict[str, tuple[Any, Any]]:
    """The machine_info keys that matter and differ, with (baseline, current) values."""
    b, c = baseline.get("machine_info") or {}, current.get("machine_info") or {}
    return {k: (b.get(k), c.get(k)) for k in MACHINE_KEYS if b.get(k) != c.get(k)}


def ceiling_shifts(baseline: Run, current: Run) -> dict[str, float]:
    """Relative change of each transform's single-core ceiling between the two sessions.

    The ceiling is measured without a DataLoader, so a large shift means the machine (or decoding itself) ran
    at a different speed in the two sessions: absolute throughput changes of that size are not evidence.
    """
    b, c = baseline.get("machine_info") or {}, current.get("machine_info") or {}
    shifts = {}
    for key in sorted(set(b) & set(c)):
        if key.startswith(CEILING_PREFIX) and isinstance(b[key], int | float) and b[key] and c[key]:
            shifts[key.removeprefix(CEILING_PREFIX)] = c[key] / b[key] - 1.0
    return shifts


def choose_metrics(diffs: dict[str, tuple[Any, Any]], mode: Mode) -> tuple[bool, tuple[Metric, ...], str]:
    """(portable?, metrics, a sentence saying which throughput metric is used and why)."""
    crossed = [k for k in PORTABILITY_KEYS if k in diffs]
    portable = mode == "portable" or (mode == "auto" and bool(crossed))
    if not portable:
        why = "forced by --mode absolute" if crossed else "same runner class and usable cores"
        return False, SAME_MACHINE, f"compared absolute images/s ({why})"
    why = f"{', '.join(crossed)} differ" if crossed and mode == "auto" else "forced by --mode portable"
    return True, PORTABLE, (f"compared efficiency instead of absolute images/s, and skipped time to first "
                            f"batch ({why}: absolute speed does not port across machines)")


def compare_runs(baseline: Run, current: Run, thresholds: Thresholds | None = None,
                 mode: Mode = "auto") -> GateReport:
    """Compare ``current`` against ``baseline`` (both loaded pytest-benchmark runs), case by case.

    Args:
        thresholds: minimum effect sizes and test level (defaults: :class:`Thresholds`).
        mode: ``auto`` switches to efficiency when runner class or core count differ; ``absolute`` and
            ``portable`` force one or the other.
    """
    thresholds = thresholds or Thresholds()
    base_cases, cur_cases = cases_by_name(baseline), cases_by_name(current)
    diffs = machine_diffs(baseline, current)
    portable, metrics, note = choose_metrics(diffs, mode)
    report = GateReport([], sorted(set(cur_cases) - set(base_cases)), sorted(set(base_cases) - set(cur_cases)),
                        diffs, portable, note)
    moved = {t: v for t, v in ceiling_shifts(baseline, current).items() if abs(v) > CEILING_SHIFT_NOTE}
    if moved:
        named = ", ".join(f"{t} {v:+.0%}" for t, v in moved.items())
        report.notes.append(f"the single-core ceiling moved between the sessions ({named}): the machine ran at "
                            "a different speed (or decoding changed); prefer --ab for absolute throughput")
    for name in sorted(set(base_cases) & set(cur_cases)):
        b_case, c_case = base_cases[name], cur_cases[name]
        keys = set(b_case.get("extra_info") or {}) | set(c_case.get("extra_info") or {})
        for metric in (*metrics, *slope_metrics(keys)):
            b, c = rounds_of(b_case, metric.key), rounds_of(c_case, metric.key)
            if b is None and c is None:
                continue  # not measured by this case (e.g. data-wait outside the training-loop cases)
            if b is None or c is None:
                side = "current" if b is None else "baseline"
                report.notes.append(f"{name}: {metric.label} only in the {side} run, not compared")
                continue
            report.comparisons.append(judge(name, metric, b, c, thresholds))
    return report
