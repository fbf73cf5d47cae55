"""pytest-benchmark's own tools on the suite's saved runs: every case carries the same knob params, so grouping,
columns and sorting work across groups whose tests vary different knobs, and ``compare`` prints what the suite
measured.

The pair compared is a real smoke run (``0001``) and the same run made exactly twice as slow (``0002``: every pass
time doubled, its statistics recomputed by pytest-benchmark's own ``Stats``), so what ``compare`` must print is known
from the suite's own record of each case: the pass times kept in ``extra_info`` (``wall_s_rounds``), the worker
count of its configuration in :mod:`lfw.suite.matrix`, and twice both for ``0002``.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_benchmark.stats import Stats

from lfw.results import keys as K
from lfw.results import load_run
from lfw.results.knobs import BY_KEY
from lfw.suite import matrix

ROOT = Path(__file__).resolve().parents[1]
# The commands README.md and docs/gating.md show ("pytest-benchmark's own tools"), with this test's storage.
COMMANDS = (
    ["list"],
    ["compare", "0001", "0002"],
    ["compare", "0002", "--group-by=param:num_workers", "--columns=median,iqr,rounds"],
    ["compare", "0002", "--group-by=param:transform", "--sort=name"],
    ["compare", "0002", "--group-by=param:pipeline"],
    ["compare", "0001", "0002", "--group-by=param:batch_size", "--columns=min,max,mean", "--sort=mean"],
)
SLOWER = 2.0  # 0002's pass times over 0001's
UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
GROUP_LINE = re.compile(r"^-+ benchmark '(?P<group>[^']+)': (?P<count>\d+) tests -+$")
UNIT_LINE = re.compile(r"^Name \(time in (?P<unit>\w+)\)")
ROW = re.compile(r"^(?P<name>test_\S+)(?: \((?P<run>\d{4})_\w+\))?\s+(?P<cells>.+?)\s*$")  # run: when several
CELL = re.compile(r"([\d,]+\.\d+)\s+\(([\d.]+|>1000\.0|inf)\)|(\d+)")


def slower_copy(run: Path, target: Path, factor: float) -> None:
    """``run`` with every pass time multiplied by ``factor``, each case's statistics recomputed from them by
    pytest-benchmark (``--benchmark-save-data`` keeps the pass times in ``stats.data``)."""
    doc = json.loads(run.read_text())
    for bench in doc["benchmarks"]:
        stats = Stats()
        for seconds in bench["stats"]["data"]:
            stats.update(seconds * factor)
        bench["stats"] = {**stats.as_dict(), "iterations": 1, "data": [v * factor for v in bench["stats"]["data"]]}
    target.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A smoke run of groups whose tests take different params (knob groups, decoders), autosaved the way
    ``make bench`` saves it, and its twice-as-slow copy. (The memory experiments assert their verdicts when timed,
    which the smoke profile's tiny index cannot meet; their params are built by the same function.)"""
    store = tmp_path_factory.mktemp("benchmarks")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", "-q", "--bench-profile", "smoke",
         "-k", "workers_transform or batch_size or decoders or persistent", "--benchmark-autosave",
         f"--benchmark-storage=file://{store}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    first = next(store.rglob("0001_*.json"))
    slower_copy(first, first.with_name(first.name.replace("0001_", "0002_", 1)), SLOWER)
    return store


def pytest_benchmark(storage: Path, *args: str) -> str:
    """What the ``pytest-benchmark`` command prints for ``args`` over ``storage``; it must exit 0 without a
    traceback."""
    proc = subprocess.run([sys.executable, "-m", "pytest_benchmark", "--storage", f"file://{storage}", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out
    return proc.stdout


def compare_tables(text: str) -> dict[str, dict[tuple[str, str], list[tuple[float, float | None]]]]:
    """``compare``'s printout as {group: {(test name, run number or ""): [(value in seconds, ratio or None), ...]}},
    the cells in the order of ``--columns`` (a count such as ``rounds`` has no ratio)."""
    tables: dict[str, dict[tuple[str, str], list[tuple[float, float | None]]]] = {}
    group, scale, counts = None, 1.0, {}
    for line in text.splitlines():
        if m := GROUP_LINE.match(line):
            group = m["group"]
            tables[group], counts[group] = {}, int(m["count"])
        elif m := UNIT_LINE.match(line):
            scale = UNITS[m["unit"]]
        elif group is not None and (m := ROW.match(line)):
            cells = [(float(v.replace(",", "")) / scale, float(r.lstrip(">"))) if v else (float(n), None)
                     for v, r, n in CELL.findall(m["cells"])]
            tables[group][(m["name"], m["run"] or "")] = cells
    assert {g: len(rows) for g, rows in tables.items()} == counts, "every group prints as many rows as it says"
    return tables


def test_every_saved_case_carries_every_knob_once_and_no_key_the_registry_does_not_know(storage: Path) -> None:
    run = load_run(next(storage.rglob("0001_*.json")))
    groups = {c.group for c in run.cases}
    assert run.selection is not None  # a group a small /dev/shm leaves out whole is narrowed, case by case
    beyond_limits = {k.partition("/")[0] for k, o in run.selection.outcomes.items() if o.limit}
    assert {"workers-transform", "batch-size", "decoders", "persistent-workers"} <= groups | beyond_limits
    assert "workers-transform" in groups
    for case in run.cases:
        assert not set(case.params) - set(BY_KEY), (case.fullname, set(case.params) - set(BY_KEY))
        assert set(case.params) == set(BY_KEY), case.fullname
        assert not set(case.extra) & {*BY_KEY, K.CONFIG, K.WORKERS}, case.fullname  # saved once, in params


def test_compare_prints_each_case_of_both_runs_with_its_pass_times(storage: Path) -> None:
    """``compare 0001 0002 --group-by=param:num_workers``: a table per worker count holding exactly the cases
    configured with it, each once per run, whose min, median and rounds are those of the case's own pass times
    (twice as long in 0002), and each ratio the value over the best of its column."""
    text = pytest_benchmark(storage, "compare", "0001", "0002", "--group-by=param:num_workers",
                            "--columns=min,median,rounds")
    tables = compare_tables(text)
    saved = json.loads(next(storage.rglob("0001_*.json")).read_text())["benchmarks"]
    expected: dict[str, dict[tuple[str, str], list[float]]] = {}
    for bench in saved:
        workers = matrix.GROUPS[bench["group"]].case(bench["param"]).config.num_workers
        passes = bench["extra_info"][K.rounds(K.WALL_S)]
        for run, factor in (("0001", 1.0), ("0002", SLOWER)):
            row = [factor * min(passes), factor * statistics.median(passes), len(passes)]
            expected.setdefault(f"num_workers={workers}", {})[(bench["name"], run)] = row
    assert {g: sorted(rows) for g, rows in tables.items()} == {g: sorted(rows) for g, rows in expected.items()}
    for group, rows in expected.items():
        best = [min(row[i] for row in rows.values()) for i in range(2)]
        for key, row in rows.items():
            printed = tables[group][key]
            assert printed[2] == (row[2], None), (group, key, printed)
            for i in range(2):  # the pass times are kept to the microsecond, the printout to 4 digits of its unit
                value, ratio = printed[i]
                assert value == pytest.approx(row[i], rel=2e-4, abs=2e-6), (group, key, i, printed)
                assert ratio == pytest.approx(row[i] / best[i], abs=0.011), (group, key, i, printed)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_pytest_benchmark_commands_run_on_a_saved_run(storage: Path, command: list[str]) -> None:
    out = pytest_benchmark(storage, *command)
    if command[0] == "list":
        assert [Path(line).name[:5] for line in out.splitlines()] == ["0001_", "0002_"], out
    else:
        assert compare_tables(out), out
