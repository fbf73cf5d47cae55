"""pytest-benchmark's own tools on the suite's saved runs: every case carries the same knob params, so grouping,
columns and sorting work across groups whose tests vary different knobs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lfw.results import load_run
from lfw.suite.record import KNOBS

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


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two autosaved smoke runs of groups whose tests take different params (knob groups, decoders), saved the
    way ``make bench`` saves them. (The memory experiments assert their verdicts when timed, which the smoke
    profile's tiny index cannot meet; their params are built by the same function.)"""
    store = tmp_path_factory.mktemp("benchmarks")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", "-q", "--bench-profile", "smoke",
         "-k", "workers_transform or batch_size or decoders or persistent", "--benchmark-autosave",
         f"--benchmark-storage=file://{store}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    first = next(store.rglob("0001_*.json"))
    shutil.copy(first, first.with_name(first.name.replace("0001_", "0002_", 1)))
    return store


def test_every_saved_case_carries_every_knob(storage: Path) -> None:
    run = load_run(next(storage.rglob("0001_*.json")))
    groups = {c.group for c in run.cases}
    assert run.selection is not None  # a group a small /dev/shm leaves out whole is narrowed, case by case
    beyond_limits = {k.partition("/")[0] for k, o in run.selection.outcomes.items() if o.limit}
    assert {"workers-transform", "batch-size", "decoders", "persistent-workers"} <= groups | beyond_limits
    assert "workers-transform" in groups
    for case in run.cases:
        assert set(KNOBS) <= set(case.params), case.fullname


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_pytest_benchmark_commands_run_on_a_saved_run(storage: Path, command: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest_benchmark.cli", "--storage", f"file://{storage}", *command],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
