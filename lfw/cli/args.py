"""Argument parsing shared by lfw-bench's command-line tools: one-line errors, exit code 2."""

from __future__ import annotations

import argparse
from typing import NoReturn

from lfw.errors import LFWError


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one :class:`LFWError` line (exit 2 under ``cli_entry``), not usage."""

    def error(self, message: str) -> NoReturn:
        raise LFWError(f"{message} (see {self.prog} --help)")
