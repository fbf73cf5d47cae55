"""Memory timelines in memory-profiler's ``mprof`` format (``mprof plot reports/mprof/<case>.dat``): one ``.dat``
per case with a sampled timeline, ``MEM`` the tree's PSS, one ``CHLD`` series the workers' mean USS, unix time stamps
(from the pass's start in runs that did not record it).
"""

from __future__ import annotations

import re
from pathlib import Path

from lfw.cli.saving import write_atomic
from lfw.results import Case, Run
from lfw.results import keys as K

FOLDER = "mprof"
WORKERS_SERIES = "1"  # mprof labels a CHLD series by its id; one series: the workers' mean USS


def mprofile_text(case: Case) -> str | None:
    """The ``.dat`` content for ``case``, or None when it has no sampled timeline."""
    timeline = case.extra.get(K.TIMELINE)
    if not isinstance(timeline, dict) or len(timeline.get("t") or []) < 2:
        return None
    start = timeline.get("start_unix")
    offset = float(start) if isinstance(start, int | float) and start > 0 else 0.0
    times = [offset + float(t) for t in timeline["t"]]
    pss, workers = timeline.get("pss") or [], timeline.get("worker_uss") or []
    clock = "unix time" if offset else "time from the start of the pass"
    lines = [f"CMDLINE lfw-bench {case.fullname}: MEM = process-tree PSS (MiB), CHLD {WORKERS_SERIES} = mean "
             f"DataLoader worker USS (MiB); {clock}"]
    lines += [f"MEM {m:.3f} {t:.4f}" for m, t in zip(pss, times, strict=False)]
    lines += [f"CHLD {WORKERS_SERIES} {w:.3f} {t:.4f}" for w, t in zip(workers, times, strict=False) if w > 0]
    return "\n".join(lines) + "\n"


def write_mprofiles(run: Run, out: Path) -> list[Path]:
    """One ``.dat`` per case with a timeline, in ``out/mprof/``; stale files from an earlier report removed."""
    folder = out / FOLDER
    written = []
    for case in run.cases:
        text = mprofile_text(case)
        if text is not None:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / (re.sub(r"[^A-Za-z0-9_.-]+", "-", case.short_name).strip("-") + ".dat")
            write_atomic(path, text)
            written.append(path)
    if folder.is_dir():
        for stale in set(folder.glob("*.dat")) - set(written):
            stale.unlink()
    return written
