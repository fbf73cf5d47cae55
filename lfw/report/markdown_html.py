"""A minimal Markdown-to-HTML converter for the report's own Markdown (:mod:`lfw.report.page`'s sections).

The HTML page shows the very words the Markdown page writes (:mod:`lfw.report.page` owns them), so the two can
never disagree; this module only changes their notation. It covers what those pages use and nothing more: ATX
headings, paragraphs (two trailing spaces break a line), ``-``/``*`` lists whose items may hold indented blocks
(the recommendation table sits in one), pipe tables with their alignment row, fenced code, and inline code,
bold, italic and links; raw HTML renders as paragraph text: shown escaped, never dropped or passed through.
Every piece of text is escaped (:func:`html.escape`) before markup is added, so a case name can never inject
HTML; a link keeps its target only when it is relative, an ``#anchor`` or http(s). The gate's verdict is not
converted from Markdown: :mod:`lfw.report.verdict_html` renders it from the verdict itself. The stdlib has no
Markdown parser and ``markdown`` is not a dependency.
"""

from __future__ import annotations

import html
import re

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^[-*]\s+(.*)$")
_RULE_CELL = re.compile(r"^\s*(:?)-+(:?)\s*$")
_FENCE = "```"
_CODE = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes (``Against the baseline`` ->
    ``against-the-baseline``), so the Markdown page's ``(#...)`` links work in the HTML page too."""
    return re.sub(r"[^\w\- ]", "", text.lower()).strip().replace(" ", "-")


def safe_href(url: str) -> str | None:
    """The link target if it is relative, an anchor or http(s); None for any other scheme (``javascript:``)."""
    if _SCHEME.match(url) and not url.lower().startswith(("http://", "https://")):
        return None
    return url


def _bold_italic(escaped: str) -> str:
    return _ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", escaped))


def _emphasis(escaped: str) -> str:
    """Links, bold and italic in text that is already escaped and holds no code span (never inside a target)."""
    out, last = [], 0
    for m in _LINK.finditer(escaped):
        out.append(_bold_italic(escaped[last:m.start()]))
        href = safe_href(html.unescape(m.group(2)))
        label = _bold_italic(m.group(1))
        out.append(f'<a href="{html.escape(href)}">{label}</a>' if href is not None else label)
        last = m.end()
    out.append(_bold_italic(escaped[last:]))
    return "".join(out)


def inline(text: str) -> str:
    """One line of Markdown as escaped HTML: code spans verbatim, then links, bold and italic around them."""
    out, last = [], 0
    for m in _CODE.finditer(text):
        out.append(_emphasis(html.escape(text[last:m.start()], quote=False)))
        out.append(f"<code>{html.escape(m.group(2).strip(), quote=False)}</code>")
        last = m.end()
    out.append(_emphasis(html.escape(text[last:], quote=False)))
    return "".join(out)


def _cells(line: str) -> list[str]:
    """The cells of one pipe-table row (outer pipes optional; ``\\|`` is a literal pipe)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _is_table_start(lines: list[str], i: int) -> bool:
    return (lines[i].lstrip().startswith("|") and i + 1 < len(lines)
            and all(_RULE_CELL.match(c) for c in _cells(lines[i + 1])))


def _table(lines: list[str], i: int) -> tuple[str, int]:
    """The table starting at line ``i`` and the index after it; numeric columns (``---:``) get class ``r``."""
    header = _cells(lines[i])
    aligns = []
    for cell in _cells(lines[i + 1]):
        m = _RULE_CELL.match(cell)
        left, right = (m.group(1), m.group(2)) if m else ("", "")
        aligns.append(' class="r"' if right and not left else ' class="c"' if right and left else "")
    aligns = (aligns + [""] * len(header))[:len(header)]

    def row(cells: list[str], tag: str) -> str:
        cells = (cells + [""] * len(header))[:len(header)]
        return "<tr>" + "".join(f"<{tag}{a}>{inline(c)}</{tag}>" for c, a in zip(cells, aligns, strict=True)) + "</tr>"

    rows, i = [], i + 2
    while i < len(lines) and lines[i].lstrip().startswith("|"):
        rows.append(row(_cells(lines[i]), "td"))
        i += 1
    body = "\n".join(rows)
    head = f"<thead>{row(header, 'th')}</thead>\n" if any(header) else ""  # a key-value table has no headings
    return f'<div class="scroll"><table>\n{head}<tbody>\n{body}\n</tbody></table></div>', i


def _list(lines: list[str], i: int) -> tuple[str, int]:
    """A list starting at line ``i``: each item's first line, then the indented lines (and blanks) under it."""
    items = []
    while i < len(lines) and (m := _ITEM.match(lines[i])):
        body, i = [m.group(1)], i + 1
        while i < len(lines) and (lines[i].startswith(("  ", "\t")) or
                                  (not lines[i].strip() and i + 1 < len(lines) and lines[i + 1].startswith("  "))):
            body.append(lines[i])
            i += 1
        first, rest = body[0], [line[2:] if line.startswith("  ") else line.lstrip("\t") for line in body[1:]]
        if any(line.strip() and (line.lstrip().startswith(("|", "-", "*", _FENCE))) for line in rest):
            items.append(f"<li>{inline(first)}\n{to_html(chr(10).join(rest))}</li>")
        else:
            items.append(f"<li>{inline(' '.join([first, *(r.strip() for r in rest if r.strip())]))}</li>")
        while i < len(lines) and not lines[i].strip() and i + 1 < len(lines) and _ITEM.match(lines[i + 1]):
            i += 1  # a blank line between two items keeps one list
    return "<ul>\n" + "\n".join(items) + "\n</ul>", i


def _starts_block(lines: list[str], i: int) -> bool:
    line = lines[i]
    return (not line.strip() or any(p.match(line) for p in (_HEADING, _ITEM))
            or line.lstrip().startswith(_FENCE) or _is_table_start(lines, i))


def _paragraph(lines: list[str]) -> str:
    """Lines of one paragraph, joined; a line ending in two spaces ends with a line break."""
    parts = [inline(line.strip()) + ("<br>" if line.endswith("  ") and n < len(lines) - 1 else "")
             for n, line in enumerate(lines)]
    return "<p>" + "\n".join(parts) + "</p>"


def to_html(text: str) -> str:
    """``text`` (Markdown) as an HTML fragment; every text is escaped."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.lstrip().startswith(_FENCE):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith(_FENCE)), len(lines))
            out.append(f"<pre><code>{html.escape(chr(10).join(lines[i + 1:end]), quote=False)}</code></pre>")
            i = end + 1
        elif m := _HEADING.match(line):
            level = len(m.group(1))
            out.append(f'<h{level} id="{html.escape(slug(m.group(2)))}">{inline(m.group(2))}</h{level}>')
            i += 1
        elif _is_table_start(lines, i):
            block, i = _table(lines, i)
            out.append(block)
        elif _ITEM.match(line):
            block, i = _list(lines, i)
            out.append(block)
        else:
            para = [line]
            i += 1
            while i < len(lines) and not _starts_block(lines, i):
                para.append(lines[i])
                i += 1
            out.append(_paragraph(para))
    return "\n".join(out)
