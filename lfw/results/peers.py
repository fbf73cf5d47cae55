"""The peers group's cases by loader project: each peer's measured uint8 cases beside DataLoader's (the references),
and the fastest of them, which a peer's paired ratio is taken to (:func:`lfw.results.ratios.ratio`)."""

from __future__ import annotations

from collections.abc import Iterable

from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.model import Case

GROUP = "peers"
DATALOADER = "dataloader"


def peer_cases(cases: Iterable[Case]) -> dict[str, list[Case]]:
    """The measured uint8 cases of ``cases`` (the peers group's) by peer, ``dataloader`` for the references."""
    found: dict[str, list[Case]] = {}
    for case in cases:
        if case.number(K.IMAGES_PER_S) is not None and case.value(K.OUTPUT, "uint8") == "uint8":
            found.setdefault(case.knob(KN.PEER) or DATALOADER, []).append(case)
    return found


def fastest(cases: list[Case]) -> Case:
    """The case of ``cases`` with the most images/s."""
    return max(cases, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0)
