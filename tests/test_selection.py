"""What a saved run says it was asked to run, and the case identity the gate matches on.

The gate expects every baseline case that the current run selected and did not leave out on purpose; for that
the pytest plugin saves the run's selection (``-k``, profile, layers, each selected case's outcome). These
tests run pytest on the real benchmark tree in a subprocess, as ``make gate`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lfw.results import case_key, load_run
from lfw.suite import matrix

ROOT = Path(__file__).resolve().parents[1]


def pytest_benchmarks(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.slow
def test_collected_benchmark_ids_are_the_matrix_ids() -> None:
    """Each matrix group's test collects exactly the group's case ids: the keys the gate and A/B use."""
    proc = pytest_benchmarks("--collect-only", "-q", "--bench-profile", "smoke")
    assert proc.returncode == 0, proc.stdout[-2000:]
    by_test: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        test, _, case_id = line.partition("::")[2].partition("[")
        if case_id:
            by_test.setdefault(test, set()).add(case_id.removesuffix("]"))
    for group in matrix.GROUPS.values():
        assert [t for t, ids in by_test.items() if ids == set(group.ids)], f"no test collects {group.name}'s ids"


@pytest.mark.slow
@pytest.mark.needs_shm(64)
def test_a_saved_run_records_what_it_selected_and_how_each_case_ended(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = pytest_benchmarks("-k", "bs16 or pin", "--bench-profile", "smoke", f"--benchmark-json={out}", "-q")
    assert proc.returncode == 0, proc.stdout[-2000:]
    selection = load_run(out).selection
    assert selection is not None and selection.keyword == "bs16 or pin" and selection.profile == "smoke"
    assert selection.outcomes[case_key("batch-size", "test_batch_size[bs16]")].status == "passed"
    assert case_key("batch-size", "test_batch_size[bs64]") in selection.deselected
    pin = selection.outcomes[case_key("pin-memory", "test_pin_memory[pin]")]
    if pin.status != "passed":  # no CUDA device: left out by this machine, which the gate does not expect
        assert pin.status == "narrowed" and "needs a CUDA device" in pin.reason
