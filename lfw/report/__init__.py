"""Reports: saved pytest-benchmark runs (read through :mod:`lfw.results`) to errorbar charts and a one-page summary
(``python -m lfw.report``). :mod:`.render` draws the charts (the ``chart_*`` modules), :mod:`.page` and
:mod:`.html_page` write ``README.md`` and ``index.html``, :mod:`.console` prints the table, :mod:`.verdict` picks the
gate's verdict to show. See docs/reports.md.
"""

from __future__ import annotations

from lfw import lazy_exports
from lfw.results import Case, Run, latest_run, load_run

__all__ = ["Case", "Report", "Run", "build_report", "latest_run", "load_run", "write_html", "write_summary"]
# The drawing side is imported on first use: a reader of one submodule does not pay for matplotlib's start-up.
__getattr__ = lazy_exports(__name__, {"Report": "lfw.report.render", "build_report": "lfw.report.render",
                                      "write_html": "lfw.report.html_page", "write_summary": "lfw.report.page"})
