"""The case record: what one benchmark case saves in pytest-benchmark's ``extra_info``, typed and versioned.

A :class:`CaseRecord` holds ``knobs``, ``metrics`` (each summarized by :func:`summarize`) and ``machine``, each key
declared (:mod:`lfw.results.keys`, :mod:`lfw.results.knobs`), saved flat plus ``schema_version`` (docs/record.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Literal

from lfw.errors import LFWError
from lfw.results import keys as K
from lfw.results.knobs import BY_KEY
from lfw.stats.variation import coefficient_of_variation

# Version 2: the knobs (lfw.results.knobs) in pytest-benchmark's params alone, the rest flat in extra_info.
# Version 1: the flat keys of lfw.results.keys, written through CaseRecord. Version 0: the same keys, no version.
SCHEMA_VERSION = 2
KNOBS_IN_PARAMS = 2  # the first version that keeps every knob in params, and only there

Kept = Literal["both", "summary", "rounds"]


def section_of(key: str) -> K.Section:
    """Where a key lives: ``knobs`` for a knob (:mod:`lfw.results.knobs`), else its declaration's section
    (:mod:`lfw.results.keys`). Raises KeyError, in one line naming where to declare it, for a key of neither."""
    if key in BY_KEY:
        return "knobs"
    if (found := K.facts(key)) is None:
        raise KeyError(f"record key {key!r} is not declared: declare it in lfw/results/keys.py")
    return found.section


def summarize(name: str, rounds: Sequence[float], *, cv: bool = False, kept: Kept = "both",
              digits: int | None = None) -> dict[str, Any]:
    """A metric over its rounds, as the record saves it: ``name`` the median (the maximum for a memory peak,
    :data:`~lfw.results.keys.PEAK_KEYS`), ``name_rounds`` every round's value, and with ``cv`` the coefficient
    of variation of the unrounded rounds (``name_cv``, 4 places). ``kept`` leaves out the per-round list
    (``"summary"``) or the summary (``"rounds"``); ``digits`` (default the key's) rounds both. Raises ValueError
    for no rounds."""
    if not rounds:
        raise ValueError(f"no rounds of {name} to summarize")
    places = digits if digits is not None else (found.digits if (found := K.facts(name)) else K.DEFAULT_DIGITS)
    out: dict[str, Any] = {}
    if kept != "rounds":
        out[name] = round(max(rounds) if name in K.PEAK_KEYS else median(rounds), places)
    if kept != "summary":
        out[K.rounds(name)] = [round(v, places) for v in rounds]
    if cv:
        out[f"{name}_cv"] = round(coefficient_of_variation(rounds), 4)
    return out


def schema_version(extra: Mapping[str, Any], where: str) -> int:
    """The schema a saved case was written with: 0 without ``schema_version`` (the older form, read as it is).

    Raises:
        LFWError: a version that is not an int from 0, or one newer than :data:`SCHEMA_VERSION` (naming it).
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
    """One case's record, each key declared (:func:`section_of`): its ``knobs``, ``metrics`` and ``machine`` are
    :meth:`section`'s."""

    values: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_extra_info(cls, extra: Mapping[str, Any], where: str = "extra_info") -> CaseRecord:
        """The record of a saved ``extra_info`` (its version checked by :func:`schema_version`)."""
        record = cls(schema_version=schema_version(extra, where))
        return record.add({k: v for k, v in extra.items() if k != K.SCHEMA_VERSION})

    def add(self, values: Mapping[str, Any]) -> CaseRecord:
        """Add each value (a later one replaces an earlier one); returns the record. Raises KeyError, naming where
        to declare it, for a key that is not declared (:func:`section_of`)."""
        for key in values:
            section_of(key)
        self.values.update(values)
        return self

    def measure(self, name: str, rounds: Sequence[float], *, cv: bool = False, kept: Kept = "both",
                digits: int | None = None) -> CaseRecord:
        """Add metric ``name`` summarized over ``rounds`` (:func:`summarize`); returns the record."""
        return self.add(summarize(name, rounds, cv=cv, kept=kept, digits=digits))

    def section(self, name: K.Section) -> dict[str, Any]:
        """The record's ``knobs``, ``metrics`` or ``machine``."""
        return {k: v for k, v in self.values.items() if section_of(k) == name}

    def drop(self, key: str) -> None:
        """Remove ``key`` (absent: nothing to do)."""
        self.values.pop(key, None)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.values

    def as_extra_info(self) -> dict[str, Any]:
        """The flat ``extra_info`` pytest-benchmark saves: every key and ``schema_version``."""
        return {**self.values, K.SCHEMA_VERSION: self.schema_version}
