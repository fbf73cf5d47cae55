"""The one model of the project's pages, and its two writers: Markdown (:func:`markdown`) and HTML (:func:`html`).

A page is a list of blocks: :class:`Section` (a titled part with an anchor), :class:`Heading`, :class:`Para`,
:class:`Table`, :class:`Bullets` (whose :class:`Item` may hold blocks of its own), :class:`Figure` and
:class:`Fold`. Text in a block is a line of the pages' inline markup, nothing else: ```code```, ``**strong**``,
``*em*`` and ``[text](url)``. The Markdown writer writes it as it is; the HTML writer escapes every text (raw HTML
is shown as text, never passed through) and keeps a link's target only when it is relative, an ``#anchor`` or
http(s) (:func:`safe_url`). Nothing here reads Markdown back: the blocks are the page.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape, unescape
from urllib.parse import quote

_SCHEME = re.compile(r"[^/?#]*:")  # what a browser reads as a scheme: anything before the first ':' not in a path
_INLINE = re.compile(r"`([^`]*)`|\*\*(.+?)\*\*|\*([^*\s][^*]*?)\*|(!?)\[([^\]]*)\]\(([^)\s]*)\)")


@dataclass(frozen=True, init=False)
class Para:
    """A paragraph; each of ``lines`` on a line of its own (a hard line break between them)."""

    lines: tuple[str, ...]

    def __init__(self, *lines: str) -> None:
        object.__setattr__(self, "lines", lines)


@dataclass(frozen=True)
class Heading:
    """A heading without an anchor: the page's title (level 1), or one inside a section (3 to 6)."""

    text: str
    level: int = 4


@dataclass(frozen=True)
class Table:
    """A table; without ``header`` a key-value table (Markdown's empty header row, no ``<thead>`` in HTML); the
    columns at positions in ``right`` right-aligned (numbers). Cells are one line each."""

    header: Sequence[str] | None
    rows: Sequence[Sequence[object]]
    right: Sequence[int] = ()


@dataclass(frozen=True)
class Item:
    """A list item: its text, then blocks it holds (a table under a finding)."""

    text: str
    blocks: Sequence[Block] = ()


@dataclass(frozen=True)
class Bullets:
    """A bulleted list; an item is its text, or an :class:`Item`."""

    items: Sequence[str | Item]


@dataclass(frozen=True)
class Figure:
    """An image at the relative URL ``src`` with its caption (inline markup), anchored at ``anchor``."""

    src: str
    alt: str
    caption: str
    anchor: str


@dataclass(frozen=True)
class Fold:
    """Blocks folded under ``title`` in Markdown (``<details>``, for long lists); shown open in HTML."""

    title: str
    blocks: Sequence[Block]


@dataclass(frozen=True)
class Section:
    """A titled part of a page: ``## title`` in Markdown, ``<section>`` with ``<h2>`` in HTML, its anchor the
    title's :func:`slug`."""

    title: str
    blocks: Sequence[Block]

    @property
    def id(self) -> str:
        return slug(self.title)


Block = Para | Heading | Table | Bullets | Figure | Fold | Section


def slug(text: str) -> str:
    """A title's anchor, as GitHub and Python-Markdown make it: ``Against the baseline`` -> ``against-the-baseline``."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def safe_url(url: str) -> bool:
    """True when ``url`` is relative, an anchor or http(s), read as a browser does (entities decoded, control
    characters and blanks dropped); False for any other scheme (``javascript:``, ``data:``)."""
    target = re.sub(r"[\x00-\x20]", "", unescape(url)).lower()
    return _SCHEME.match(target) is None or target.startswith(("http:", "https:"))


def cell(text: object) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _md_table(t: Table) -> list[str]:
    width = len(t.header) if t.header is not None else len(t.rows[0]) if t.rows else 2
    header = t.header if t.header is not None else [""] * width
    rule = "|".join("---:" if i in t.right else "---" for i in range(width))
    return ["|" + "|".join(f" {cell(h)} " if h else " " for h in header) + "|", f"|{rule}|",
            *(f"| {' | '.join(cell(v) for v in row)} |" for row in t.rows)]


def _md(block: Block) -> list[str]:
    """The block's Markdown lines, with no blank line after it."""
    if isinstance(block, Section):
        return [f"## {block.title}", "", _md_blocks(block.blocks)]
    if isinstance(block, Heading):
        return ["#" * block.level + " " + block.text]
    if isinstance(block, Para):
        return [*(f"{line}  " for line in block.lines[:-1]), *block.lines[-1:]]
    if isinstance(block, Table):
        return _md_table(block)
    if isinstance(block, Figure):
        return [f"![{block.alt}]({quote(block.src)})", "", block.caption]
    if isinstance(block, Fold):
        return [f"<details><summary>{block.title}</summary>", "", _md_blocks(block.blocks), "", "</details>"]
    lines = [line for item in block.items for line in _md_item(item)]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _md_item(item: str | Item) -> list[str]:
    if isinstance(item, str):
        return [f"- {item}"]
    inner = _md_blocks(item.blocks).splitlines()
    return [f"- {item.text}", *(["", *(f"  {line}" if line else "" for line in inner), ""] if inner else [])]


def _md_blocks(blocks: Sequence[Block]) -> str:
    return "\n\n".join("\n".join(_md(b)) for b in blocks)


def markdown(blocks: Sequence[Block]) -> str:
    """The blocks as one Markdown document (ending in a newline)."""
    return _md_blocks(blocks).rstrip("\n") + "\n"


def inline(text: str) -> str:
    """A line of inline markup as HTML: every text escaped, unsafe link targets dropped (the text kept)."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        code, strong, em, bang, label, url = m.groups()
        out.append(escape(text[pos:m.start()]))
        if code is not None:
            out.append(f"<code>{escape(code)}</code>")
        elif strong is not None:
            out.append(f"<strong>{inline(strong)}</strong>")
        elif em is not None:
            out.append(f"<em>{inline(em)}</em>")
        else:
            target = f'="{escape(url)}"' if safe_url(url) else ""
            out.append(f'<img alt="{escape(label)}"{" src" + target if target else ""}>' if bang
                       else f"<a{' href' + target if target else ''}>{inline(label)}</a>")
        pos = m.end()
    return "".join(out) + escape(text[pos:])


def _cells(tag: str, row: Sequence[object], right: Sequence[int]) -> str:
    align = ' style="text-align: right;"'
    return "<tr>" + "".join(f"<{tag}{align if i in right else ''}>{inline(str(v))}</{tag}>"
                            for i, v in enumerate(row)) + "</tr>"


def _html_block(block: Block) -> str:
    if isinstance(block, Section):
        return (f'<section id="{escape(block.id)}">\n<h2>{inline(block.title)}</h2>\n{html(block.blocks)}\n'
                "</section>")
    if isinstance(block, Heading):
        return f"<h{block.level}>{inline(block.text)}</h{block.level}>"
    if isinstance(block, Para):
        return "<p>" + "<br>\n".join(inline(line) for line in block.lines) + "</p>"
    if isinstance(block, Table):
        head = f"<thead>{_cells('th', block.header, block.right)}</thead>\n" if block.header is not None else ""
        body = "\n".join(_cells("td", row, block.right) for row in block.rows)
        return f"<table>\n{head}<tbody>\n{body}\n</tbody></table>"
    if isinstance(block, Figure):
        return (f'<figure id="{escape(block.anchor)}">\n<img src="{escape(quote(block.src))}" '
                f'alt="{escape(block.alt)}">\n<figcaption>{inline(block.caption)}</figcaption>\n</figure>')
    if isinstance(block, Fold):
        return html(block.blocks)
    lis = [f"<li>{inline(i)}</li>" if isinstance(i, str) else f"<li>{inline(i.text)}\n{html(i.blocks)}</li>"
           for i in block.items]
    return "<ul>\n" + "\n".join(lis) + "\n</ul>"


def html(blocks: Sequence[Block]) -> str:
    """The blocks as an HTML fragment: no script, every text escaped."""
    return "\n".join(_html_block(b) for b in blocks)
