"""The remote group read for its answer: the fastest case (:func:`rate`) at the highest latency, paired by round with
the best at zero latency (a ratio of :data:`HIDDEN` or more hides the latency), and one request at a time with 2
workers against its Little's-law bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import LATENCY_MS, NUM_WORKERS
from lfw.results.ratios import Ratio, ratio, share_text

GROUP = "remote"
HIDDEN = 0.80  # at this share of the zero-latency rate the latency counts as hidden


def remote_cases(run: Run) -> list[Case]:
    return [c for c in run.group(GROUP) if c.knob(LATENCY_MS) is not None]


def rate(case: Case) -> float:
    """What ranks a remote case: its steady rate, else (none measured) its whole-pass rate."""
    return case.number(K.STEADY_IMAGES_PER_S) or case.number(K.IMAGES_PER_S) or 0.0


@dataclass(frozen=True)
class RemoteVerdict:
    latency_ms: float
    best: Case  # the fastest case at ``latency_ms`` (steady rate)
    zero: Case | None  # the fastest case at zero latency (steady rate)
    to_zero: Ratio | None  # best / zero on the steady rate, paired by round
    serial: Case | None  # one request at a time, 2 workers, at ``latency_ms``

    def sentence(self) -> str:
        b = self.best
        workers = b.knob(NUM_WORKERS) or 0
        in_flight = int(b.number(K.IN_FLIGHT_LIMIT) or 0)
        strategy = b.knob(KN.STRATEGY)
        text = (f"at {self.latency_ms:g} ms, `{b.label}` ({strategy}, {workers} workers, up to {in_flight} "
                f"requests in flight, {b.number(K.BUSY_MEAN_IN_FLIGHT) or b.number(K.MEAN_IN_FLIGHT) or 0:.1f} on "
                "average): ")
        steady = b.number(K.STEADY_IMAGES_PER_S)
        ceiling = b.number(K.ENDPOINT_CEILING_IMAGES_PER_S) or 0
        if steady is not None:
            text += (f"{steady:,.1f} images/s steady, {share_text(b, K.STEADY_CEILING_SHARE)} of the endpoint's "
                     f"zero-latency ceiling ({ceiling:,.0f} images/s, median of the rounds)")
        else:
            why = b.value(K.STEADY_INVALID) or b.value(K.STEADY_ABSENT) or "not measured"
            text += (f"no steady rate ({why}); {b.number(K.IMAGES_PER_S) or 0:,.1f} images/s over the whole pass, "
                     f"{share_text(b, K.ENDPOINT_CEILING_SHARE)} of the endpoint's ceiling ({ceiling:,.0f} images/s)")
        text += (f"; time to first batch {b.number(K.TTFB_S) or 0:.2f} s, apart "
                 f"({b.number(K.IMAGES_PER_S) or 0:,.1f} images/s over the whole pass)")
        law = b.number(K.LITTLES_LAW_RATE)
        if law is not None:
            error = b.number(K.LITTLES_LAW_ERROR)
            text += (f"; Little's law for its requests in flight: {law:,.1f} images/s"
                     + (f" (steady {error:+.0%})" if error is not None else ""))
        if b.value(K.REMOTE_LIMIT):
            text += f"; limited by the {b.value(K.REMOTE_LIMIT)}"
        if self.to_zero is not None and self.zero is not None:
            verdict = "hidden" if self.to_zero.estimate >= HIDDEN else "not hidden"
            text += (f"; {self.to_zero.text()} of the best at 0 ms (`{self.zero.label}`, {rate(self.zero):,.1f} "
                     f"images/s steady; paired by round): {verdict}")
        if self.serial is not None:
            bound = self.serial.number(K.LITTLES_LAW_IMAGES_PER_S)
            text += (f". One request at a time with 2 workers: {rate(self.serial):,.1f} images/s"
                     + (" steady" if self.serial.number(K.STEADY_IMAGES_PER_S) else " over the whole pass")
                     + (f" against its Little's-law bound of {bound:,.1f}" if bound else ""))
        return text + "."


def remote_verdict(run: Run) -> RemoteVerdict | None:
    cases = remote_cases(run)
    if not cases:
        return None
    latency = max(c.knob(LATENCY_MS) or 0.0 for c in cases)
    at = [c for c in cases if c.knob(LATENCY_MS) == latency]
    best = max(at, key=rate)
    at_zero = [c for c in cases if c.knob(LATENCY_MS) == 0.0]
    zero = max(at_zero, key=rate) if at_zero else None
    to_zero = ratio(best, zero, K.STEADY_IMAGES_PER_S) if zero is not None and zero is not best else None
    serial = next((c for c in at if c.knob(KN.STRATEGY) == "serial" and c.knob(NUM_WORKERS) == 2), None)
    return RemoteVerdict(latency, best, zero, to_zero, serial)
