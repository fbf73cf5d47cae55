"""User-facing errors: one line that names the problem and the fix.

Every command-line entry point of lfw-bench wraps its ``main`` with :func:`cli_entry`, which turns an
:class:`LFWError` into ``error: <message>`` on stderr and exit code 2, never a traceback. Errors raised inside
DataLoader workers reach the main process re-wrapped by PyTorch with the worker's traceback in the message;
:func:`one_line` digs the original message back out so the user still sees one line.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TypeVar

EXIT_USAGE = 2
EXIT_MEASUREMENT = 4

F = TypeVar("F", bound=Callable[..., int | None])


class LFWError(Exception):
    """A problem the user can fix: bad folder, bad flag, unreadable image, bad baseline file."""


class MeasurementError(LFWError):
    """The machine, not the input, failed: a measuring process crashed, timed out or wrote nothing.

    Reported in one line like every LFWError, with its own exit code (:data:`EXIT_MEASUREMENT`), so CI can tell
    "your input is wrong" (2) from "this runner could not measure" (4).
    """

    exit_code = 4


class CorruptImageError(LFWError):
    """An image file that PIL cannot decode (truncated, not a JPEG, zero bytes)."""


def one_line(exc: BaseException) -> str:
    """The user-facing message of ``exc`` on a single line.

    PyTorch re-raises worker exceptions as ``Caught X in DataLoader worker process 0.\\nOriginal Traceback...``
    whose last line is ``module.X: <message>``; that last line, without the class path, is the message we want.
    """
    text = str(exc).strip()
    if "Original Traceback" in text:
        last = text.splitlines()[-1]
        _, sep, message = last.partition(": ")
        text = message if sep else last
    return " ".join(text.split())


def cli_entry(main: F) -> F:
    """Run ``main`` and turn user errors into one line on stderr and exit code 2."""

    @functools.wraps(main)
    def wrapper(*args: object, **kwargs: object) -> int:
        try:
            return int(main(*args, **kwargs) or 0)
        except LFWError as exc:
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return getattr(exc, "exit_code", EXIT_USAGE)
        except RuntimeError as exc:  # a worker's LFWError arrives re-wrapped as its own class or RuntimeError
            if "DataLoader" not in str(exc):
                raise
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return EXIT_USAGE
        except OSError as exc:  # an unwritable output, an unreadable folder: the OS says which path and why
            where = f" ({exc.filename})" if exc.filename else ""
            print(f"error: {exc.strerror or exc}{where}; check the path and its permissions", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130

    return wrapper  # type: ignore[return-value]
