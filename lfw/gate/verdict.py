"""The gate's verdict of one run as data: computed once, written as ``verdict.json``, rendered everywhere
(fields: docs/gating.md, "Where the verdict is read"). Imports no comparison code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from lfw.cli.saving import write_atomic
from lfw.errors import LFWError

SCHEMA_VERSION = 1
TWO_FILE, AB = "two-file", "ab"
VERDICT_PATH = Path("reports") / "verdict.json"
AB_VERDICT_PATH = Path("reports") / "verdict-ab.json"
LABELS = ("regressed", "improved", "unchanged", "not compared", "new", "missing", "inconclusive")
MAKE_ONE = "python -m lfw.gate BASE.json CURRENT.json"  # the command that writes a two-file verdict


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class RunIdentity:
    """Which run was judged: path, SHA-256 of its bytes, case count, and where recorded commit and runner class."""

    path: str
    sha256: str
    cases: int
    commit: str | None = None
    dirty: bool = False
    runner_class: str | None = None


@dataclass(frozen=True)
class Row:
    """One comparison of a metric of a case. ``change``: relative (+0.12) for ``kind`` "relative", else current -
    baseline. A/B rows add the ratio's interval, the pairs and Holm's p; ``inconclusive``: neither way shown."""

    case: str
    metric_key: str
    metric_label: str
    unit: str
    kind: str  # relative, absolute
    family: str  # the threshold family (lfw.gate.metrics.Family): cost, throughput, ttfb, memory, ...
    baseline: float
    current: float
    change: float
    rule: str
    regressed: bool
    improved: bool = False
    improvement_rule: str = ""
    interval: str = ""
    pairs: int | None = None
    p_holm: float | None = None
    inconclusive: bool = False


@dataclass(frozen=True)
class CaseVerdict:
    """One case's label (:data:`LABELS`), its throughput change (None: not compared) and a one-line reason."""

    case: str  # the case's fullname (file::test[params])
    label: str
    change: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class CaseNote:
    """A baseline case the run does not hold, and why."""

    case: str
    why: str


@dataclass(frozen=True)
class LayerRow:
    """One row of the layer table."""

    layer: str
    judged: str
    comparisons: str
    why_not: str


@dataclass(frozen=True)
class RecommendationRow:
    """The recommended ``num_workers`` of one transform, with its evidence."""

    transform: str
    num_workers: str
    evidence: str


@dataclass(frozen=True)
class Verdict:
    """One gate run's verdict; ``error``: the command's own failure, ``setup``: what was measured or compared."""

    mode: str
    exit_code: int
    headline: str
    baseline: RunIdentity | None = None
    current: RunIdentity | None = None
    error: str | None = None
    setup: str = ""
    judged_by: str = ""
    comparisons: tuple[Row, ...] = ()
    cases: tuple[CaseVerdict, ...] = ()
    gaps: tuple[CaseNote, ...] = ()
    narrowed: tuple[CaseNote, ...] = ()
    new_cases: tuple[str, ...] = ()
    layers: tuple[LayerRow, ...] = ()
    unjudged: dict[str, str] = field(default_factory=dict)  # layer -> why it was not judged
    notes: tuple[str, ...] = ()
    machine_diffs: str = ""
    recommendation_group: str = ""
    recommendation: tuple[RecommendationRow, ...] = ()
    schema_version: int = SCHEMA_VERSION

    @property
    def regressions(self) -> list[Row]:
        return [r for r in self.comparisons if r.regressed]

    @property
    def improvements(self) -> list[Row]:
        return [r for r in self.comparisons if r.improved]

    @property
    def inconclusive(self) -> list[Row]:
        return [r for r in self.comparisons if r.inconclusive]

    def label_counts(self) -> dict[str, int]:
        """How many cases carry each label, in :data:`LABELS` order, labels no case carries left out."""
        counts = {label: sum(c.label == label for c in self.cases) for label in LABELS}
        return {label: n for label, n in counts.items() if n}

    def matches(self, current: Path, baseline: Path | None = None) -> bool:
        """Whether this verdict is about these run files (their SHA-256): ``current``, and ``baseline`` when given."""
        sides = [(self.current, current), *([(self.baseline, baseline)] if baseline is not None else [])]
        return all(ident is not None and path.is_file() and ident.sha256 == file_sha256(path) for ident, path in sides)

    def write(self, path: Path) -> Path:
        """Write the verdict as JSON to ``path`` (folders created) and return the path."""
        return write_atomic(path, json.dumps(asdict(self), indent=1) + "\n")


def describe(row: Row) -> str:
    """``efficiency 0.41 -> 0.29 (-29.3%), minimum effect -35%``: one comparison in words."""
    change = f"{row.change:+.1%}" if row.kind == "relative" else f"{row.change:+.2f}{row.unit}"
    return f"{row.metric_label} {row.baseline:,.4g} -> {row.current:,.4g} ({change}), minimum effect {row.rule}"


def case_verdicts(cases: Sequence[str], rows: Sequence[Row], new_cases: Sequence[str],
                  missing: Sequence[CaseNote]) -> list[CaseVerdict]:
    """One verdict per case of the current run (fullnames in run order), then one per ``missing`` case: new, not
    compared, regressed, inconclusive (A/B), improved (its throughput row) or unchanged; ``change``: throughput's."""
    by_case: dict[str, list[Row]] = {}
    for row in rows:
        by_case.setdefault(row.case, []).append(row)
    new, out = set(new_cases), []
    for case in cases:
        if case in new:
            out.append(CaseVerdict(case, "new", None, "not in the baseline"))
            continue
        mine = by_case.get(case)
        if not mine:
            out.append(CaseVerdict(case, "not compared", None, "no metric the gate compares"))
            continue
        throughput = next((r for r in mine if r.family == "throughput"), None)
        change = throughput.change if throughput is not None else None
        regressed, undecided = [r for r in mine if r.regressed], [r for r in mine if r.inconclusive]
        if regressed:
            label, shown = "regressed", regressed
        elif undecided:
            label, shown = "inconclusive", undecided
        else:
            improved = throughput is not None and throughput.improved
            label, shown = ("improved" if improved else "unchanged"), [throughput] if throughput else []
        detail = "; ".join(describe(r) for r in shown) or "no throughput compared"
        out.append(CaseVerdict(case, label, change, detail))
    return out + [CaseVerdict(m.case, "missing", None, m.why) for m in missing]


# The nested records of a verdict, by field: each read back as a tuple of its dataclass.
NESTED: dict[str, type[Any]] = {"comparisons": Row, "cases": CaseVerdict, "gaps": CaseNote, "narrowed": CaseNote,
                                "layers": LayerRow, "recommendation": RecommendationRow}


def verdict_from_dict(doc: dict[str, Any]) -> Verdict:
    """A :class:`Verdict` from its :func:`~dataclasses.asdict`; TypeError/KeyError on a missing or unknown field."""
    values = {f.name: doc[f.name] for f in fields(Verdict) if f.name in doc}
    values |= {name: tuple(cls(**item) for item in doc.get(name) or ()) for name, cls in NESTED.items()}
    values |= {side: RunIdentity(**doc[side]) if doc.get(side) else None for side in ("baseline", "current")}
    return Verdict(**values | {"exit_code": int(doc["exit_code"]), "schema_version": doc["schema_version"],
                               "new_cases": tuple(doc.get("new_cases") or ()), "notes": tuple(doc.get("notes") or ()),
                               "unjudged": dict(doc.get("unjudged") or {})})


def load_verdict(path: Path) -> Verdict:
    """Read a ``verdict.json``; one LFWError line when missing, not a verdict, or of another schema_version."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LFWError(f"{path}: no such verdict; {MAKE_ONE} --verdict-json {path} writes one") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LFWError(f"{path}: not a verdict file ({' '.join(str(exc).split())})") from None
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if version != SCHEMA_VERSION:
        raise LFWError(f"{path}: verdict schema_version {version!r}; this lfw-bench reads schema_version "
                       f"{SCHEMA_VERSION}: rerun the gate ({MAKE_ONE}) to write one")
    try:
        return verdict_from_dict(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise LFWError(f"{path}: not a verdict of schema_version {SCHEMA_VERSION} ({exc!r})") from None
