"""A remote case's steady rate held against the endpoint's ceiling and Little's law, and the limit that caps it.

A steady rate above the ceiling by more than its noise is flagged (``steady_invalid``) and dropped; Little's law
gives the rate for the requests in flight over the busy span; the limit is named in the order of :func:`limiting`.
Each rule: docs/remote.md ("Passes with a steady state", "Per case").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from lfw.remote.bench import NEAR_CEILING
from lfw.results import keys as K
from lfw.results import summarize
from lfw.stats.variation import coefficient_of_variation

NEAR_LIMIT = 0.8  # at this share of the in-flight limit (or the pool), the configuration's concurrency is
BUSY_CORES = 0.85  # at this share of the usable cores busy (client and endpoint), the cores are
CEILING_NOISE_FLOOR = 0.10  # a steady rate may exceed the ceiling by this much before it is called invalid
LIMITS = ("endpoint ceiling", "in-flight limit", "pool", "client CPU", "idle request slots")


def ceiling_tolerance(ceiling: Sequence[float]) -> float:
    """How far above the ceiling a rate may be measured before it is invalid: the ceiling's own noise."""
    return max(CEILING_NOISE_FLOOR, 2 * coefficient_of_variation(ceiling))


def steady_against_ceiling(info: Mapping[str, Any], ceiling: Sequence[float]) -> dict[str, Any]:
    """The steady rate's share of the same rounds' ceiling, or, above the ceiling by more than its noise, the
    reason it is invalid (``steady_invalid``; the caller drops the rate). Empty without a steady rate."""
    rates = info.get(K.rounds(K.STEADY_IMAGES_PER_S))
    if not rates or len(rates) != len(ceiling):
        return {}
    tolerance, top = ceiling_tolerance(ceiling), median(ceiling)
    if median(rates) > top * (1 + tolerance):
        return {K.STEADY_INVALID: f"steady rate {median(rates):,.1f} images/s is above the endpoint's ceiling "
                                  f"{top:,.1f} by more than its noise ({tolerance:.0%}): not a measurement"}
    shares = [r / c for r, c in zip(rates, ceiling, strict=True) if c > 0]
    return summarize(K.STEADY_CEILING_SHARE, shares, digits=4) if shares else {}


def littles_law_error(info: Mapping[str, Any]) -> dict[str, Any]:
    """Steady rate over the rate Little's law gives for the measured in flight and request time, minus 1."""
    law, steady = info.get(K.LITTLES_LAW_RATE), info.get(K.STEADY_IMAGES_PER_S)
    return {K.LITTLES_LAW_ERROR: round(steady / law - 1, 4)} if law and steady else {}


def limiting(info: Mapping[str, Any], *, in_flight_limit: int, processes: int, pool: int) -> str:
    """The limit that caps the case (one of :data:`LIMITS`), from its record: the first of the endpoint ceiling
    (steady at :data:`NEAR_CEILING` of it), the in-flight limit or the client's pool (at :data:`NEAR_LIMIT` of
    it), client CPU (loader and endpoint at :data:`BUSY_CORES` of the usable cores), else idle request slots."""
    rate = info.get(K.STEADY_IMAGES_PER_S) or info.get(K.IMAGES_PER_S) or 0.0
    ceiling = info.get(K.ENDPOINT_CEILING_IMAGES_PER_S) or 0.0
    in_flight = info.get(K.BUSY_MEAN_IN_FLIGHT) or info.get(K.MEAN_IN_FLIGHT) or 0.0
    if ceiling and rate >= NEAR_CEILING * ceiling:
        return "endpoint ceiling"
    if in_flight >= NEAR_LIMIT * in_flight_limit:
        return "in-flight limit"
    if processes * pool < in_flight_limit and in_flight >= NEAR_LIMIT * processes * pool:
        return "pool"
    busy = (info.get(K.CPU_UTILIZATION) or 0.0) + (info.get(K.ENDPOINT_CPU_UTILIZATION) or 0.0)
    if busy >= BUSY_CORES:
        return "client CPU"
    return "idle request slots"


def remote_law(info: Mapping[str, Any], ceiling: Sequence[float], *, in_flight_limit: int, processes: int,
               pool: int) -> dict[str, Any]:
    """What a remote case's record adds, and drops: the steady rate against the ceiling (an invalid one becomes
    ``None`` values for the caller to remove), Little's law's error, and the limit. Returns the keys to update;
    a key mapped to None is to be removed."""
    out: dict[str, Any] = steady_against_ceiling(info, ceiling)
    if K.STEADY_INVALID in out:
        out.update({K.STEADY_IMAGES_PER_S: None, K.rounds(K.STEADY_IMAGES_PER_S): None})
    kept = {k: v for k, v in {**info, **out}.items() if v is not None}
    out.update(littles_law_error(kept))
    out[K.REMOTE_LIMIT] = limiting(kept, in_flight_limit=in_flight_limit, processes=processes, pool=pool)
    return out
