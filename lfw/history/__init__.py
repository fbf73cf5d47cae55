"""The history of saved runs: a store of one line per run and runner class (:mod:`.store`), the change points
in it (:mod:`.changepoints`), charted and summarized by :func:`history_report` (:mod:`.report`, imported on first
use). Docs: docs/history.md.
"""

from __future__ import annotations

from lfw import lazy_exports
from lfw.history.store import History, HistoryRecord, append_run, load_history

__all__ = ["History", "HistoryRecord", "HistoryReport", "append_run", "history_report", "load_history"]
__getattr__ = lazy_exports(__name__, {"HistoryReport": "lfw.history.report", "history_report": "lfw.history.report"})
