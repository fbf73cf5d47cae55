"""The history of saved runs: a store of one line per run and runner class (:mod:`.store`), charts of every
judged metric against commits (:mod:`.chart`) and the change points in them (:mod:`.changepoints`,
:mod:`.series`), summarized by :func:`history_report`. Docs: docs/history.md.

The drawing side (matplotlib, ruptures) is imported on first use, so ``python -m lfw.history append`` stays light.
"""

from __future__ import annotations

from lfw import lazy_exports
from lfw.gate.metrics import JUDGED
from lfw.history.store import History, HistoryRecord, append_run, load_history

__all__ = ["JUDGED", "History", "HistoryRecord", "HistoryReport", "append_run", "history_report", "load_history"]
__getattr__ = lazy_exports(__name__, {"HistoryReport": "lfw.history.report", "history_report": "lfw.history.report"})
