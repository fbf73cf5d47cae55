"""The gate's verdict on the HTML page, rendered from the :class:`~lfw.gate.verdict.Verdict` itself.

The same parts as the gate's Markdown page, walked by the same :func:`lfw.gate.summary.verdict_sections` and laid
out as HTML by :class:`HtmlLayout`, after the headline, what its exit code means and the runs judged. Every text is
escaped (:func:`html.escape`): a case name or a gate note cannot inject markup. Nothing is compared here.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from lfw.gate.summary import EXIT_MEANING, STATUS, Layout, sides_text, verdict_sections
from lfw.gate.verdict import Verdict


def esc(text: object) -> str:
    """Escaped text; a Markdown code span of the gate's cells (```name```) becomes ``<code>``."""
    parts = str(text).split("`")
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


class HtmlLayout(Layout):
    """The Markdown page's parts as HTML: nothing folded, every text escaped."""

    def heading(self, text: str) -> list[str]:
        return [f"<h3>{esc(text)}</h3>"]

    def table(self, header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = "\n".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
        return [f'<div class="scroll"><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>']

    def para(self, text: str) -> list[str]:
        return [f"<p>{esc(text)}</p>"]

    def bullets(self, items: Sequence[str]) -> list[str]:
        return ["<ul>", *(f"<li>{esc(item)}</li>" for item in items), "</ul>"] if items else []

    def fold(self, title: str, lines: list[str]) -> list[str]:
        return lines

    def case_list(self, title: str, items: Sequence[str], *, alarm: bool = False) -> list[str]:
        if not items:
            return []
        return [f"<p><strong>{esc(title)}</strong></p>" if alarm else f"<p>{esc(title)}</p>", *self.bullets(items)]


def verdict_html(v: Verdict) -> str:
    """The verdict as an HTML fragment (see the module docstring)."""
    status = STATUS.get(v.exit_code, "error")
    out = [f"<p><strong>{esc(v.headline)}</strong><br>",
           f"{esc(v.mode)}: {esc(status)} (exit {v.exit_code}: {esc(EXIT_MEANING.get(v.exit_code, 'error'))})</p>"]
    if v.error:
        out.append(f"<p>error: {esc(v.error)}</p>")
    out.append(f"<p>{esc(sides_text(v))}<br>{esc(v.setup)}</p>")
    return "\n".join([*out, *verdict_sections(v, HtmlLayout())])
