"""Read and check pytest-benchmark JSON: the only input of the report.

The report needs more than pytest-benchmark's own summary: error bars come from the per-round timings
(``stats.data``, saved only with ``--benchmark-save-data``) and from the per-round lists that
:func:`lfw.measure.summary.summarize` puts in ``extra_info``. A file without them would give charts without
error bars, which look precise and are not, so it is refused with a one-line error naming the fix.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lfw.errors import LFWError

AUTOSAVE_NAME = re.compile(r"^(\d{4})_.*\.json$")
SAVE_DATA_HINT = "rerun with --benchmark-save-data (pytest.ini sets it; check addopts was not overridden)"


@dataclass(frozen=True)
class Case:
    """One benchmark case: its identity, its per-round seconds and everything ``run_case`` recorded."""

    name: str
    fullname: str
    group: str | None
    params: dict[str, Any]
    seconds: list[float]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The test id (``workers2-none``) when there is one: short and says what varies."""
        match = re.search(r"\[(.*)\]$", self.name)
        return match.group(1) if match else self.name

    def value(self, key: str, default: Any = None) -> Any:
        """A knob or fact of the case: its params first, then ``extra_info``, then the LoaderConfig dict.

        Knobs that a group does not vary are not params, but the config records them, so a chart can still
        say e.g. which batch size a pin-memory case used.
        """
        if key in self.params:
            return self.params[key]
        if key in self.extra:
            return self.extra[key]
        config = self.extra.get("config")
        if isinstance(config, dict) and key in config:
            return config[key]
        return default

    def rounds(self, key: str) -> list[float]:
        """Per-round values of a metric: ``<key>_rounds`` if saved, else the single summary value, else []."""
        if key in ("seconds", "wall_s"):
            return list(self.seconds)
        values = self.extra.get(f"{key}_rounds")
        if isinstance(values, list) and values:
            return [float(v) for v in values if isinstance(v, int | float)]
        if key == "images_per_s" and isinstance(self.extra.get("images"), int | float):
            return [self.extra["images"] / s for s in self.seconds if s > 0]
        single = self.extra.get(key)
        return [float(single)] if isinstance(single, int | float) and not isinstance(single, bool) else []

    def number(self, key: str) -> float | None:
        """A scalar from ``extra_info`` (None when absent or not a number)."""
        value = self.extra.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)


@dataclass(frozen=True)
class Run:
    """One saved pytest-benchmark run."""

    path: Path
    machine: dict[str, Any]
    cases: list[Case]
    datetime: str | None = None
    commit: dict[str, Any] = field(default_factory=dict)

    def group(self, name: str | None) -> list[Case]:
        """Cases of one benchmark group (``None``: the cases that have none)."""
        return [c for c in self.cases if c.group == name]

    @property
    def groups(self) -> list[str | None]:
        """Groups in the order they first appear (the order the suite ran them); None for ungrouped cases."""
        return list(dict.fromkeys(c.group for c in self.cases))


def _case(path: Path, raw: Any, position: int) -> Case:
    if not isinstance(raw, dict) or "name" not in raw or not isinstance(raw.get("stats"), dict):
        raise LFWError(f"{path}: benchmark #{position + 1} has no name or stats; is this pytest-benchmark JSON?")
    data = raw["stats"].get("data")
    if not isinstance(data, list) or not data:
        raise LFWError(f"{path}: no per-round data (stats.data) for {raw['name']}; {SAVE_DATA_HINT}")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in data):
        raise LFWError(f"{path}: stats.data of {raw['name']} holds something other than seconds per round")
    extra = raw.get("extra_info") if isinstance(raw.get("extra_info"), dict) else {}
    params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
    return Case(str(raw["name"]), str(raw.get("fullname", raw["name"])), raw.get("group"), params,
                [float(v) for v in data], extra)


def load_run(path: str | Path) -> Run:
    """Parse and check one run file; every problem is an :class:`LFWError` with a one-line message."""
    path = Path(path)
    if path.is_dir():
        path = latest_run(path)
    if not path.is_file():
        raise LFWError(f"no such file: {path}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise LFWError(f"{path} is not JSON (not even text); give a file written by pytest-benchmark") from None
    except json.JSONDecodeError as exc:
        raise LFWError(f"{path} is not JSON ({exc.msg} at line {exc.lineno}); "
                       "give a file written by pytest --benchmark-autosave or --benchmark-json") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise LFWError(f"{path} is not pytest-benchmark JSON: no 'benchmarks' list")
    if not isinstance(doc.get("machine_info"), dict):
        raise LFWError(f"{path} is not pytest-benchmark JSON: no 'machine_info'")
    if not doc["benchmarks"]:
        raise LFWError(f"{path} holds no benchmark results (all skipped, or run with --benchmark-disable?)")
    cases = [_case(path, raw, i) for i, raw in enumerate(doc["benchmarks"])]
    commit = doc.get("commit_info") if isinstance(doc.get("commit_info"), dict) else {}
    return Run(path, doc["machine_info"], cases, doc.get("datetime"), commit)


def latest_run(storage: str | Path = ".benchmarks") -> Path:
    """The newest autosaved run (``NNNN_*.json``) anywhere under ``storage``, by modification time.

    pytest-benchmark numbers runs per machine folder, so numbers from two folders do not compare; the
    modification time does, with the number breaking ties.
    """
    storage = Path(storage)
    found = [p for p in storage.rglob("*.json") if AUTOSAVE_NAME.match(p.name)] if storage.is_dir() else []
    if not found:
        raise LFWError(f"no saved runs under {storage}/ (run `make bench`, or pytest benchmarks "
                       "--benchmark-autosave); or name a RUN.json")
    return max(found, key=lambda p: (p.stat().st_mtime, p.name))
