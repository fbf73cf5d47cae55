"""The floors of ``lfw/``: every import, at module level or inside a function, goes to the importer's own folder
or to one below it (``lfw.LAYERS``, lowest first). Read from the source with :mod:`ast`, nothing imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lfw

PACKAGE = Path(lfw.__file__).parent
TOP_LEVEL = {"__init__", "__main__"}  # lfw/__init__.py and the exercise's CLI stand above every floor


def floor_of(path: Path) -> str:
    """The floor a file of ``lfw/`` stands on: its folder, or the module's own name for a top-level module."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def imported_floors(path: Path) -> list[tuple[int, str]]:
    """(line, floor) of every ``lfw.<floor>`` import in a file, wherever it stands in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "lfw":
                names = [f"lfw.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, name.split(".")[1]) for name in names
                  if name.startswith("lfw.") and len(name.split(".")) > 1]
    return found


def upward_imports(layers: tuple[str, ...]) -> list[str]:
    rank = {name: i for i, name in enumerate(layers)}
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        floor = floor_of(path)
        if floor in TOP_LEVEL:
            continue
        for line, target in imported_floors(path):
            if target != floor and rank.get(target, -1) > rank[floor]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({floor} imports {target})")
    return wrong


def test_every_floor_is_named_once() -> None:
    on_disk = {floor_of(p) for p in PACKAGE.rglob("*.py")} - TOP_LEVEL
    assert sorted(lfw.LAYERS) == sorted(set(lfw.LAYERS)) == sorted(on_disk)


def test_no_folder_imports_one_above_it() -> None:
    assert upward_imports(lfw.LAYERS) == []


def test_an_upward_import_is_caught() -> None:
    """The check itself can fail: with the gate moved to the top floor, every import of the gate goes up."""
    layers = list(lfw.LAYERS)
    layers.remove("gate")
    layers.append("gate")  # now the gate is the top floor, so whatever imports the gate goes up
    found = set(upward_imports(tuple(layers))) - set(upward_imports(lfw.LAYERS))
    assert found and all("imports gate" in line for line in found)


@pytest.mark.parametrize("floor", ["gate", "history"])
def test_the_gate_and_history_never_import_the_report(floor: str) -> None:
    for path in (PACKAGE / floor).rglob("*.py"):
        assert "report" not in {target for _, target in imported_floors(path)}, path
