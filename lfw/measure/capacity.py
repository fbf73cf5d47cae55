"""How many cores the machine gives right now: a fixed CPU workload in one process, then in N at once.

The single-core ceiling cannot see a machine that gives fewer cores than the affinity mask promises (a hypervisor
taking one of two vCPUs for a while), and a gate on efficiency would call that loss a code regression. This member
of each rotation measures the round's ``capacity = N x t_1 / t_N``: a fixed workload (SHA-256, which no code under
test runs) in one forked process against ``N = usable_cores`` at once; docs/gating.md (wall clock) says how the
ceiling uses it.
"""

from __future__ import annotations

import hashlib
import os
import time

from lfw.measure.loader_pass import PassResult
from lfw.results import keys as K

BLOCK = bytes(1 << 20)  # 1 MiB of zeros: hashing it is pure CPU, the same work everywhere
UNITS = 48  # blocks per process per measurement: tens of milliseconds on a current core


def timed_in_processes(processes: int, units: int = UNITS) -> float:
    """Wall seconds for ``processes`` forked children, started together, to each hash ``units`` blocks."""
    t0 = time.perf_counter()
    children = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:  # the child: the work, then out without running the parent's exit handlers
            try:
                for _ in range(units):
                    hashlib.sha256(BLOCK).digest()
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return time.perf_counter() - t0


class ParallelCapacity:
    """A rotation member: each ``measure()`` gives the round's parallel capacity in ``extra``."""

    def __init__(self, processes: int, units: int = UNITS) -> None:
        self.processes = max(1, processes)
        self.units = units

    def measure(self) -> PassResult:
        one = timed_in_processes(1, self.units)
        many = timed_in_processes(self.processes, self.units)
        capacity = self.processes * one / many if many > 0 else float(self.processes)
        return PassResult(images=self.processes * self.units, batches=0, wall_s=many, ttfb_s=0.0,
                          extra={K.PARALLEL_CAPACITY: capacity})

    def close(self) -> None:
        pass
