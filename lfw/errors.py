"""User-facing errors: one line that names the problem and the fix, and an exit code that says whose it is.

Every command-line entry point wraps its ``main`` with :func:`cli_entry`: ``error: <message>`` on stderr, never a
traceback, and exit 2 (:data:`EXIT_USAGE`), 4 (:data:`EXIT_MEASUREMENT`) or 130 (docs/cli.md, "Exit codes").
:func:`one_line` digs a worker's message back out of PyTorch's re-wrapping, and :func:`private_tmpdir` keeps the
``pymp-*`` folders a killed worker leaves from outliving the command.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Collection, Iterator
from typing import TypeVar, cast

EXIT_USAGE = 2
EXIT_MEASUREMENT = 4

F = TypeVar("F", bound=Callable[..., int | None])
T = TypeVar("T")


class LFWError(Exception):
    """A problem the user can fix: bad folder, bad flag, unreadable image, bad baseline file."""


class MeasurementError(LFWError):
    """The machine, not the input, failed: a measuring process crashed, timed out or wrote nothing. One line like
    every LFWError, but exit :data:`EXIT_MEASUREMENT` (4): CI tells "this runner could not measure" from 2."""

    exit_code = EXIT_MEASUREMENT


class CorruptImageError(LFWError):
    """An image file that PIL cannot decode (truncated, not a JPEG, zero bytes)."""


# The option that skips unreadable images in the entry point that runs (python -m lfw's flag, the suite's pytest
# option), set by it for its corrupt-image errors to name; DataLoader workers and child processes inherit it.
SKIP_OPTION_ENV = "LFW_SKIP_OPTION"


def corrupt_image_fix() -> str:
    """The fix a corrupt-image error ends with: replace the file, or the running entry point's skip option
    (:data:`SKIP_OPTION_ENV`), else the datasets' own ``on_error='skip'``."""
    return "replace the file or use " + (os.environ.get(SKIP_OPTION_ENV) or "on_error='skip'")


def name_skip_option(option: str | None) -> str | None:
    """Make corrupt-image errors name ``option`` (None: the datasets' argument); returns the option it replaces."""
    previous = os.environ.get(SKIP_OPTION_ENV)
    if option is None:
        os.environ.pop(SKIP_OPTION_ENV, None)
    else:
        os.environ[SKIP_OPTION_ENV] = option
    return previous


def check_choice(what: str, value: object, choices: Collection[T], hint: str = "") -> T:
    """``value`` if it is one of ``choices``, else ``unknown <what> <value>; choose one of: ...<hint>`` as an
    LFWError."""
    if value not in choices:
        raise LFWError(f"unknown {what} {value!r}; choose one of: {', '.join(map(str, choices))}{hint}")
    return cast(T, value)


def one_line(exc: BaseException) -> str:
    """The user-facing message of ``exc`` on a single line. PyTorch re-raises a worker's exception as ``Caught X
    in DataLoader worker process 0.\\nOriginal Traceback...``: its last line ``module.X: <message>``, less the class."""
    text = str(exc).strip()
    if "Original Traceback" in text:
        last = text.splitlines()[-1]
        _, sep, message = last.partition(": ")
        text = message if sep else last
    return " ".join(text.split())


# Failures of the machine rather than of the input: (what the message says, what to tell the user).
ENVIRONMENT_FAILURES = (
    ("killed by signal: Killed", "a DataLoader worker was killed (SIGKILL: usually the OOM killer; see dmesg); "
                                 "use fewer workers or a smaller batch"),
    ("killed by signal: Segmentation fault", "a DataLoader worker crashed (segmentation fault in a native "
                                             "library); rerun, and report it with the library versions"),
    ("killed by signal", "a DataLoader worker was killed by a signal"),
    ("exited unexpectedly", "a DataLoader worker died without a Python error (killed, or out of memory); "
                            "check dmesg, use fewer workers or a smaller batch"),
    ("No space left on device", "no space left: /dev/shm (shared memory for worker batches) or the disk is "
                                "full; enlarge /dev/shm (e.g. docker --shm-size) or use fewer workers"),
    ("Too many open files", "too many open files: raise the limit (ulimit -n) or use "
                            "torch.multiprocessing.set_sharing_strategy('file_system')"),
)


def environment_failure(exc: BaseException) -> str | None:
    """The one-line cause if ``exc`` is a failure of the machine (see :data:`ENVIRONMENT_FAILURES`), else None."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EMFILE, errno.ENFILE):
        text = exc.strerror or text
    for marker, cause in ENVIRONMENT_FAILURES:
        if marker in text:
            return f"{cause} ({one_line(exc)})"
    return None


# A Unix socket's path holds at most 107 bytes. Workers hand each batch's shared memory over through
# multiprocessing's resource sharer, listening on <tmp>/pymp-XXXXXXXX/listener-XXXXXXXX: below a deeper folder every
# worker fails at its first batch ("AF_UNIX path too long", printed by a thread, never raised) and gives no batch.
SOCKET_PATH_MAX = 107
SOCKET_SUFFIX = len("/pymp-XXXXXXXX/listener-XXXXXXXX")
PRIVATE_PREFIX = "lfw-"


def socket_safe_parent() -> str:
    """The folder to make private temporary folders in: ``tempfile``'s own, unless it is too deep for the
    worker sockets below it, then the first of the system's default folders that is shallow enough. Raises
    LFWError, naming TMPDIR and the limit, when no candidate is shallow enough."""
    room = SOCKET_PATH_MAX - SOCKET_SUFFIX - len(f"/{PRIVATE_PREFIX}XXXXXXXX")
    for parent in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        if len(os.fsencode(parent)) <= room and os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK):
            return parent
    raise LFWError(f"the temporary folder {tempfile.gettempdir()} is too deep for the Unix sockets DataLoader "
                   f"workers use (at most {room} characters); set TMPDIR to a shorter folder, e.g. /tmp")


@contextlib.contextmanager
def private_tmpdir() -> Iterator[None]:
    """Point ``tempfile`` (and, through ``TMPDIR``, spawned children) at a private folder made in
    :func:`socket_safe_parent` (workers' sockets stay within the path limit); remove it at the end."""
    folder = tempfile.mkdtemp(prefix=PRIVATE_PREFIX, dir=socket_safe_parent())
    saved_env, saved_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = folder, folder
    try:
        yield
    finally:
        tempfile.tempdir = saved_dir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        shutil.rmtree(folder, ignore_errors=True)


def cli_entry(main: F) -> F:
    """Run ``main``; turn user errors and machine failures into one line on stderr and their exit codes."""

    @functools.wraps(main)
    def wrapper(*args: object, **kwargs: object) -> int:
        try:
            with private_tmpdir():
                return int(main(*args, **kwargs) or 0)
        except LFWError as exc:
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return getattr(exc, "exit_code", EXIT_USAGE)
        except (RuntimeError, OSError) as exc:
            cause = environment_failure(exc)
            if cause is not None:
                print(f"error: {cause}", file=sys.stderr)
                return EXIT_MEASUREMENT
            if isinstance(exc, OSError):  # an unwritable output, an unreadable folder: the OS says which and why
                where = f" ({exc.filename})" if exc.filename else ""
                print(f"error: {exc.strerror or exc}{where}; check the path and its permissions", file=sys.stderr)
                return EXIT_USAGE
            if "DataLoader" not in str(exc):  # a worker's LFWError arrives re-wrapped as RuntimeError
                raise
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130

    return wrapper  # type: ignore[return-value]
