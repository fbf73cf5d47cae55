"""What measuring costs: the same case with process-tree memory sampling off and on.

Reading PSS walks every page table of every process in the tree, so the sampler thread's own CPU time is
recorded (``sampler_cpu_fraction``: its CPU seconds over the machine's CPU capacity during the passes); the
throughput of the two cases is compared in the report.
"""

from __future__ import annotations

import pytest

from lfw.measure import LoaderConfig
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S

pytestmark = pytest.mark.benchmark(group="overhead")


@pytest.mark.parametrize("sampling", [False, True], ids=["sampling-off", "sampling-on"])
def test_memory_sampling_overhead(run_case, sampling: bool) -> None:
    interval = DEFAULT_MEMORY_INTERVAL_S if sampling else None
    info = run_case(LoaderConfig(batch_size=64, num_workers=2), "none", memory_interval_s=interval)
    assert ("sampler_cpu_fraction" in info) == sampling
