"""pytest-benchmark's own command, ``pytest-benchmark list|compare ...``, run in this process.

Its console script is ``sys.exit(pytest_benchmark.cli.main())``; calling that function here runs the same code on
the same files without a second interpreter (one start of Python and the suite's conftest, which imports torch,
cost seconds a call).
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

from pytest_benchmark.cli import main


def pytest_benchmark(*args: str, cwd: Path) -> tuple[int, str, str]:
    """What ``pytest-benchmark ARGS`` run in ``cwd`` exits with and prints (stdout, stderr); an exception it raises
    (a traceback from the command) propagates."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["pytest-benchmark", *args]
    try:
        with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main()
    except SystemExit as exit_:
        code = exit_.code
    finally:
        sys.argv = argv
    return int(code or 0), out.getvalue(), err.getvalue()
