"""Reading the cost layer's counts from its command-line tool, and stopping a count with everything it started.

The A/B gate (:mod:`lfw.gate.ab_counts`) and bisect (:mod:`lfw.gate.bisect`) both run ``python -m
lfw.measure.cost`` in another checkout and read its last line, ``{"counts": {CASE: {"instructions": N,
"images": M, "moves": {...}}}}``; both run it in its own process group, so valgrind and its child end with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess

from lfw.errors import MeasurementError
from lfw.gate.metrics import INSTRUCTIONS
from lfw.measure.cost import last_line


def per_image_counts(output: str, where: str) -> dict[str, dict[str, float]]:
    """Per case, every count per image from the cost CLI's last line: instructions / images, and the moves."""
    try:
        found = json.loads(output.strip().splitlines()[-1])["counts"]
        return {str(case): {INSTRUCTIONS.key: c["instructions"] / c["images"], **c.get("moves", {})}
                for case, c in found.items()}
    except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError):
        raise MeasurementError(f"the count at {where} wrote no counts: {last_line(output)[:120]}") from None


def kill_group(proc: subprocess.Popen[str]) -> None:
    """Stop a counting process started with ``start_new_session=True`` and everything it started (valgrind, its
    child): its whole process group, politely first."""
    if proc.poll() is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the leader gone, members left: end them
        os.killpg(proc.pid, signal.SIGKILL)
