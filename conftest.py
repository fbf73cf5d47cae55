"""The benchmarks' pytest wiring lives in one plugin module, :mod:`benchmarks.plugin` (options, hooks, thin
fixtures over the suite engine); loading it here makes it apply to ``pytest`` from the repository root, ``make
test`` and ``make bench`` alike.

Thread counts are pinned here, before anything imports torch: one intra-op thread in the main process (more
made float conversion slower and much noisier on 2 cores), and DataLoader workers use one each.
"""

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

pytest_plugins = ("benchmarks.plugin",)
