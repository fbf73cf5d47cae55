"""Reports: saved pytest-benchmark runs to errorbar charts and a one-page summary.

``python -m lfw.report [RUN.json ...] --out reports/`` reads runs (:mod:`.load`), draws every chart the run
has data for (:mod:`.render`; one module per chart family), writes ``README.md`` (:mod:`.summary`) and prints
a compact table (:mod:`.console`). With a baseline and a current run it also draws the comparison and a
verdict per case, the regression gate's own (:mod:`.verdict`). Runs are read through :mod:`lfw.results`.
"""

from lfw.report.render import Report, build_report
from lfw.report.summary import write_summary
from lfw.results import Case, Run, latest_run, load_run

__all__ = ["Case", "Report", "Run", "build_report", "latest_run", "load_run", "write_summary"]
