"""The one plain-text table of the command-line tools: two-space columns under a rule of dashes."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = ()) -> str:
    """``headers``, a rule, then ``rows``; columns left-aligned except those whose positions are in ``right``."""
    cells = [tuple(headers), *[tuple(r) for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                         for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()

    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths), *(line(row) for row in cells[1:])])
