"""Measurement: the one primitive that the CLI, the benchmarks and every tool share, usable on any DataLoader.

    from lfw.measure import measure_pass
    result = measure_pass(loader, batches=20)   # a PassResult: images_per_s, ttfb_s, waits, memory, CPU

:func:`measure_pass` times one pass over K batches from a fresh iterator (:class:`LoaderPass` repeats passes);
what the other modules hold is listed in docs/methodology.md (Inside the library). Importing it needs torch, not
torchvision.
"""

from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import LoaderPass, PassResult, measure_pass

__all__ = ["LoaderConfig", "LoaderPass", "PassResult", "measure_pass"]
