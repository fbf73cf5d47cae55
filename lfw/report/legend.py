"""Legends and tick labels: the knobs that vary over the cases drawn, in words (``num_workers=2, pin_memory=on``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lfw.results import Case


def varying_keys(cases: Iterable[Case], exclude: Iterable[str] = ()) -> list[str]:
    """Param names that take more than one value over ``cases``: what a legend must tell apart."""
    cases = list(cases)
    skip = set(exclude)
    keys = dict.fromkeys(k for c in cases for k in c.params if k not in skip)
    return [k for k in keys if len({repr(c.params.get(k)) for c in cases}) > 1]


def describe(case: Case, keys: Iterable[str]) -> str:
    """``num_workers=2, transform=heavy`` for the given keys (the case label when there are none)."""
    parts = [f"{k}={format_value(case.value(k))}" for k in keys]
    return ", ".join(parts) or case.label


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "default" if value is None else str(value)


def sort_key(value: Any) -> tuple[int, Any]:
    """Order knob values numbers first (numerically), then the rest by text; None (the default) first."""
    if value is None:
        return (0, 0)
    if isinstance(value, int | float):
        return (1, value)
    return (2, str(value))
