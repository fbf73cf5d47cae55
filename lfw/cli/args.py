"""Argument parsing shared by lfw-bench's command-line tools: one-line errors, exit code 2."""

from __future__ import annotations

import argparse
from typing import NoReturn

from lfw.errors import LFWError


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one :class:`LFWError` line (exit 2 under ``cli_entry``), not usage."""

    def error(self, message: str) -> NoReturn:
        raise LFWError(f"{message} (see {self.prog} --help)")


def parse_counts(text: str, option: str = "--sweep-workers", fewest: int = 2) -> tuple[int, ...]:
    """``"0,1,2,4"`` as the worker counts of ``option``: whole numbers of 0 or more, sorted, each once, at least
    ``fewest`` of them; a one-line :class:`LFWError` naming the option and the value that is not one."""
    counts = []
    for part in text.split(","):
        try:
            count = int(part)
        except ValueError:
            raise LFWError(f"{option} takes worker counts separated by commas, e.g. 0,1,2,4; got {text!r}") from None
        if count < 0:
            raise LFWError(f"{option} counts must be 0 or more, got {count}")
        counts.append(count)
    counts = sorted(set(counts))
    if len(counts) < fewest:
        raise LFWError(f"{option} needs {fewest} or more distinct counts, got {text!r}")
    return tuple(counts)
