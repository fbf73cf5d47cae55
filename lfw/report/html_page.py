"""The HTML page, ``<out>/index.html``: the summary page's sections with every chart shown, the gate, the history.

One static file read offline (no server, no script); images by relative path, not inlined: the PNGs are in the
folder anyway, so the page stays tens of KB (keep the folder together). The sections are :mod:`lfw.report.page`'s,
written by the one HTML writer (:func:`lfw.cli.sections.html`, every text escaped), so the two pages cannot
disagree; this module adds only the layout, the charts shown as figures, the gate's verdict (the blocks of its own
page, :func:`lfw.gate.summary.verdict_blocks`) and the ``history/`` charts. See docs/reports.md ("The HTML page").
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from string import Template

from lfw.cli.figures import ChartSpec
from lfw.cli.saving import write_atomic
from lfw.cli.sections import Block, Bullets, Figure, Para, Section, html, inline, slug
from lfw.gate.summary import verdict_blocks
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


def image_file(files: list[Path]) -> Path | None:
    """The file an ``<img>`` shows: PNG when written, else SVG; None when neither was (no image to show)."""
    return next((p for suffix in IMAGE_PREFERENCE for p in files if p.suffix == suffix), None)


def chart_figure(spec: ChartSpec, files: list[Path]) -> Figure:
    """One chart: the image, then its title, what to read off it, and a link to each format written."""
    shown = image_file(files)
    return Figure(shown.name if shown else None, spec.title, f"**{spec.title}**: {spec.shows}. ({format_links(files)})",
                  f"chart-{spec.stem}")


def charts_section(report: Report) -> Section:
    """Every chart drawn, with its caption, in the order the report drew them; then the skipped ones."""
    blocks: list[Block] = [chart_figure(spec, files) for spec, files in report.charts]
    notes = chart_notes(report)
    if notes:
        blocks.append(Bullets(notes))
    if not report.charts:
        blocks.insert(0, Para("No chart: this run has data for none of them."))
    return Section("Charts", blocks)


def history_section(out: Path) -> Section:
    """The charts found under ``<out>/history/*.png`` (sorted by name, captioned by it; an SVG beside one is
    linked), or a sentence saying there are none. Whatever is there is shown; nothing is drawn here."""
    folder = out / HISTORY
    pngs = sorted(folder.glob("*.png")) if folder.is_dir() else []
    if not pngs:
        return Section("History", [Para(f"No history charts: `{HISTORY}/` beside this page holds no PNG. The "
                                        "report's `--history` option draws trends across saved runs there.")])
    figures: list[Block] = []
    for png in pngs:
        files = [png, *([svg] if (svg := png.with_suffix(".svg")).is_file() else [])]
        title = png.stem.replace("-", " ").replace("_", " ")
        caption = f"**{title[:1].upper()}{title[1:]}** ({format_links(files, HISTORY + '/')})"
        figures.append(Figure(f"{HISTORY}/{png.name}", title, caption, f"history-{slug(png.stem)}"))
    return Section("History", figures)


def gate_section(shown: ShownVerdict | None) -> Section | None:
    """The gate's verdict of these runs, or the line saying none matches; None when there is neither."""
    if shown is None:
        return None
    if shown.verdict is not None:
        judged = shown.verdict.current.path if shown.verdict.current is not None else "no run"
        return Section("Gate verdict", [Para(f"The gate's verdict of `{judged}`."), *verdict_blocks(shown.verdict)])
    if shown.note:
        return Section("Gate verdict", [Para(shown.note)])
    return None


def sections(report: Report, shown: ShownVerdict | None = None) -> list[Section]:
    """The page's sections in reading order: findings, the gate, the baseline, charts, history, cases, machine."""
    f = report.findings
    found = [incomplete_section(f), findings_section(report), peers_section(report.run), gate_section(shown),
             verdicts_section(report), charts_section(report), history_section(report.out),
             cases_section(report.run), left_out_section(f), machine_section(report.run)]
    return [s for s in found if s is not None]


def html_page(report: Report, shown: ShownVerdict | None = None) -> str:
    """The whole page as one HTML document: no script, images by relative path, all text escaped."""
    parts = sections(report, shown)
    nav = "".join(f'<a href="#{escape(s.id)}">{inline(s.title)}</a>' for s in parts)
    return PAGE.substitute(title=escape(f"lfw-bench report: {report.run.path.name}"), style=STYLE,
                           run=html([Para(f"Run {run_line(report.run)}.")]), nav=nav, sections=html(parts),
                           footer=html([Para(FOOTER)]))


def write_html(report: Report, shown: ShownVerdict | None = None) -> Path:
    """Write ``<out>/index.html`` (replacing any) and return its path; ``shown`` as
    :func:`lfw.report.verdict.shown_verdict` gives."""
    return write_atomic(report.index, html_page(report, shown))
