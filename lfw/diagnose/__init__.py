"""Is training data-bound? Measure the wait for data, predict it with a simulator, draw the timeline.

- :mod:`lfw.diagnose.training`: a training loop (sleeping or a small CNN) measured by LoaderPass, with
  worker-side load times from instrumented workers (:mod:`lfw.diagnose.events`);
- :mod:`lfw.diagnose.simulator`: a discrete-event model of workers, prefetch queue and training loop;
- :mod:`lfw.diagnose.predict`: the measurement fed to the simulator, the verdict and the recommendation;
- :mod:`lfw.diagnose.timeline`: the chart (and GIF) of a run, measured and simulated side by side;
- :mod:`lfw.diagnose.watcher`: ``watch(loader)``, the same question put to a user's own training loop
  (:class:`~lfw.diagnose.watcher.Watch`), loaded on first use so that importing this package stays light;
- ``python -m lfw.diagnose``: the command line.
"""

from lfw import lazy_exports
from lfw.diagnose.simulator import PipelineModel, SimResult, simulate, workers_to_end_stalls

__all__ = ["PipelineModel", "SimResult", "Watch", "simulate", "watch", "workers_to_end_stalls"]
__getattr__ = lazy_exports(__name__, {"watch": "lfw.diagnose.watcher", "Watch": "lfw.diagnose.watcher"})
