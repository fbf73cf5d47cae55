"""Reports: saved pytest-benchmark runs to errorbar charts and a one-page summary.

``python -m lfw.report [RUN.json ...] --out reports/`` reads runs through :mod:`lfw.results` (the one model of
saved results), draws every chart the run has data for (:mod:`.render`; one module per chart family), writes
the summary page ``README.md`` (:mod:`.page`) and the same as HTML, ``index.html``, with every chart shown
(:mod:`.html_page`), and prints a compact table (:mod:`.console`). With a baseline and
a current run it also draws the comparison and a verdict per case, the regression gate's own, read from the
gate's ``verdict.json`` (:mod:`.verdict`).
"""

from __future__ import annotations

from typing import Any

from lfw.results import Case, Run, latest_run, load_run

__all__ = ["Case", "Report", "Run", "build_report", "latest_run", "load_run", "write_html", "write_summary"]
_LAZY = {"Report": "render", "build_report": "render", "write_html": "html_page", "write_summary": "page"}


def __getattr__(name: str) -> Any:
    """The drawing side is imported on first use, so a reader of one submodule does not pay for every chart module
    and matplotlib's start-up."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"lfw.report.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'lfw.report' has no attribute {name!r}")
