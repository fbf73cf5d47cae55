"""The case record: what one benchmark case saves in pytest-benchmark's ``extra_info``, typed and versioned.

A :class:`CaseRecord` holds ``knobs`` (what the case is), ``metrics`` (what was measured, each summarized over its
rounds by :func:`summarize`, the one rule every writer uses) and ``machine`` (what it ran on and how), keyed by
:mod:`lfw.results.keys`. It is saved flat, as every reader knows it, plus ``schema_version``; a case without one is
version 0, read the same way. See docs/record.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Literal

from lfw.errors import LFWError
from lfw.results import keys as K
from lfw.results.keys import Section
from lfw.results.knobs import BY_KEY
from lfw.stats.variation import coefficient_of_variation

# Version 2: the knobs (lfw.results.knobs) in pytest-benchmark's params alone, the rest flat in extra_info.
# Version 1: the flat keys of lfw.results.keys, written through CaseRecord. Version 0: the same keys, no version.
SCHEMA_VERSION = 2
KNOBS_IN_PARAMS = 2  # the first version that keeps every knob in params, and only there

CV_DIGITS = 4

Kept = Literal["both", "summary", "rounds"]


def section_of(key: str) -> Section:
    """Where a key lives in a :class:`CaseRecord`: ``knobs`` (:mod:`lfw.results.knobs`), else the section
    :mod:`lfw.results.keys` declares it in.

    Raises:
        KeyError: a key declared in neither (one line: where to declare it).
    """
    if key in BY_KEY:
        return "knobs"
    if (found := K.facts(key)) is None:
        raise KeyError(f"record key {key!r} is not declared: declare it in lfw/results/keys.py")
    return found.section


def summarize(name: str, rounds: Sequence[float], *, cv: bool = False, kept: Kept = "both",
              digits: int | None = None) -> dict[str, Any]:
    """A metric over its rounds, as the record saves it: ``name`` the median (the maximum for a memory peak,
    :data:`~lfw.results.keys.PEAK_KEYS`), ``name_rounds`` every round's value, and with ``cv`` the coefficient
    of variation of the unrounded rounds (``name_cv``, 4 places).

    ``kept`` leaves out the per-round list (``"summary"``) or the summary (``"rounds"``); ``digits`` (default
    the key's in :mod:`lfw.results.keys`, else 6) is the rounding of both. Raises ValueError for no rounds.
    """
    if not rounds:
        raise ValueError(f"no rounds of {name} to summarize")
    places = digits if digits is not None else (found.digits if (found := K.facts(name)) else K.DEFAULT_DIGITS)
    out: dict[str, Any] = {}
    if kept != "rounds":
        out[name] = round(max(rounds) if name in K.PEAK_KEYS else median(rounds), places)
    if kept != "summary":
        out[K.rounds(name)] = [round(v, places) for v in rounds]
    if cv:
        out[f"{name}_cv"] = round(coefficient_of_variation(rounds), CV_DIGITS)
    return out


def schema_version(extra: Mapping[str, Any], where: str) -> int:
    """The schema a saved case was written with: 0 without ``schema_version`` (the older form, read as it is).

    Raises:
        LFWError: a version that is not an int from 0, or one newer than :data:`SCHEMA_VERSION` (one line,
            naming the version the case needs).
    """
    version = extra.get(K.SCHEMA_VERSION, 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise LFWError(f"{where}: {K.SCHEMA_VERSION} {version!r} is not a case record version (an int from 0)")
    if version > SCHEMA_VERSION:
        raise LFWError(f"{where} was saved with case record schema {version}; this lfw-bench reads schema "
                       f"{SCHEMA_VERSION} and older: read it with an lfw-bench that knows schema {version}")
    return version


@dataclass
class CaseRecord:
    """One case's record: ``knobs``, ``metrics`` and ``machine`` (see the module docstring), each keyed by
    :mod:`lfw.results.keys`; a key lives in exactly one of them (:func:`section_of`)."""

    knobs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_extra_info(cls, extra: Mapping[str, Any], where: str = "extra_info") -> CaseRecord:
        """The record of a saved ``extra_info`` (its version checked by :func:`schema_version`)."""
        record = cls(schema_version=schema_version(extra, where))
        return record.add({k: v for k, v in extra.items() if k != K.SCHEMA_VERSION})

    def add(self, values: Mapping[str, Any]) -> CaseRecord:
        """Put each value in its section (a later value replaces an earlier one); returns the record. Raises
        KeyError for a key :mod:`lfw.results.keys` does not declare (:func:`section_of`)."""
        for key, value in values.items():
            getattr(self, section_of(key))[key] = value
        return self

    def measure(self, name: str, rounds: Sequence[float], *, cv: bool = False, kept: Kept = "both",
                digits: int | None = None) -> CaseRecord:
        """Add metric ``name`` summarized over ``rounds`` (:func:`summarize`); returns the record."""
        return self.add(summarize(name, rounds, cv=cv, kept=kept, digits=digits))

    def drop(self, key: str) -> None:
        """Remove ``key`` wherever it is (absent: nothing to do)."""
        for section in (self.knobs, self.metrics, self.machine):
            section.pop(key, None)

    def get(self, key: str, default: Any = None) -> Any:
        return next((s[key] for s in (self.knobs, self.metrics, self.machine) if key in s), default)

    def __contains__(self, key: object) -> bool:
        return any(key in s for s in (self.knobs, self.metrics, self.machine))

    def as_extra_info(self) -> dict[str, Any]:
        """The flat ``extra_info`` pytest-benchmark saves: every section's keys and ``schema_version``."""
        return {**self.metrics, **self.machine, **self.knobs, K.SCHEMA_VERSION: self.schema_version}
