"""The cost layer's plumbing: callgrind dumps parsed, missing tools named, a failing count reported in one line.

The real count under valgrind (about a minute) runs in the benchmark smoke run of ``make test``
(``benchmarks/test_cost.py``), where valgrind is installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lfw.errors import LFWError, MeasurementError
from lfw.measure import callgrind, cost

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
desc: Trigger: Client Request: lfw-cost:{label}

positions: line
events: Ir
summary: 0

fn=f
1 {half}
fn=g
1 {half}
totals: {total}
"""


def test_dumps_are_parsed_by_label(tmp_path: Path) -> None:
    (tmp_path / "callgrind.out.1").write_text(DUMP.format(label="none", half=50, total=100))
    (tmp_path / "callgrind.out.2").write_text(DUMP.format(label="uint8", half=40, total=80))
    (tmp_path / "callgrind.out").write_text("desc: Trigger: Program termination\ntotals: 0\n")
    assert cost.parse_dumps(tmp_path) == {"none": 100, "uint8": 80}


def test_missing_valgrind_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert callgrind.valgrind_version() is None
    assert "valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)" in callgrind.unavailable_reason()
    with pytest.raises(LFWError, match="cannot count instructions: valgrind is not installed"):
        cost.count_instructions(Path("."), ["none"], batch_size=1, batches=1, cache_dir=Path("."))


@pytest.mark.skipif(callgrind.unavailable_reason() is not None, reason="needs valgrind's headers and a C compiler")
def test_client_requests_are_no_ops_outside_valgrind(tmp_path: Path) -> None:
    requests = callgrind.Requests(callgrind.build_helper(tmp_path))
    requests.start()
    requests.stop()
    requests.dump("lfw-cost:none")
    assert callgrind.build_helper(tmp_path) == callgrind.helper_path(tmp_path)  # built once, then reused


def test_a_failing_count_is_a_measurement_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "unavailable_reason", lambda: None)
    monkeypatch.setattr(cost, "build_helper", lambda cache_dir: cache_dir / "helper.so")

    def crash(*args: object, **kwargs: object) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess([], 1, "", "==1== noise\nTraceback...\nRuntimeError: out of memory\n")

    monkeypatch.setattr(subprocess, "run", crash)
    with pytest.raises(MeasurementError, match="instruction counting failed \\(exit 1\\): RuntimeError: out of memory"):
        cost.count_instructions(tmp_path, ["none"], batch_size=1, batches=1, cache_dir=tmp_path)


def test_the_child_runs_under_valgrind_with_instrumentation_off_at_start(tmp_path: Path) -> None:
    command = cost.child_command(Path("/data"), ["none", "uint8"], 16, 1, tmp_path, tmp_path / "cache")
    assert command[:3] == ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
    assert command[-2:] == ["none", "uint8"] and "--child" in command
    env = cost.child_env()
    assert env["PYTHONHASHSEED"] == "0" and env["OMP_NUM_THREADS"] == "1"
