"""The history store: one compact JSON line per saved run, in ``<store>/<runner class>.jsonl``, append-only.

Each line holds, per case, the median over rounds of what the gate judges (:func:`judged_rounds`), and what places
the run; appending a run already present changes nothing. The line's fields: docs/history.md, "The store". A folder
of autosaved runs (``.benchmarks/``) is a history too: :func:`load_history` reads either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from statistics import median
from typing import Any

from lfw.cli.saving import append_atomic
from lfw.errors import LFWError
from lfw.gate.metrics import JUDGED, Metric, group_excludes, reference_group, too_few_rounds
from lfw.gate.verdict import file_sha256
from lfw.results import AUTOSAVE_NAME, Run, load_run
from lfw.results import keys as K

SCHEMA = 1
RUNNER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SIGNIFICANT_DIGITS = 7  # counts repeat within 0.06%: 7 digits keep every step and keep lines short


@dataclass(frozen=True)
class HistoryRecord:
    """One run in the history: where it sits (commit, date, machine, counted stack) and its judged figures;
    ``cases`` maps a case key (``cost/none``) to ``{metric key: median over rounds}``, a metric not recorded absent."""

    runner: str
    commit: str
    commit_time: str | None
    dirty: bool
    date: str
    run: str  # what identifies the run beside its commit: its datetime, else a hash of its file
    cpu: str | None
    usable_cores: int | None
    stack: Mapping[str, str | None]
    cases: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # Reference rows (reference_figures): shown with the versions they ran at, never judged; absent from older lines.
    references: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)

    @property
    def identity(self) -> tuple[str, str]:
        """(commit, run): a record with the same identity is the same run."""
        return self.commit, self.run

    @property
    def short(self) -> str:
        """The commit's first 10 hex digits, ``*`` appended when the tree was dirty (not what the commit holds)."""
        return self.commit[:10] + ("*" if self.dirty else "")

    def to_dict(self) -> dict[str, Any]:
        return {"v": SCHEMA, "runner": self.runner,
                "commit": {"id": self.commit, "time": self.commit_time, "dirty": self.dirty},
                "date": self.date, "run": self.run,
                "machine": {"cpu": self.cpu, "usable_cores": self.usable_cores},
                "stack": dict(self.stack), "cases": {k: dict(v) for k, v in self.cases.items()},
                **({"references": {k: dict(v) for k, v in self.references.items()}, "versions": dict(self.versions)}
                   if self.references else {})}

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> HistoryRecord:
        """Check one stored line; every problem is one :class:`LFWError` naming ``where`` (file:line)."""
        try:
            if raw["v"] != SCHEMA:
                raise LFWError(f"{where}: history schema {raw['v']!r}, this lfw-bench reads {SCHEMA}")
            commit, machine = raw["commit"], raw["machine"]
            cases = {str(key): {str(m): float(v) for m, v in figures.items()} for key, figures in raw["cases"].items()}
            references = {str(key): {str(m): float(v) for m, v in figures.items()}
                          for key, figures in raw.get("references", {}).items()}
            return cls(str(raw["runner"]), str(commit["id"]), commit.get("time"), bool(commit.get("dirty", False)),
                       str(raw["date"]), str(raw["run"]), machine.get("cpu"), machine.get("usable_cores"),
                       dict(raw.get("stack", {})), cases, references,
                       {str(k): str(v) for k, v in raw.get("versions", {}).items()})
        except (KeyError, TypeError, AttributeError, ValueError):
            raise LFWError(f"{where}: not a history record (commit, date, run, machine and cases expected); "
                           "history lines are written by python -m lfw.history append") from None


def runner_of(run: Run) -> str:
    """The run's runner class, as :func:`lfw.measure.machine.runner_class` named it when the run was saved:
    ``machine_info["runner_class"]``; for a run saved without it, ``gpu`` or ``cpu-<usable cores>core``."""
    recorded = run.machine.get("runner_class")
    if isinstance(recorded, str) and recorded:
        return recorded
    if run.machine.get("cuda_available") is True:
        return "gpu"
    cpu = run.machine.get("cpu")
    cores = run.machine.get(K.USABLE_CORES) or (cpu.get("count") if isinstance(cpu, Mapping) else None)
    if isinstance(cores, int) and cores > 0:
        return f"cpu-{cores}core"
    raise LFWError(f"{run.path}: cannot tell the runner class (no runner_class, usable_cores or cpu count in "
                   "machine_info); name it with --runner")


def profile_suffix(run: Run) -> str:
    """``-full`` or ``-smoke`` for a run of another profile than ``quick`` (its figures make a series of their
    own); ``""`` for the quick profile and for runs that do not say."""
    profile = run.selection.profile if run.selection is not None else run.machine.get("bench_profile")
    return f"-{profile}" if isinstance(profile, str) and profile and profile != "quick" else ""


def _compact(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def judged_rounds(run: Run) -> Iterator[tuple[str, Metric, list[float]]]:
    """(case key, metric, per-round values) of each :data:`~lfw.gate.metrics.JUDGED` metric a case records and the
    gate judges: positive controls, metrics the gate leaves out for a group, and wall clock with too few rounds
    skipped, and the reference groups' cases (:func:`reference_figures` keeps those)."""
    for case in run.cases:
        if case.value(K.POSITIVE_CONTROL) is True or reference_group(case.group) is not None:
            continue
        for metric in JUDGED:
            values = case.rounds(metric.key)
            if not values or group_excludes(case.group, metric) or too_few_rounds(metric, len(values)):
                continue
            yield case.key, metric, [float(v) for v in values]


def bencher_metrics(run: Run) -> dict[str, dict[str, dict[str, float]]]:
    """The run's judged metrics in Bencher's Metric Format (``python -m lfw.history export``): case key -> metric
    key -> the median over rounds (``value``) and the smallest and largest round; docs/history.md, "Reading the
    results from another tool"."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for key, metric, values in judged_rounds(run):
        out.setdefault(key, {})[metric.key] = {"value": float(median(values)), "lower_value": min(values),
                                               "upper_value": max(values)}
    return out


def judged_figures(run: Run) -> dict[str, dict[str, float]]:
    """Per case key, the median over rounds of each metric :func:`judged_rounds` yields (what a history line keeps)."""
    return {key: {metric: _compact(figure["value"]) for metric, figure in measures.items()}
            for key, measures in bencher_metrics(run).items()}


REFERENCE_METRICS = (K.IMAGES_PER_S, K.CPU_MS_PER_IMAGE, K.PEER_PSS_MIB)  # what a reference row keeps


def reference_figures(run: Run) -> dict[str, dict[str, float]]:
    """Per case of a reference group (:data:`lfw.gate.metrics.REFERENCE_GROUPS`), the figures a history keeps to
    show its changes across versions: images/s, CPU ms per image and the tree's PSS measured alone. Never judged."""
    out: dict[str, dict[str, float]] = {}
    for case in run.cases:
        if reference_group(case.group) is None:
            continue
        figures = {key: _compact(float(v)) for key in REFERENCE_METRICS if (v := case.number(key)) is not None}
        if figures:
            out[case.key] = figures
    return out


def history_record(run: Run, runner: str | None = None) -> HistoryRecord:
    """The history record of a loaded run (``runner`` overrides its runner class). Raises :class:`LFWError` for a
    run without a commit id, a bad ``runner`` name, a runner class that cannot be told, or an incomplete run."""
    if run.stopped_early:
        raise LFWError(f"{run.path} is an incomplete run ({run.stopped_early}); it is not put in the history")
    runner = (runner or runner_of(run)) + profile_suffix(run)
    if not RUNNER_NAME.match(runner):
        raise LFWError(f"runner class {runner!r} is not a file name (letters, digits, '.', '_', '-')")
    commit = run.commit.get("id")
    if not isinstance(commit, str) or not commit:
        raise LFWError(f"{run.path}: no commit_info.id; a history places runs on commits, so save runs from a git "
                       "checkout")
    cpu = run.machine.get("cpu")
    brand = run.machine.get("cpu_model") or (cpu.get("brand_raw") if isinstance(cpu, Mapping) else None)
    cores = run.machine.get(K.USABLE_CORES)
    identity = str(run.datetime) if run.datetime else "sha256:" + file_sha256(run.path)[:16]  # same file, same run
    return HistoryRecord(runner, commit, run.commit.get("time"), bool(run.commit.get("dirty", False)),
                         str(run.datetime or ""), identity, brand,
                         cores if isinstance(cores, int) else None,
                         {key: run.machine.get(key) for key in K.COUNTED_STACK}, judged_figures(run),
                         reference_figures(run), {str(k): str(v) for k, v in (run.machine.get("peers") or {}).items()})


def read_store(path: Path) -> list[HistoryRecord]:
    """Every record of one ``<runner>.jsonl`` file, in file order (a missing file is an empty history)."""
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LFWError(f"{path}:{number}: corrupt history line ({exc.msg}); the store is append-only, so "
                           "restore the file from its branch") from None
        records.append(HistoryRecord.from_dict(raw, f"{path}:{number}"))
    return records


@dataclass(frozen=True)
class Appended:
    """What :func:`append_run` did: the file, the record, and whether it was new (False: already present)."""

    path: Path
    record: HistoryRecord
    appended: bool


def append_run(run_path: Path, store: Path, runner: str | None = None) -> Appended:
    """Append the record of the run at ``run_path`` to ``store/<runner class>.jsonl`` unless that commit and run
    are there already. The file is only ever appended to: one line, written whole, ending in a newline."""
    record = history_record(load_run(run_path), runner)
    path = store / f"{record.runner}.jsonl"
    if any(r.identity == record.identity for r in read_store(path)):
        return Appended(path, record, False)
    append_atomic(path, json.dumps(record.to_dict(), separators=(",", ":")) + "\n")
    return Appended(path, record, True)


def _moment(text: str | None) -> datetime | None:
    try:
        moment = datetime.fromisoformat((text or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def chronological(records: Iterable[HistoryRecord]) -> list[HistoryRecord]:
    """Records by commit time, then run date (a commit measured twice keeps both runs, in the order they ran);
    records without a readable commit time sort by their run date."""
    floor = datetime.min.replace(tzinfo=timezone.utc)

    def key(r: HistoryRecord) -> tuple[datetime, datetime]:
        run_date = _moment(r.date) or floor
        return _moment(r.commit_time) or run_date, run_date

    return sorted(records, key=key)


@dataclass
class History:
    """Runs per runner class, each list chronological, duplicates (same commit and run) dropped; ``notes`` says
    what was read and what was left out, and why."""

    source: Path
    runners: dict[str, list[HistoryRecord]]
    notes: list[str] = field(default_factory=list)


def load_history(source: Path) -> History:
    """A history from a store folder (``*.jsonl``), one ``<runner>.jsonl`` file, or a folder of autosaved runs
    (``NNNN_*.json`` anywhere under it). An autosaved run that cannot be used is left out and named in ``notes``;
    a corrupt store line, a missing source or one without runs is an :class:`LFWError`."""
    notes: list[str] = []
    if source.is_file() and source.suffix == ".jsonl":
        records = read_store(source)
        what = f"history file {source}"
    elif source.is_dir() and (files := sorted(source.glob("*.jsonl"))):
        records = [r for f in files for r in read_store(f)]
        what = f"history store {source} ({', '.join(f.name for f in files)})"
    elif source.is_dir():
        saved = sorted(p for p in source.rglob("*.json") if AUTOSAVE_NAME.match(p.name))
        records = []
        for path in saved:
            try:
                records.append(history_record(load_run(path)))
            except LFWError as exc:
                notes.append(f"left out {path}: {exc}")
        what = f"{len(saved)} autosaved runs under {source}"
    elif not source.exists():
        raise LFWError(f"history source not found: {source}")
    else:
        raise LFWError(f"{source} is not a history: name a store folder (*.jsonl), one <runner>.jsonl file, or a "
                       "folder of autosaved runs (.benchmarks/)")
    unique: dict[tuple[str, str, str], HistoryRecord] = {}
    for r in records:
        unique.setdefault((r.runner, *r.identity), r)
    duplicates = len(records) - len(unique)
    if not unique:
        raise LFWError(f"no runs in {what}: append runs with python -m lfw.history append RUN.json --store DIR")
    notes.insert(0, f"read {what}" + (f"; {duplicates} duplicate runs (same commit and date) counted once"
                                      if duplicates else ""))
    runners: dict[str, list[HistoryRecord]] = {}
    for r in unique.values():
        runners.setdefault(r.runner, []).append(r)
    return History(source, {name: chronological(rs) for name, rs in sorted(runners.items())}, notes)
