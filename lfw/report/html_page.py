"""The HTML page, ``<out>/index.html``: :func:`~lfw.report.page.html_sections` in one static document written by
:func:`lfw.cli.sections.html`: no script, images by relative path (keep the folder together). See docs/reports.md.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from string import Template

from lfw.cli.saving import write_atomic
from lfw.cli.sections import Para, Section, html, inline
from lfw.report.page import FOOTER, html_sections, run_line
from lfw.report.render import Report
from lfw.report.verdict import ShownVerdict

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


def html_page(report: Report, shown: ShownVerdict | None = None) -> str:
    """The whole page as one HTML document: no script, images by relative path, all text escaped."""
    parts = html_sections(report, shown)
    nav = "".join(f'<a href="#{escape(s.id)}">{inline(s.title)}</a>' for s in parts if isinstance(s, Section))
    return PAGE.substitute(title=escape(f"lfw-bench report: {report.run.path.name}"), style=STYLE,
                           run=html([Para(f"Run {run_line(report.run)}.")]), nav=nav, sections=html(parts),
                           footer=html([Para(FOOTER)]))


def write_html(report: Report, shown: ShownVerdict | None = None) -> Path:
    """Write ``<out>/index.html`` (replacing any) and return its path; ``shown`` as
    :func:`lfw.report.verdict.shown_verdict` gives."""
    return write_atomic(report.index, html_page(report, shown))
