"""What measuring costs: the same case with process-tree memory sampling off, at the default, and dense.

Reading PSS walks every page table of every process in the tree (about 10 ms per torch process), so the
sampler thread's own CPU time during the pass is recorded: ``sampler_cpu_fraction`` is its CPU seconds over the
machine's CPU capacity while the passes ran. The default (2 s, no start mark) takes its snapshots outside the
clock for passes shorter than the interval; the dense setting (250 ms and a start mark, as the memory cases
use) shows what sampling would cost every case. Throughput of the three is compared in the report.
"""

from __future__ import annotations

import pytest

from lfw.measure import LoaderConfig
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S

pytestmark = pytest.mark.benchmark(group="overhead")

SAMPLING = {"sampling-off": (None, False), "sampling-default": (DEFAULT_MEMORY_INTERVAL_S, False),
            "sampling-dense": (0.25, True)}


@pytest.mark.parametrize("sampling", list(SAMPLING))
def test_memory_sampling_overhead(run_case, sampling: str) -> None:
    interval, mark = SAMPLING[sampling]
    info = run_case(LoaderConfig(batch_size=64, num_workers=2), "none", memory_interval_s=interval, mark_start=mark)
    assert ("pss_end_mib" in info) == (interval is not None)  # off means no memory record at all
    if interval is not None:
        assert info["pss_end_mib"] > info["uss_end_mib"] > 0
