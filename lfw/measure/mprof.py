"""memory-profiler's own sampler around a piece of work, written in its ``mprof`` format for ``mprof plot``.

``python -m lfw -get_timing -mprof FILE`` times the passes inside :func:`record` : memory-profiler's
``memory_usage`` watches this process and its children (the DataLoader workers) from a sampling process of its
own, every ``interval`` seconds, with its ``psutil_pss`` backend, so forked workers' shared pages are split among
them rather than counted once per worker as RSS would. The samples are the tree's PSS in MiB with their time stamps,
written as ``MEM`` lines under a ``CMDLINE`` line, which is the file ``mprof run`` makes and ``mprof plot`` draws.

The sampling process is a child too while it runs, so the tree it reports includes its own share; the suite's own
sampler (:mod:`lfw.measure.memory`) stays the one the benchmarks use.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from lfw.errors import LFWError

T = TypeVar("T")
INTERVAL_S = 0.1


def check_path(path: Path) -> None:
    """Refuse, before any work, a file that cannot be written (a missing folder, a folder in its place)."""
    if path.is_dir():
        raise LFWError(f"-mprof {path} is a folder; give a file name such as lfw_timing.dat")
    if not path.parent.is_dir():
        raise LFWError(f"-mprof {path}: the folder {path.parent} does not exist")


def record(work: Callable[[], T], path: Path, interval: float = INTERVAL_S) -> T:
    """Run ``work`` once while memory-profiler samples the process tree's PSS; write the samples to ``path``."""
    from memory_profiler import memory_usage

    samples, result = memory_usage((work, (), {}), interval=interval, timestamps=True, include_children=True,
                                   backend="psutil_pss", retval=True, max_iterations=1)
    lines = [f"CMDLINE {' '.join(sys.argv)}"] + [f"MEM {mib:.6f} {t:.4f}" for mib, t in samples]
    path.write_text("\n".join(lines) + "\n")
    return result
