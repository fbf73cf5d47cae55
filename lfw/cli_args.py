"""Argument parsing shared by lfw-bench's command-line tools: one-line errors, exit code 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from lfw.errors import EXIT_USAGE


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (what is wrong, where to look) instead of usage + error."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
