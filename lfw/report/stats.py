"""Numbers the charts and the summary share: legends, value formatting, the best case, the noise.

Error bars are the sample standard deviation over rounds (as the course exercise plots them), computed here
from the saved per-round values rather than taken from pytest-benchmark's ``stddev``, so that images/s, time
to first batch and memory all get their bars the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import median
from typing import Any

from lfw import keys as K
from lfw.results import Case


def varying_keys(cases: Iterable[Case], exclude: Iterable[str] = ()) -> list[str]:
    """Param names that take more than one value over ``cases``: what a legend must tell apart."""
    cases = list(cases)
    skip = set(exclude)
    keys = dict.fromkeys(k for c in cases for k in c.params if k not in skip)
    return [k for k in keys if len({repr(c.params.get(k)) for c in cases}) > 1]


def short_name(fullname: str) -> str:
    """``benchmarks/test_x.py::test_x[p]`` as ``test_x[p]``: the file adds nothing in a table or a log line."""
    return fullname.rpartition("::")[2] or fullname


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


def is_loader_case(case: Case) -> bool:
    """A case that loads LFW images (it has a ceiling), not an index-only memory or leak experiment."""
    return case.number(K.EFFICIENCY) is not None or case.number(K.PIL_CEILING_SHARE) is not None


def best_case(cases: Iterable[Case]) -> Case | None:
    """The image-loading case with the highest median images/s (index-only memory cases do not count)."""
    rated = [c for c in cases if c.number(K.IMAGES_PER_S) is not None and is_loader_case(c)]
    return max(rated, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0) if rated else None


def cv_spread(cases: Iterable[Case]) -> tuple[float, float, Case] | None:
    """Median and worst coefficient of variation of images/s over image-loading cases of two or more rounds.

    A single round has no spread (its CV of 0 would flatter the median), and the memory experiments' images/s
    is not what they measure.
    """
    with_cv = [(c.number(K.IMAGES_PER_S_CV), c) for c in cases
               if is_loader_case(c) and (c.number(K.ROUNDS) or 0) >= 2]
    with_cv = [(cv, c) for cv, c in with_cv if cv is not None]
    if not with_cv:
        return None
    worst_cv, worst = max(with_cv, key=lambda item: item[0])
    return median(cv for cv, _ in with_cv), worst_cv, worst
