"""Measurement: the one primitive (:class:`LoaderPass`) that the CLI, the benchmarks and every tool share.

- :mod:`lfw.measure.loader_config`: a DataLoader configuration, validated, and how to build it.
- :mod:`lfw.measure.memory`: memory of the whole process tree (RSS, PSS, USS), sampled in the background.
- :mod:`lfw.measure.loader_pass`: one timed pass over K batches from a fresh iterator, and its result.
- :mod:`lfw.measure.ceiling`: the single-core rate of read + decode + transform, the physical ceiling.
- :mod:`lfw.measure.page_cache`: warm or evict the dataset's files from the page cache.
- :mod:`lfw.measure.machine`: what a result depends on (versions, cores, JPEG library, dataset).
"""

from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import LoaderPass, PassResult, measure_pass

__all__ = ["LoaderConfig", "LoaderPass", "PassResult", "measure_pass"]
