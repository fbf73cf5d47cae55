"""Is training data-bound? Measure the wait for data (:mod:`.training`), predict it with a simulator
(:mod:`.simulator`, :mod:`.predict`), draw the timeline (:mod:`.timeline`), or ``watch(loader)`` a user's own loop
(:mod:`.watcher`, loaded on first use so that importing this package stays light). Docs: docs/diagnose.md.
"""

from lfw import lazy_exports
from lfw.diagnose.simulator import PipelineModel, SimResult, simulate, workers_to_end_stalls

__all__ = ["PipelineModel", "SimResult", "Watch", "simulate", "watch", "workers_to_end_stalls"]
__getattr__ = lazy_exports(__name__, {"watch": "lfw.diagnose.watcher", "Watch": "lfw.diagnose.watcher"})
