"""What the gate compares in each case, and which way is worse.

Two kinds of metric need two kinds of threshold:

- ``relative``: throughput, efficiency, time to first batch. A change is a ratio of medians; 10% slower means
  the same thing at 300 and at 3,000 images/s.
- ``absolute``: memory growth and data-wait fraction. Growth sits near 0 MiB in a healthy case and swings
  by tens of MiB between rounds (page-cache and allocator noise), so a ratio of two near-zero medians is
  meaningless; a regression must add a floor of MiB (or of wait fraction) *and* a share of the baseline.

RSS growth is deliberately not gated: forked workers share pages, so RSS stays flat while the real cost grows
(see :mod:`lfw.measure.memory`); PSS (the tree's real share) and USS (private pages) are gated instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Worse = Literal["lower", "higher"]
Kind = Literal["relative", "absolute"]


@dataclass(frozen=True)
class Metric:
    """One gated ``extra_info`` key: its direction, kind and the threshold family that applies."""

    key: str
    label: str
    worse: Worse
    kind: Kind
    family: Literal["throughput", "ttfb", "memory", "slope", "wait"]
    unit: str = ""


IMAGES_PER_S = Metric("images_per_s", "images/s", "lower", "relative", "throughput")
EFFICIENCY = Metric("efficiency", "efficiency", "lower", "relative", "throughput")
TTFB = Metric("ttfb_s", "time to first batch", "higher", "relative", "ttfb", " s")
PSS_GROWTH = Metric("pss_growth_mib", "PSS growth", "higher", "absolute", "memory", " MiB")
USS_GROWTH = Metric("uss_growth_mib", "USS growth", "higher", "absolute", "memory", " MiB")
DATA_WAIT = Metric("data_wait_fraction", "data-wait fraction", "higher", "absolute", "wait")

# Leak checks (lfw.measure.leak) record the median epoch-to-epoch step of tree USS and PSS
# (``median_step_uss_mib``, ``median_step_pss_mib``): the statistic their own verdict uses, since a one-off jump of
# shared library pages moves a least-squares slope but not the median step. Any such key is gated like memory.
SLOPE_KEY = re.compile(r"^(?P<key>median_step_[a-z]+_mib)(?:_rounds)?$")

# Same machine class: absolute throughput is comparable and most sensitive; efficiency is left out there,
# because its denominator (a short single-core sweep per session) adds its own noise: measured here, 6 of 10
# false alarms in 20 A/A pairs were efficiency alone. Different machines: only efficiency (throughput over the
# same session's per-core ceiling) ports, and absolute time to first batch does not port at all.
SAME_MACHINE = (IMAGES_PER_S, TTFB, PSS_GROWTH, USS_GROWTH, DATA_WAIT)
PORTABLE = (EFFICIENCY, PSS_GROWTH, USS_GROWTH, DATA_WAIT)


def slope_metrics(extra_info_keys: set[str]) -> list[Metric]:
    """A memory-slope metric for every slope key found in a case's ``extra_info``."""
    keys = sorted({m.group("key") for k in extra_info_keys if (m := SLOPE_KEY.match(k))})
    return [Metric(k, k.replace("_", " "), "higher", "absolute", "slope", " MiB/epoch") for k in keys]
