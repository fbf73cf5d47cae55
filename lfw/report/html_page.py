"""The HTML page, ``<out>/index.html``: the summary page's sections with every chart shown, the gate, the history.

One static file read offline (no server, no script); images by relative path, not inlined: the PNGs are in the
folder anyway, so the page stays tens of KB (keep the folder together). The words are :mod:`lfw.report.page`'s,
converted by :mod:`lfw.report.markdown_html`, so the two pages cannot disagree; this module adds only the layout,
the gate's verdict (:mod:`lfw.report.verdict_html`) and the ``history/`` charts, every text escaped. See
docs/reports.md ("The HTML page").
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from string import Template
from urllib.parse import quote

from lfw.cli.figures import ChartSpec
from lfw.cli.saving import write_atomic
from lfw.report.markdown_html import slug, to_html
from lfw.report.page import (
    FOOTER,
    cases_section,
    chart_notes,
    findings_section,
    format_links,
    incomplete_section,
    left_out_section,
    machine_section,
    peers_section,
    run_line,
    verdicts_section,
)
from lfw.report.render import Report
from lfw.report.verdict import ShownVerdict
from lfw.report.verdict_html import verdict_html

HISTORY = "history"  # <out>/history/*.png: trend charts across saved runs, drawn by the history command
IMAGE_PREFERENCE = (".png", ".svg")  # what an <img> shows when a chart was written in several formats

STYLE = """
body { margin: 0; color: #1f2328; background: #fff;
       font: 15px/1.5 system-ui, "Segoe UI", Helvetica, Arial, sans-serif; }
header, main, footer { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 16px; }
h1 { margin: 0 0 4px; font-size: 26px; }
h2 { margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; font-size: 21px; }
h3, h4, h5, h6 { margin: 20px 0 6px; font-size: 16px; }
nav { margin: 8px 0 12px; }
nav a { margin-right: 14px; white-space: nowrap; }
a { color: #0969da; }
code { font: 13px ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; background: #f3f4f6;
       padding: 0 3px; border-radius: 3px; }
pre { background: #f6f8fa; padding: 8px 12px; overflow-x: auto; }
pre code { background: none; padding: 0; }
.scroll { overflow-x: auto; }
table { display: block; width: max-content; max-width: 100%; overflow-x: auto; border-collapse: collapse;
        margin: 8px 0 16px; font-size: 14px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; vertical-align: top; text-align: left; }
th { background: #f6f8fa; }
th[style*="right"], td[style*="right"] { font-variant-numeric: tabular-nums; white-space: nowrap; }
li { margin: 3px 0; }
figure { margin: 20px 0 28px; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { margin-top: 6px; color: #424a53; }
figcaption p { margin: 0; }
.note { color: #59636e; }
footer { margin-top: 32px; padding-bottom: 24px; color: #59636e; }
footer p { border-top: 1px solid #d0d7de; padding-top: 8px; }
"""

PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>$title</title>
<style>$style</style>
</head>
<body>
<header>
<h1>lfw-bench report</h1>
$run
<nav>$nav</nav>
</header>
<main>
$sections
</main>
<footer>$footer</footer>
</body>
</html>
""")


@dataclass(frozen=True)
class Section:
    """One ``<section>`` of the page: its anchor (``id``), its heading text and its body (HTML, escaped)."""

    id: str
    title: str
    body: str

    def html(self) -> str:
        return (f'<section id="{html.escape(self.id)}">\n<h2>{html.escape(self.title)}</h2>\n{self.body}\n'
                "</section>")


def from_markdown(lines: list[str]) -> Section | None:
    """A page section (``## Title`` then its body, as :mod:`lfw.report.page` writes them); None for no lines."""
    if not lines:
        return None
    title = lines[0].removeprefix("## ").strip()
    return Section(slug(title), title, to_html("\n".join(lines[1:])))


def image_file(files: list[Path]) -> Path | None:
    """The file an ``<img>`` shows: PNG when written, else SVG; None when neither was (no image to show)."""
    return next((p for suffix in IMAGE_PREFERENCE for p in files if p.suffix == suffix), None)


def figure(src: str, title: str, caption_md: str, anchor: str) -> str:
    """A ``<figure>``: the image at relative URL ``src`` (quoted here), alt text ``title``, and a caption
    written in Markdown (escaped on conversion)."""
    return (f'<figure id="{html.escape(anchor)}">\n<img src="{html.escape(quote(src))}" alt="{html.escape(title)}">\n'
            f"<figcaption>{to_html(caption_md)}</figcaption>\n</figure>")


def chart_figure(spec: ChartSpec, files: list[Path]) -> str:
    """One chart: the image, then its title, what to read off it, and a link to each format written."""
    shown = image_file(files)
    caption = f"**{spec.title}**: {spec.shows}. ({format_links(files)})"
    if shown is None:
        return f'<div id="chart-{html.escape(spec.stem)}">{to_html(caption)}</div>'
    return figure(shown.name, spec.title, caption, f"chart-{spec.stem}")


def charts_section(report: Report) -> Section:
    """Every chart drawn, with its caption, in the order the report drew them; then the skipped ones."""
    parts = [chart_figure(spec, files) for spec, files in report.charts]
    notes = chart_notes(report)
    if notes:
        parts.append(to_html("\n".join(notes)))
    if not report.charts:
        parts.insert(0, '<p class="note">No chart: this run has data for none of them.</p>')
    return Section("charts", "Charts", "\n".join(parts))


def history_section(out: Path) -> Section:
    """The charts found under ``<out>/history/*.png`` (sorted by name, captioned by it; an SVG beside one is
    linked), or a sentence saying there are none. Whatever is there is shown; nothing is drawn here."""
    folder = out / HISTORY
    pngs = sorted(folder.glob("*.png")) if folder.is_dir() else []
    if not pngs:
        return Section("history", "History", f'<p class="note">No history charts: <code>{HISTORY}/</code> beside '
                                              "this page holds no PNG. The report's <code>--history</code> option "
                                              "draws trends across saved runs there.</p>")
    parts = []
    for png in pngs:
        files = [png, *([svg] if (svg := png.with_suffix(".svg")).is_file() else [])]
        title = png.stem.replace("-", " ").replace("_", " ")
        caption = f"**{title[:1].upper()}{title[1:]}** ({format_links(files, HISTORY + '/')})"
        parts.append(figure(f"{HISTORY}/{png.name}", title, caption, f"history-{slug(png.stem)}"))
    return Section("history", "History", "\n".join(parts))


def gate_section(shown: ShownVerdict | None) -> Section | None:
    """The gate's verdict of these runs, or the line saying none matches; None when there is neither."""
    if shown is None:
        return None
    if shown.verdict is not None:
        judged = shown.verdict.current.path if shown.verdict.current is not None else "no run"
        source = f'<p class="note">The gate\'s verdict of <code>{html.escape(judged)}</code>.</p>'
        return Section("gate-verdict", "Gate verdict", source + "\n" + verdict_html(shown.verdict))
    if shown.note:
        return Section("gate-verdict", "Gate verdict", f'<p class="note">{html.escape(shown.note)}</p>')
    return None


def sections(report: Report, shown: ShownVerdict | None = None) -> list[Section]:
    """The page's sections in reading order: findings, the gate, the baseline, charts, history, cases, machine."""
    f = report.findings
    found = [from_markdown(incomplete_section(f)),
             from_markdown(findings_section(report)),
             from_markdown(peers_section(report.run)),
             gate_section(shown),
             from_markdown(verdicts_section(report)),
             charts_section(report),
             history_section(report.out),
             from_markdown(cases_section(report.run)),
             from_markdown(left_out_section(f)),
             from_markdown(machine_section(report.run))]
    return [s for s in found if s is not None]


def html_page(report: Report, shown: ShownVerdict | None = None) -> str:
    """The whole page as one HTML document: no script, images by relative path, all text escaped."""
    parts = sections(report, shown)
    nav = "".join(f'<a href="#{html.escape(s.id)}">{html.escape(s.title)}</a>' for s in parts)
    return PAGE.substitute(title=html.escape(f"lfw-bench report: {report.run.path.name}"), style=STYLE,
                           run=to_html(f"Run {run_line(report.run)}."), nav=nav,
                           sections="\n".join(s.html() for s in parts), footer=to_html(FOOTER))


def write_html(report: Report, shown: ShownVerdict | None = None) -> Path:
    """Write ``<out>/index.html`` (replacing any) and return its path; ``shown`` as
    :func:`lfw.report.verdict.shown_verdict` gives."""
    return write_atomic(report.index, html_page(report, shown))
