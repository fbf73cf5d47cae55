"""One name, one meaning: the names below once stood for two unrelated things in ``lfw/`` and ``tools/``; each is
now defined at module level in one file at most (read from the source with :mod:`ast`, nothing imported)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parent.parent
ONE_MEANING = ("TimedCollate", "Outcome", "instrument", "summarize", "write_summary", "run_ab", "verdict_line",
               "record_of", "series_of", "standing", "epoch_series", "check_output", "paired", "rate")


def top_level_definitions(*folders: str) -> dict[str, list[str]]:
    """Name -> ``path:line`` of every module-level function and class in the folders' Python files."""
    found: dict[str, list[str]] = defaultdict(list)
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text(), filename=str(path)).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    found[node.name].append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_each_name_that_meant_two_things_is_defined_once_at_most() -> None:
    found = top_level_definitions("lfw", "tools")
    assert found["summarize"] == [f"lfw/results/record.py:{found['summarize'][0].rpartition(':')[2]}"]  # it scans
    twice = {name: found[name] for name in ONE_MEANING if len(found[name]) > 1}
    assert not twice, f"defined in more than one module: {twice}"
