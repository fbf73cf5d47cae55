"""Reports: saved pytest-benchmark runs to errorbar charts and a one-page summary.

``python -m lfw.report [RUN.json ...] --out reports/`` reads runs through :mod:`lfw.results` (the one model of
saved results), draws every chart the run has data for (:mod:`.render`; one module per chart family), writes
the summary page ``README.md`` (:mod:`.page`) and the same as HTML, ``index.html``, with every chart shown
(:mod:`.html_page`), and prints a compact table (:mod:`.console`). With a baseline and
a current run it also draws the comparison and a verdict per case, the regression gate's own (:mod:`.verdict`).
"""

from lfw.report.html_page import write_html
from lfw.report.page import write_summary
from lfw.report.render import Report, build_report
from lfw.results import Case, Run, latest_run, load_run

__all__ = ["Case", "Report", "Run", "build_report", "latest_run", "load_run", "write_html", "write_summary"]
