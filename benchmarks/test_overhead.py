"""What measuring costs: the same case with process-tree memory sampling off, at the default, and dense.

Reading PSS walks every page table of every process in the tree (milliseconds of CPU per torch process), so
the sampler thread's own CPU time during the pass is recorded: ``sampler_cpu_fraction`` is its CPU seconds over
the machine's CPU capacity while the passes ran. The default (``DEFAULT_MEMORY_INTERVAL_S`` of
:mod:`lfw.measure.loader_pass`, no start mark) takes its snapshots outside the clock for passes shorter than the
interval; the dense setting (``SAMPLING`` in :mod:`lfw.suite.matrix`: a short interval and a start mark, as the
memory experiments sample) shows what sampling would cost every case. Rounds are interleaved, so the three
throughputs compare; the measured costs are in docs/methodology.md.
"""

from __future__ import annotations

import pytest

from lfw.results import keys as K
from lfw.suite.matrix import GROUPS, SAMPLING

GROUP = GROUPS["overhead"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_memory_sampling_overhead(rotated_case, sampling: str) -> None:
    info = rotated_case()
    interval, mark_start = SAMPLING[sampling]
    assert (K.PSS_END_MIB in info) == (interval is not None)  # off means no memory record at all
    if interval is not None:
        # The start mark taken exactly when asked; samples inside the clock: that mark and at most one per
        # interval of the longest round (one more for a sample between the clock's stop and the sampler's).
        marks = 1 if mark_start else 0
        assert info[K.MEMORY_START_MARKS] == marks
        assert info[K.MEMORY_SAMPLES] <= marks + max(info[K.rounds(K.WALL_S)]) / interval + 1
