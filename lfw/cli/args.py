"""Argument parsing shared by lfw-bench's command-line tools: one-line errors, exit code 2."""

from __future__ import annotations

import argparse
from typing import NoReturn

from lfw.errors import LFWError


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (what is wrong, where to look) instead of usage + error.

    The error is raised as :class:`LFWError`, so :func:`lfw.errors.cli_entry` prints it and returns exit code 2
    like every other input error.
    """

    def error(self, message: str) -> NoReturn:
        raise LFWError(f"{message} (see {self.prog} --help)")
