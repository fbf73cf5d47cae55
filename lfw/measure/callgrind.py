"""Callgrind's client requests from Python: switch instruction counting on and off around the work that matters.

The requests are macros of ``<valgrind/callgrind.h>``, so a few-line C helper (:data:`SOURCE`) is compiled on
first use into the cache folder and loaded with :mod:`ctypes`; outside valgrind they are no-ops. It needs
valgrind, its headers and a C compiler: :func:`unavailable_reason` says in one line which one is missing."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sysconfig
from functools import cache
from pathlib import Path

from lfw.cli.saving import write_atomic
from lfw.errors import LFWError

HEADER = Path("/usr/include/valgrind/callgrind.h")
SOURCE = """\
#include <valgrind/callgrind.h>
void lfw_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void lfw_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void lfw_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


def valgrind_version() -> str | None:
    """``valgrind-3.19.0``, or None when valgrind is not installed."""
    exe = shutil.which("valgrind")
    if exe is None:
        return None
    result = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return result.stdout.strip() or None


def compiler() -> str | None:
    """The C compiler Python was built with (``cc`` if that is not on PATH), or None."""
    configured = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(configured) or shutil.which("cc")


def unavailable_reason() -> str | None:
    """Why instructions cannot be counted here (one line naming the fix), or None when they can."""
    if valgrind_version() is None:
        return "valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)"
    if not HEADER.exists():
        return f"valgrind's headers are missing ({HEADER}); install the distribution's valgrind package"
    if compiler() is None:
        return "no C compiler to build the callgrind helper (Debian/Ubuntu: apt-get install gcc)"
    return None


def helper_path(cache_dir: Path) -> Path:
    """Where the compiled helper lives: named by a hash of its source, so a changed source is rebuilt."""
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:12]
    return cache_dir / f"callgrind-requests-{digest}.so"


def build_helper(cache_dir: Path) -> Path:
    """Compile the helper into ``cache_dir`` unless it is there already; returns its path."""
    target = helper_path(cache_dir)
    if target.exists():
        return target
    if reason := unavailable_reason():
        raise LFWError(f"cannot count instructions: {reason}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    source = target.with_suffix(".c")
    write_atomic(source, SOURCE)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    result = subprocess.run([compiler() or "cc", "-O2", "-shared", "-fPIC", "-o", str(partial), str(source)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        message = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise LFWError(f"cannot build the callgrind helper: {message}")
    partial.replace(target)  # atomic: a concurrent build never leaves a half-written library behind
    return target


class Requests:
    """The client requests, loaded from the compiled helper."""

    def __init__(self, library: Path) -> None:
        self._lib = ctypes.CDLL(str(library))
        self._lib.lfw_dump.argtypes = [ctypes.c_char_p]

    def start(self) -> None:
        self._lib.lfw_start()

    def stop(self) -> None:
        self._lib.lfw_stop()

    def dump(self, label: str) -> None:
        """Write the counts collected since the last dump to a new file, its ``desc:`` naming ``label``."""
        self._lib.lfw_dump(label.encode())


@cache
def requests(cache_dir: str) -> Requests:
    return Requests(build_helper(Path(cache_dir)))
