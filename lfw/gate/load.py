"""Read pytest-benchmark JSON and refuse, in one line, anything the gate cannot judge.

The gate decides from per-round values, so a file is usable only if it is a pytest-benchmark 5.x run
(``machine_info`` plus a list of ``benchmarks``) and every case kept its rounds (``stats.data``, written by
``--benchmark-save-data`` or ``--benchmark-json``). A summary-only file would force a decision from two
medians with no idea of the noise, which is exactly what the gate exists to avoid, so it is an error (exit 2),
not a silent downgrade.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lfw.errors import LFWError

Run = dict[str, Any]
Case = dict[str, Any]


def load_run(path: str | Path) -> Run:
    """The parsed run in ``path``, checked to be pytest-benchmark JSON with per-round data.

    Raises:
        LFWError: missing or unreadable file, invalid JSON, not a pytest-benchmark run, no cases, or a case
            without per-round timings.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LFWError(f"benchmark file not found: {path}") from None
    except IsADirectoryError:
        raise LFWError(f"benchmark file is a folder: {path}; pass one pytest-benchmark JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LFWError(f"cannot read benchmark file {path}: {exc}") from None
    try:
        run = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LFWError(f"corrupt benchmark file {path}: invalid JSON at line {exc.lineno} ({exc.msg})") from None
    check_run(run, str(path))
    return run


def check_run(run: Any, where: str) -> None:
    """Raise :class:`LFWError` unless ``run`` is a pytest-benchmark run whose every case has per-round data."""
    if not isinstance(run, dict) or not isinstance(run.get("benchmarks"), list) or "machine_info" not in run:
        raise LFWError(f"not a pytest-benchmark file: {where} has no 'machine_info' and 'benchmarks' list; "
                       "make one with `pytest benchmarks --benchmark-json=FILE`")
    if not run["benchmarks"]:
        raise LFWError(f"no benchmark cases in {where}: every case was skipped or deselected")
    for case in run["benchmarks"]:
        if not isinstance(case, dict) or "fullname" not in case or not isinstance(case.get("stats"), dict):
            raise LFWError(f"not a pytest-benchmark file: {where} has a case without 'fullname' and 'stats'")
        data = case["stats"].get("data")
        if not isinstance(data, list) or not data:
            raise LFWError(f"no per-round data in {where} (case {case['fullname']}): save runs with "
                           "--benchmark-save-data or --benchmark-json so the gate can judge noise")


def cases_by_name(run: Run) -> dict[str, Case]:
    """Cases keyed by ``fullname`` (file::test[params]), the one name that is unique across files."""
    return {case["fullname"]: case for case in run["benchmarks"]}


def rounds_of(case: Case, key: str) -> list[float] | None:
    """Per-round values of ``extra_info[key]``: ``<key>_rounds`` if saved, else the single value, else None.

    A single value (a case summarized without rounds) still counts, as one round: the decision rule then
    falls back to effect size alone and says so.
    """
    info = case.get("extra_info") or {}
    values = info.get(f"{key}_rounds")
    if isinstance(values, list) and values and all(isinstance(v, int | float) for v in values):
        return [float(v) for v in values]
    value = info.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [float(value)]
    return None
