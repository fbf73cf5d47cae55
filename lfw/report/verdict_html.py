"""The gate's verdict on the HTML page, rendered from the :class:`~lfw.gate.verdict.Verdict` itself.

The same content as the gate's Markdown page (:mod:`lfw.gate.summary`), laid out as HTML: the headline and what
its exit code means, the runs judged, the layer table, the regressions, inconclusive comparisons and notable
improvements, what was not judged and the cases missing, left out or new, every case's label, and the
recommended ``num_workers``. Every text is escaped (:func:`html.escape`): a case name or a gate note cannot inject
markup. Nothing is compared here.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from lfw.gate.summary import AB_HEADER, EXIT_MEANING, STATUS, TWO_FILE_HEADER, ab_rows, comparison_rows
from lfw.gate.verdict import TWO_FILE, Verdict
from lfw.results import short_name


def esc(text: object) -> str:
    """Escaped text; a Markdown code span of the gate's cells (```name```) becomes ``<code>``."""
    parts = str(text).split("`")
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>'


def bullets(items: Iterable[str]) -> str:
    shown = [f"<li>{esc(item)}</li>" for item in items]
    return "<ul>\n" + "\n".join(shown) + "\n</ul>" if shown else ""


def heading(text: str) -> str:
    return f"<h3>{esc(text)}</h3>"


def case_list(title: str, items: Sequence[str]) -> list[str]:
    return [f"<p>{esc(title)}: {len(items)}</p>", bullets(items)] if items else []


def comparison_sections(v: Verdict) -> list[str]:
    """The comparisons the gate page lists, in its tables and with its headers."""
    two_file = v.mode == TWO_FILE
    header: tuple[str, ...] = TWO_FILE_HEADER if two_file else AB_HEADER
    render = comparison_rows if two_file else ab_rows
    sections = {"Regressions": (v.regressions, False),
                **({} if two_file else {"Inconclusive (noisy: rerun)": (v.inconclusive, False)}),
                "Notable improvements (reported, not part of the verdict)": (v.improvements, True)}
    out = []
    for title, (rows, better) in sections.items():
        if rows:
            shown = (*header[:5], "the rule the other way", *header[6:]) if better else header
            out += [heading(f"{title}: {len(rows)}"), table(shown, render(rows, better))]
    return out


def verdict_html(v: Verdict) -> str:
    """The verdict as an HTML fragment (see the module docstring)."""
    status = STATUS.get(v.exit_code, "error")
    out = [f"<p><strong>{esc(v.headline)}</strong><br>",
           f"{esc(v.mode)}: {esc(status)} (exit {v.exit_code}: {esc(EXIT_MEANING.get(v.exit_code, 'error'))})</p>"]
    if v.error:
        out.append(f"<p>error: {esc(v.error)}</p>")
    sides = [f"{name} `{i.path}` ({i.cases} cases{f', commit {i.commit[:10]}' if i.commit else ''})"
             for name, i in (("baseline", v.baseline), ("current", v.current)) if i is not None]
    out.append(f"<p>{esc('; '.join(sides))}<br>{esc(v.setup)}</p>")
    if v.layers:
        out += [heading("Layers"), table(("layer", "judged", "comparisons", "why not"),
                                         [(r.layer, r.judged, r.comparisons, r.why_not) for r in v.layers])]
    out += comparison_sections(v)
    notes = [*(f"not judged: {layer}: {why}" for layer, why in v.unjudged.items()), *(f"note: {n}" for n in v.notes),
             *([f"machine info differs: {v.machine_diffs}"] if v.machine_diffs else [])]
    if notes:
        out += [heading("Not judged, missing, left out"), bullets(notes)]
    for title, kept in (("MISSING: baseline cases this run should have held", v.gaps),
                        ("left out on purpose, not compared", v.narrowed)):
        out += case_list(title, [f"`{short_name(n.case)}`: {n.why}" for n in kept])
    out += case_list("new cases, not compared", [f"`{short_name(n)}`" for n in v.new_cases])
    if v.cases:
        counts = ", ".join(f"{n} {label}" for label, n in v.label_counts().items())
        out += [heading("Verdict per case"), f"<p>{esc(counts)}</p>",
                table(("case", "verdict", "detail"), [(f"`{short_name(c.case)}`", c.label, c.detail) for c in v.cases])]
    if v.recommendation:
        out += [heading(f"Recommended num_workers (this run's `{v.recommendation_group}` group)"),
                table(("transform", "num_workers", "each count's paired ratio to the best [interval]"),
                      [(r.transform, r.num_workers, r.evidence) for r in v.recommendation])]
    return "\n".join(out)
