"""The peers group read for a user's decision: each peer's fastest uint8 case judged on its paired ratio to
DataLoader's best here (:func:`standing`), and what limits it (:func:`lfw.results.limits.what_limits`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lfw.cli.sections import Table
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results.limits import capacity_trusted, what_limits
from lfw.results.peers import DATALOADER, GROUP, fastest, peer_cases
from lfw.results.ratios import Ratio, ratio
from lfw.stats.variation import KNEE_TOLERANCE

Standing = Literal["faster", "slower", "within 5%", "unresolved", "unpaired"]


@dataclass(frozen=True)
class PeerRow:
    """A peer at its best setting, its paired ratio to DataLoader's best and what limits it."""

    peer: str
    case: Case
    ratio: Ratio | None
    standing: Standing
    limit: str


def standing(r: Ratio | None, tolerance: float = KNEE_TOLERANCE) -> Standing:
    """Faster or slower: the whole interval beyond 1 +- tolerance; within: inside it; else unresolved."""
    if r is None:
        return "unpaired"
    if r.low > 1 + tolerance:
        return "faster"
    if r.high < 1 - tolerance:
        return "slower"
    if r.low >= 1 - tolerance and r.high <= 1 + tolerance:
        return "within 5%"
    return "unresolved"


PeerRows = tuple[Case | None, list[PeerRow]]  # DataLoader's best case of the peers group, a row per peer at its best


def peer_rows(run: Run) -> PeerRows:
    """DataLoader's best case of the peers group, and a row per peer at its best (fastest first)."""
    by_peer = peer_cases(run.group(GROUP))
    if DATALOADER not in by_peer:
        return None, []
    best = fastest(by_peer.pop(DATALOADER))
    rows = []
    for peer, cases in by_peer.items():
        case = fastest(cases)
        r = ratio(case, best)
        rows.append(PeerRow(peer, case, r, standing(r), what_limits(case, trusted=capacity_trusted(run)).text))
    return best, sorted(rows, key=lambda row: -(row.case.number(K.IMAGES_PER_S) or 0.0))


def _mib(case: Case, key: str) -> str:
    return f"{value:,.0f}" if (value := case.number(key)) is not None else "-"


def row_cells(case: Case) -> list[str]:
    """images/s (rounds' range), CPU ms/image, cold first epoch, first batch, PSS alone, share, layout, pixels."""
    rounds = [float(v) for v in case.rounds(K.IMAGES_PER_S) or []]
    spread = f" ({min(rounds):,.0f}-{max(rounds):,.0f})" if len(rounds) > 1 else ""
    share = case.number(K.OWN_DECODER_SHARE)
    check = case.extra.get(K.PIXEL_CHECK) or {}
    pixels = f"{check['max_mean_abs_diff']:.2f} / {check['max_abs_diff']:.0f}" if check else "reference"
    cold = case.number(K.COLD_IMAGES_PER_S)
    return [f"{case.number(K.IMAGES_PER_S) or 0:,.0f}{spread}", f"{case.number(K.CPU_MS_PER_IMAGE) or 0:.3f}",
            f"{cold:,.0f}" if cold is not None else "-", f"{1e3 * (case.number(K.TTFB_S) or 0):.0f}",
            _mib(case, K.PEER_PSS_MIB), _mib(case, K.PEER_PSS_ADDED_MIB), f"{share:.0%}" if share else "-",
            str(case.value(K.PEER_LAYOUT) or "-"), pixels]


COLUMNS = ("case", "images/s (rounds)", "CPU ms/image", "cold epoch images/s", "first batch ms", "PSS MiB alone",
           "PSS added MiB", "of own decoder", "layout", "pixels: mean / max diff")


def peers_table(run: Run, peers: PeerRows) -> Table | None:
    """The peers group's table: DataLoader's best and each peer at its best (bold, ``peers`` from :func:`peer_rows`),
    then every other case of the group; None without DataLoader's best."""
    best, rows = peers
    if best is None:
        return None
    shown = [best, *(r.case for r in rows)]
    rest = [c for c in run.group(GROUP) if c not in shown and c.number(K.IMAGES_PER_S) is not None]
    mark = {id(c): "**" for c in shown}
    return Table(COLUMNS, [(f"{mark.get(id(c), '')}`{c.label}`{mark.get(id(c), '')}", *row_cells(c))
                           for c in [*shown, *sorted(rest, key=lambda c: c.name)]], right=range(1, len(COLUMNS)))


def verdict_lines(peers: PeerRows) -> list[str]:
    """One line per peer of ``peers`` (:func:`peer_rows`): faster or slower than DataLoader's best, the paired ratio
    and interval, what limits it."""
    best, rows = peers
    if best is None:
        return []
    out = []
    for row in rows:
        ratio_text = (f"{row.ratio.text()} ({row.ratio.confidence:.1%} interval, {row.ratio.rounds} paired rounds)"
                      if row.ratio else "unpaired")
        out.append(f"`{row.case.label}` against DataLoader's best here (`{best.label}`): **{row.standing}**, "
                   f"images/s ratio {ratio_text}; limited by {row.limit}.")
    return out
