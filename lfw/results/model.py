"""The one model of saved results: pytest-benchmark JSON, read and checked in one place, used by every tool.

A file is usable only if it is a pytest-benchmark run whose every case kept its rounds (``stats.data``); any other
is refused in one line naming the fix. A case's ``extra_info`` is a :class:`~lfw.results.record.CaseRecord` (no
``schema_version``: version 0, read the same; a newer one is refused). :func:`write_run` writes the same format.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard, TypeVar, cast, overload

from lfw.cli.saving import write_atomic
from lfw.errors import LFWError
from lfw.results import keys as K
from lfw.results.knobs import BY_KEY, Knob, legacy_knob, saved_form
from lfw.results.record import KNOBS_IN_PARAMS, schema_version

AUTOSAVE_NAME = re.compile(r"^(\d{4})_.*\.json$")
T = TypeVar("T")
SAVE_DATA_HINT = "save runs with --benchmark-save-data or --benchmark-json (pytest.ini sets the first)"


def short_name(fullname: str) -> str:
    """``test_x[p]``: a full name without its file, as pytest-benchmark's own tables show it."""
    return fullname.rpartition("::")[2] or fullname


def case_key(group: str | None, name: str) -> str:
    """What identifies a case across runs, whatever its file: its group and test id
    (``workers-transform/workers2-none``); the one spelling of a run's selection and of every reader."""
    match = re.search(r"\[(.*)\]$", name)
    return f"{group or '-'}/{match.group(1) if match else name}"


def _is_number(value: object) -> TypeGuard[int | float]:
    """A finite int or float, not a bool (``True`` is an int to Python, never a measurement here)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Case:
    """One benchmark case: its identity, its per-round seconds and everything the suite recorded."""

    name: str
    fullname: str
    group: str | None
    params: Mapping[str, Any]
    seconds: tuple[float, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The test id (``workers2-none``) when there is one: short and says what varies."""
        match = re.search(r"\[(.*)\]$", self.name)
        return match.group(1) if match else self.name

    @property
    def short_name(self) -> str:
        return short_name(self.fullname)

    @property
    def key(self) -> str:
        """Group and test id: the identity the gate matches cases on (:func:`case_key`)."""
        return case_key(self.group, self.name)

    @property
    def schema_version(self) -> int:
        """The case record schema it was saved with (:mod:`lfw.results.record`): 0 for the older form without one."""
        return schema_version(self.extra, self.name)

    @overload
    def knob(self, knob: Knob[T]) -> T | None: ...

    @overload
    def knob(self, knob: Knob[T], default: T) -> T: ...

    def knob(self, knob: Knob[T], default: T | None = None) -> T | None:
        """A knob of the case (:mod:`lfw.results.knobs`), ``default`` where it has none: from schema 2 its
        ``params`` alone, before where its version kept it (:func:`~lfw.results.knobs.legacy_knob`)."""
        if self.schema_version >= KNOBS_IN_PARAMS:
            found = self.params.get(knob.key)
        else:
            found = legacy_knob(self.params, self.extra, knob.key)
        return default if found is None else cast("T", found)

    def value(self, key: str, default: Any = None) -> Any:
        """A knob (:meth:`knob`, by its key) or another fact of the case's ``extra_info`` (``default`` where it
        has none)."""
        found = self.knob(BY_KEY[key]) if key in BY_KEY else self.extra.get(key)
        return default if found is None else found

    def rounds(self, key: str) -> list[float]:
        """Per-round values of a metric: ``<key>_rounds`` if saved, else the single value, else ``[]``
        (``seconds``: pytest-benchmark's own per-round timing)."""
        if key == "seconds":
            return list(self.seconds)
        values = self.extra.get(f"{key}_rounds")
        if isinstance(values, list) and values and all(_is_number(v) for v in values):
            return [float(v) for v in values]
        single = self.number(key)
        return [single] if single is not None else []

    def number(self, key: str) -> float | None:
        """A finite scalar from ``extra_info`` (None when absent or not a number)."""
        value = self.extra.get(key)
        return float(value) if _is_number(value) else None


Status = Literal["passed", "failed", "skipped", "narrowed"]


@dataclass(frozen=True)
class Outcome:
    """How one selected case ended: ``narrowed`` is a skip the run chose (profile, layer, this machine's cores
    or devices), ``skipped`` any other skip (a tool or package missing), ``failed`` an error or a failure."""

    status: Status
    reason: str = ""
    limit: bool = False  # narrowed because it does not fit this machine's /dev/shm, open files or memory


@dataclass(frozen=True)
class Selection:
    """What a run was asked to run, saved beside its cases (top-level ``lfw_selection``): ``outcomes``, by
    :func:`case_key`, every selected case (``-k``/``-m`` applied) that ended; ``not_run`` those that never ran because
    the run stopped first (``stopped`` says why: an interrupt, a signal, ``-x``); ``deselected`` the keys ``-k``/``-m``
    left out. A case in none of them was not collected (renamed, removed, or in a file the run did not collect)."""

    keyword: str
    markexpr: str
    profile: str | None
    layers: tuple[str, ...]
    outcomes: Mapping[str, Outcome]
    deselected: frozenset[str]
    not_run: tuple[str, ...] = ()
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        cases = {k: {"outcome": o.status, "reason": o.reason, **({"limit": True} if o.limit else {})}
                 for k, o in self.outcomes.items()}
        return {"keyword": self.keyword, "markexpr": self.markexpr, "profile": self.profile,
                "layers": list(self.layers), "deselected": sorted(self.deselected), "cases": cases,
                "not_run": list(self.not_run), "stopped": self.stopped, "incomplete": self.incomplete}

    @property
    def failed(self) -> list[str]:
        return [k for k, o in self.outcomes.items() if o.status == "failed"]

    @property
    def unfinished_groups(self) -> list[str]:
        """Groups with a case that failed or never ran: their comparisons rest on part of the group."""
        return list(dict.fromkeys(k.partition("/")[0] for k in [*self.failed, *self.not_run]))

    @property
    def incomplete(self) -> str | None:
        """Why the run is not whole, in one line (None when every selected case ended and none failed)."""
        if not (self.stopped or self.not_run or self.failed):
            return None
        total = len(self.outcomes) + len(self.not_run)
        ended = sum(o.status != "failed" for o in self.outcomes.values())
        parts = [f"{self.stopped}: " if self.stopped else "", f"{ended} of {total} cases ended"]
        if self.failed:
            parts.append(f", {len(self.failed)} failed")
        if self.not_run:
            parts.append(f", {len(self.not_run)} never ran")
        return "".join(parts) + f" (groups not finished: {', '.join(self.unfinished_groups)})"


def parse_selection(raw: Any, where: str) -> Selection | None:
    """The run's :class:`Selection`, None for a run saved without one (an older run, or not by the suite)."""
    if raw is None:
        return None
    try:
        outcomes = {str(k): Outcome(v["outcome"], str(v.get("reason", "")), bool(v.get("limit", False)))
                    for k, v in raw["cases"].items()}
        bad = [k for k, o in outcomes.items() if o.status not in ("passed", "failed", "skipped", "narrowed")]
        if bad:
            raise ValueError(bad[0])
        stopped = raw.get("stopped")
        return Selection(str(raw.get("keyword", "")), str(raw.get("markexpr", "")), raw.get("profile"),
                         tuple(raw.get("layers", ())), outcomes, frozenset(map(str, raw.get("deselected", ()))),
                         tuple(map(str, raw.get("not_run", ()))), str(stopped) if stopped else None)
    except (KeyError, TypeError, AttributeError, ValueError):
        raise LFWError(f"{where}: {K.SELECTION} is not what the suite writes (a mapping with 'cases' of "
                       "outcomes); remove it or save the run again") from None


@dataclass(frozen=True)
class Run:
    """One saved pytest-benchmark run."""

    path: Path
    machine: Mapping[str, Any]
    cases: tuple[Case, ...]
    datetime: str | None = None
    commit: Mapping[str, Any] = field(default_factory=dict)
    selection: Selection | None = None

    @property
    def incomplete(self) -> str | None:
        """Why the run is not whole (interrupted, a case failed or never ran), None for a whole run."""
        return self.selection.incomplete if self.selection is not None else None

    @property
    def stopped_early(self) -> str | None:
        """Why the run stopped before every selected case ran (an interrupt, a signal, ``-x``), else None: such
        a run is not judged by the gate nor put in the history."""
        s = self.selection
        return s.incomplete if s is not None and (s.stopped or s.not_run) else None

    @property
    def skipped_images(self) -> tuple[int, tuple[str, ...]]:
        """How many unreadable images the run left out (the skip option, :mod:`lfw.data.screen`), and the first
        few by name; (0, ()) for a run that read every image."""
        count, names = self.machine.get(K.SKIPPED_IMAGES, 0), self.machine.get(K.SKIPPED_IMAGE_FILES, ())
        return (int(count) if _is_number(count) else 0), tuple(map(str, names if isinstance(names, list) else ()))

    def group(self, name: str | None) -> list[Case]:
        """Cases of one benchmark group (``None``: the cases that have none)."""
        return [c for c in self.cases if c.group == name]

    @property
    def groups(self) -> list[str | None]:
        """Groups in the order they first appear (the order the suite ran them)."""
        return list(dict.fromkeys(c.group for c in self.cases))

    def by_key(self) -> dict[str, Case]:
        """Cases keyed by :attr:`Case.key` (group and test id), unique within a run (checked on loading)."""
        return {c.key: c for c in self.cases}


@dataclass(frozen=True)
class Pairing:
    """The cases of a baseline and a current run matched on :attr:`Case.key`, each list in its run's order."""

    pairs: tuple[tuple[Case, Case], ...]  # (baseline, current), in the current run's order
    new: tuple[Case, ...]  # only in the current run
    missing: tuple[Case, ...]  # only in the baseline


def pair_cases(baseline: Run, current: Run) -> Pairing:
    """Match two runs' cases on group and test id, not on file: a benchmark moved to another file is the same
    case. The one pairing of the gate and the report, so they never disagree about which cases correspond."""
    base_by_key, current_keys = baseline.by_key(), {c.key for c in current.cases}
    return Pairing(tuple((base_by_key[c.key], c) for c in current.cases if c.key in base_by_key),
                   tuple(c for c in current.cases if c.key not in base_by_key),
                   tuple(c for c in baseline.cases if c.key not in current_keys))


def _case(where: str, raw: Any, position: int) -> Case:
    if not isinstance(raw, Mapping) or "name" not in raw or not isinstance(raw.get("stats"), Mapping):
        raise LFWError(f"not a pytest-benchmark file: {where} case #{position + 1} has no name or stats")
    data = raw["stats"].get("data")
    if not isinstance(data, list) or not data:
        raise LFWError(f"no per-round data in {where} (case {raw['name']}): {SAVE_DATA_HINT}")
    if not all(_is_number(v) for v in data):
        raise LFWError(f"{where}: stats.data of {raw['name']} holds something other than seconds per round")
    extra = {} if raw.get("extra_info") is None else raw["extra_info"]
    if not isinstance(extra, Mapping):
        raise LFWError(f"{where}: extra_info of {raw['name']} is not a mapping; is this pytest-benchmark JSON?")
    schema_version(extra, f"{where} (case {raw['name']})")  # a newer record than this code reads is refused
    params = raw.get("params") or {}
    if not isinstance(params, Mapping):
        raise LFWError(f"{where}: params of {raw['name']} is not a mapping; is this pytest-benchmark JSON?")
    return Case(str(raw["name"]), str(raw.get("fullname") or raw["name"]), raw.get("group"), dict(params),
                tuple(float(v) for v in data), dict(extra))


def parse_run(doc: Any, where: str, path: Path | None = None) -> Run:
    """Check a parsed document and build its :class:`Run`; every problem is one :class:`LFWError` line."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("benchmarks"), list):
        raise LFWError(f"not a pytest-benchmark file: {where} has no 'benchmarks' list; "
                       "make one with `pytest benchmarks --benchmark-json=FILE`")
    if not isinstance(doc.get("machine_info"), Mapping):
        raise LFWError(f"not a pytest-benchmark file: {where} has no 'machine_info' mapping")
    if not doc["benchmarks"]:
        raise LFWError(f"no benchmark cases in {where}: every case was skipped, deselected or run with "
                       "--benchmark-disable")
    cases = tuple(_case(where, raw, i) for i, raw in enumerate(doc["benchmarks"]))
    for ids, problem in (([c.fullname for c in cases], "case {} twice; give one run per file"),
                         ([c.key for c in cases], "two cases with group and id {}; give every case of a group its "
                                                  "own id")):
        duplicate = next((i for i, n in Counter(ids).items() if n > 1), None)
        if duplicate is not None:
            raise LFWError(f"{where} holds {problem.format(duplicate)}")
    commit = doc.get("commit_info")
    return Run(path or Path(where), dict(doc["machine_info"]), cases, doc.get("datetime"),
               dict(commit) if isinstance(commit, Mapping) else {},
               parse_selection(doc.get(K.SELECTION), where))


def load_run(path: str | Path) -> Run:
    """Parse and check one run file (a folder means its newest autosaved run).

    Raises:
        LFWError: missing or unreadable file, invalid JSON, not a pytest-benchmark run, no cases, a case
            without per-round data, a field that is not what pytest-benchmark writes, a case saved with a record
            schema newer than :data:`lfw.results.record.SCHEMA_VERSION`.
    """
    path = Path(path)
    if path.is_dir():
        path = latest_run(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LFWError(f"benchmark file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LFWError(f"cannot read benchmark file {path}: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LFWError(f"corrupt benchmark file {path}: invalid JSON at line {exc.lineno} ({exc.msg})") from None
    return parse_run(doc, str(path), path)


def latest_run(storage: str | Path = ".benchmarks") -> Path:
    """The newest autosaved run (``NNNN_*.json``) anywhere under ``storage``: by modification time (run numbers
    count per machine folder), then name."""
    storage = Path(storage)
    found = [p for p in storage.rglob("*.json") if AUTOSAVE_NAME.match(p.name)] if storage.is_dir() else []
    if not found:
        raise LFWError(f"no saved runs under {storage}/ (run `make bench`, or pytest benchmarks "
                       "--benchmark-autosave); or name a RUN.json")
    return max(found, key=lambda p: (p.stat().st_mtime, p.name))


def case_record(*, name: str, fullname: str, group: str | None, params: Mapping[str, Any],
                seconds: Sequence[float], extra: Mapping[str, Any]) -> dict[str, Any]:
    """One benchmark entry in pytest-benchmark's own layout, stats computed by pytest-benchmark's ``Stats``."""
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for value in seconds:
        stats.update(float(value))
    param = re.search(r"\[(.*)\]$", name)
    params, extra = saved_form(params, extra)  # the knobs in params, once (lfw.results.knobs)
    return {"group": group, "name": name, "fullname": fullname, "params": params,
            "param": param.group(1) if param else None, "extra_info": extra,
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": len(seconds),
                        "max_time": 0, "min_time": 0, "warmup": False},
            "stats": {**stats.as_dict(), "iterations": 1, "data": [float(v) for v in seconds]}}


def write_run(path: Path, records: Iterable[Mapping[str, Any]], *, machine: Mapping[str, Any],
              commit: Mapping[str, Any], datetime: str) -> Path:
    """Write a run that pytest-benchmark (``compare``, ``list``) and :func:`load_run` both read; refuses
    (:class:`LFWError`) to overwrite one."""
    from pytest_benchmark import __version__

    if path.exists():
        raise LFWError(f"refusing to overwrite {path}; choose another output folder")
    doc = {"machine_info": dict(machine), "commit_info": dict(commit), "benchmarks": list(records),
           "datetime": datetime, "version": __version__}
    parse_run(doc, str(path), path)  # what lfw-bench writes, it can read
    return write_atomic(path, json.dumps(doc, indent=2) + "\n", exclusive=True)
