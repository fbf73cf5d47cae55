"""What measuring costs: the same case with process-tree memory sampling off, at the default, and dense.

Reading PSS walks every page table of every process in the tree (about 10 ms per torch process), so the
sampler thread's own CPU time during the pass is recorded: ``sampler_cpu_fraction`` is its CPU seconds over the
machine's CPU capacity while the passes ran. The default (2 s, no start mark) takes its snapshots outside the
clock for passes shorter than the interval; the dense setting (250 ms and a start mark, as the memory cases
use) shows what sampling would cost every case. Rounds are interleaved, so the three throughputs compare.
"""

from __future__ import annotations

import pytest

from lfw.suite.matrix import GROUPS

GROUP = GROUPS["overhead"]
pytestmark = pytest.mark.benchmark(group=GROUP.name)


@pytest.mark.parametrize(GROUP.argnames, GROUP.argvalues, ids=GROUP.ids)
def test_memory_sampling_overhead(rotated_case, sampling: str) -> None:
    info = rotated_case()
    assert ("pss_end_mib" in info) == (sampling != "sampling-off")  # off means no memory record at all
    if sampling != "sampling-off":
        assert info["pss_end_mib"] > info["uss_end_mib"] > 0
