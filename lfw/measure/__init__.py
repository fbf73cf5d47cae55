"""Measurement: the one primitive that the CLI, the benchmarks and every tool share, usable on any DataLoader.

    from lfw.measure import measure_pass
    result = measure_pass(loader, batches=20)   # a PassResult: images_per_s, ttfb_s, waits, memory, CPU

- :mod:`lfw.measure.loader_pass`: one timed pass over K batches from a fresh iterator (:func:`measure_pass`,
  :class:`LoaderPass` for repeated passes), and its keyword-built :class:`PassResult`.
- :mod:`lfw.measure.loader_config`: a DataLoader configuration, validated, and how to build it.
- :mod:`lfw.measure.memory`: memory of the whole process tree (RSS, PSS, USS), sampled in the background.
- :mod:`lfw.measure.torch_compat`: the few DataLoader internals read (worker pids, stopping workers).
- :mod:`lfw.measure.ceiling`, :mod:`lfw.measure.capacity`: the single-core rate of the loading work, and the
  cores the machine gives in a round.
- :mod:`lfw.measure.rotation`: interleaved rounds of many members, and the timer that replays them.
- :mod:`lfw.measure.cost`, :mod:`lfw.measure.moves`: instructions per image under valgrind, and what a pipeline
  moves per image.
- :mod:`lfw.measure.leak`: memory per epoch and a verdict; :mod:`lfw.measure.page_cache`: warm or cold files;
  :mod:`lfw.measure.machine`: what a result depends on (versions, cores, JPEG library).

Importing it needs torch, not torchvision.
"""

from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import LoaderPass, PassResult, measure_pass

__all__ = ["LoaderConfig", "LoaderPass", "PassResult", "measure_pass"]
