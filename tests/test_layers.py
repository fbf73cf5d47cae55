"""The floors of ``lfw/``: every import, at module level or inside a function, goes to the importer's own folder
or to one below it (``lfw.LAYERS``, lowest first), and no modules import each other in a circle, inside a floor or
across floors, whether the import stands at module level, inside a function or under ``TYPE_CHECKING``. Read from
the source with :mod:`ast`, nothing imported (``importlib`` look-ups such as :func:`lfw.lazy_exports` are not
seen)."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

import lfw

PACKAGE = Path(lfw.__file__).parent
TOP_LEVEL = {"__init__", "__main__"}  # lfw/__init__.py and the exercise's CLI stand above every floor


def floor_of(path: Path) -> str:
    """The floor a file of ``lfw/`` stands on: its folder, or the module's own name for a top-level module."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def imported_names(path: Path, package: Path = PACKAGE) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every import of ``package``'s own modules in a file, wherever it stands in the file:
    ``from lfw.x import y`` gives ``lfw.x.y`` (which may name a module or a name defined in ``lfw.x``); a relative
    import is resolved against the file's own package."""
    here = module_of(path, package).split(".")
    if path.name != "__init__.py":
        here = here[:-1]  # the package a relative import starts from
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*here[: len(here) - node.level + 1], *filter(None, [base])])
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        yield from ((node.lineno, name) for name in names if name.split(".")[0] == package.name)


def imported_floors(path: Path) -> list[tuple[int, str]]:
    """(line, floor) of every ``lfw.<floor>`` import in a file, wherever it stands in the file."""
    return [(line, name.split(".")[1]) for line, name in imported_names(path) if "." in name]


def module_of(path: Path, package: Path = PACKAGE) -> str:
    """The dotted module name of a file of ``package`` (``lfw.measure`` for ``lfw/measure/__init__.py``)."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: first line}, over every import of the package's own modules in every file.

    ``from lfw.x import y`` is an edge to the module ``lfw.x.y`` where there is one, else to ``lfw.x`` (whose
    ``__init__.py`` defines or re-exports ``y``).
    """
    files = {module_of(p, package): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        edges = graph.setdefault(module, {})
        for line, name in imported_names(path, package):
            while name not in files and "." in name:
                name = name.rpartition(".")[0]
            if name in files and name != module:
                edges.setdefault(name, line)
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every set of modules that import each other in a circle (Tarjan's strongly connected components, more than
    one module each), as one circle through them: ``[a, b, a]`` for two modules importing each other."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(component) > 1:
                components.append(sorted(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return [circle_through(graph, component) for component in sorted(components)]


def circle_through(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """The shortest import circle from the component's first module back to it, inside the component."""
    start, inside = component[0], set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(graph.get(module, {})):
                if target == start:
                    return [*paths[module], start]
                if target in inside and target not in paths:
                    paths[target] = [*paths[module], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {component}")  # a strongly connected component always has one


def described(graph: dict[str, dict[str, int]], circle: list[str]) -> str:
    """``a (line 3) -> b (line 7) -> a``: each import of the circle with the line it stands on."""
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(circle)) + f" -> {circle[-1]}"


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


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = import_graph()
    assert [described(graph, circle) for circle in import_cycles(graph)] == []


def test_a_circle_is_caught(tmp_path: Path) -> None:
    """The check itself can fail: two modules importing each other through a function, and a longer circle of
    three modules inside one folder, each found; a chain that goes one way is not a circle."""
    package = tmp_path / "pkg"
    (package / "floor").mkdir(parents=True)
    for name, text in {
        "__init__.py": "",
        "floor/__init__.py": "",
        "floor/a.py": "from pkg.floor.b import f\n",
        "floor/b.py": "def f():\n    from pkg.floor import a\n",
        "floor/c.py": "import pkg.floor.d\n",
        "floor/d.py": "from . import e\n",
        "floor/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.floor.c import X\n",
        "floor/f.py": "from pkg.floor import a, c\n",
    }.items():
        (package / name).write_text(text)
    assert import_cycles(import_graph(package)) == [
        ["pkg.floor.a", "pkg.floor.b", "pkg.floor.a"],
        ["pkg.floor.c", "pkg.floor.d", "pkg.floor.e", "pkg.floor.c"],
    ]


@pytest.mark.parametrize("floor", ["gate", "history"])
def test_the_gate_and_history_never_import_the_report(floor: str) -> None:
    for path in (PACKAGE / floor).rglob("*.py"):
        assert "report" not in {target for _, target in imported_floors(path)}, path
