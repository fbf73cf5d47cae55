"""The remote group read for its answer: which strategy and concurrency hide the injected latency.

At the highest latency the run measured (100 ms in the quick profile), the fastest case is compared with the same
strategy and worker count at zero latency, paired by round (:mod:`lfw.report.ratios`): a ratio near 1 means the
latency is hidden. Beside it, the endpoint's own zero-latency ceiling (fetch only) of the same rotation, and one
request at a time with 2 workers against its Little's-law bound (2 requests in flight / the request time), the
configuration that a plain map-style dataset gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from lfw.report.ratios import Ratio, ratio, share_text
from lfw.results import Case, Run
from lfw.results import keys as K

GROUP = "remote"
HIDDEN = 0.80  # at this share of the zero-latency rate the latency counts as hidden


def remote_cases(run: Run) -> list[Case]:
    return [c for c in run.group(GROUP) if c.number(K.LATENCY_MS) is not None]


def twin(case: Case, cases: list[Case], latency: float) -> Case | None:
    """The case of the same strategy and worker count at ``latency``."""
    for other in cases:
        if (other.value(K.STRATEGY) == case.value(K.STRATEGY) and other.value("num_workers") ==
                case.value("num_workers") and other.number(K.LATENCY_MS) == latency):
            return other
    return None


@dataclass(frozen=True)
class RemoteVerdict:
    latency_ms: float
    best: Case  # the fastest case at ``latency_ms``
    zero: Case | None  # its twin at zero latency
    to_zero: Ratio | None  # best / zero, paired by round
    serial: Case | None  # one request at a time, 2 workers, at ``latency_ms``

    def hidden(self) -> bool | None:
        return None if self.to_zero is None else self.to_zero.estimate >= HIDDEN

    def sentence(self) -> str:
        b = self.best
        workers = int(b.value("num_workers") or 0)
        in_flight = int(b.number(K.IN_FLIGHT_LIMIT) or 0)
        text = (f"at {self.latency_ms:g} ms, `{b.label}` ({b.value(K.STRATEGY)}, {workers} workers, up to {in_flight} "
                f"requests in flight, {b.number(K.MEAN_IN_FLIGHT) or 0:.1f} on average): "
                f"{b.number(K.IMAGES_PER_S) or 0:,.1f} images/s, {share_text(b, K.ENDPOINT_CEILING_SHARE)} of "
                f"the endpoint's zero-latency ceiling ({b.number(K.ENDPOINT_CEILING_IMAGES_PER_S) or 0:,.0f} "
                "images/s, median of the rounds)")
        if self.to_zero is not None and self.zero is not None:
            verdict = "hidden" if self.hidden() else "not hidden"
            text += (f", {self.to_zero.text()} of the same configuration at 0 ms "
                     f"({self.zero.number(K.IMAGES_PER_S) or 0:,.1f} images/s; paired by round): {verdict}")
        if self.serial is not None:
            bound = self.serial.number(K.LITTLES_LAW_IMAGES_PER_S)
            text += (f". One request at a time with 2 workers: {self.serial.number(K.IMAGES_PER_S) or 0:,.1f} "
                     f"images/s" + (f" against its Little's-law bound of {bound:,.1f}" if bound else ""))
        return text + "."


def remote_verdict(run: Run) -> RemoteVerdict | None:
    cases = remote_cases(run)
    if not cases:
        return None
    latency = max(c.number(K.LATENCY_MS) or 0.0 for c in cases)
    at = [c for c in cases if c.number(K.LATENCY_MS) == latency]
    best = max(at, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0)
    zero = twin(best, cases, 0.0)
    serial = next((c for c in at if c.value(K.STRATEGY) == "serial" and c.value("num_workers") == 2), None)
    return RemoteVerdict(latency, best, zero, ratio(best, zero) if zero is not None else None, serial)
