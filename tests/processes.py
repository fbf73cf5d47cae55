"""What the tests ask of a process they made sure to stop."""

from __future__ import annotations

import time

import psutil


def gone_or_zombie(pid: int, guard_s: float) -> bool:
    """Whether ``pid`` has ended (gone, or a zombie left to reap) within ``guard_s``: a signal sent to its group
    lands when the kernel next runs it, which a loaded runner can delay past the moment the caller returns."""
    deadline = time.monotonic() + guard_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False
