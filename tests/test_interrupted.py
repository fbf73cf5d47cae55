"""Interrupted means interrupted: a run stopped by Ctrl-C or SIGTERM is saved marked incomplete (or not at all),
exits 130 or 143, and the report, the gate and the history say so; a rotation member that fails takes no other
case down with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lfw.gate.__main__ import main as gate_main
from lfw.gate.compare import EXIT_INCOMPLETE
from lfw.history.store import append_run
from lfw.measure.loader_pass import PassResult
from lfw.measure.rotation import Rotation
from lfw.report.__main__ import main as report_main
from lfw.results import Outcome, Selection, load_run

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "benchmarks" / "baselines" / "cpu-2core.json"


class Member:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail, self.closed, self.passes = fail, False, 0

    def measure(self) -> PassResult:
        self.passes += 1
        if self.fail is not None and self.passes == 2:
            raise self.fail
        return PassResult(images=10, batches=1, wall_s=0.1, ttfb_s=0.01)

    def close(self) -> None:
        self.closed = True


def test_a_failing_case_leaves_the_rotation_and_the_others_go_on() -> None:
    shm = RuntimeError("unable to allocate shared memory(shm) for file </torch_1>: No space left on device (28)")
    members = {"ok": Member(), "short": Member(shm), "bug": Member(ValueError("bad item")), "ceiling-none": Member()}
    measured = Rotation(members, rounds=3, isolate=["ok", "short", "bug"]).run()
    assert len(measured["ok"].results) == 3 and len(measured["ceiling-none"].results) == 3
    assert measured["short"].results == [] and measured["short"].machine_failure
    assert "/dev/shm" in (measured["short"].error or "")
    assert measured["bug"].error == "bad item" and not measured["bug"].machine_failure
    assert all(m.closed for m in members.values())
    with pytest.raises(RuntimeError):  # a ceiling is not isolated: without it no case has its pairing
        Rotation({"ok": Member(), "ceiling-none": Member(shm)}, rounds=3, isolate=["ok"]).run()


def test_a_selection_says_why_it_is_incomplete() -> None:
    whole = Selection("", "", "quick", (), {"g/a": Outcome("passed"), "g/b": Outcome("narrowed", "capped")},
                      frozenset())
    assert whole.incomplete is None
    failed = Selection("", "", "quick", (), {"g/a": Outcome("passed"), "h/b": Outcome("failed", "boom")}, frozenset())
    assert failed.incomplete == "1 of 2 cases ended, 1 failed (groups not finished: h)"
    stopped = Selection("", "", "quick", (), {"g/a": Outcome("passed")}, frozenset(), ("k/c", "k/d"),
                        "interrupted (SIGINT)")
    assert stopped.incomplete == "interrupted (SIGINT): 1 of 3 cases ended, 2 never ran (groups not finished: k)"
    limited = Outcome("narrowed", "needs ~229 MiB of /dev/shm", limit=True)
    again = Selection("", "", "quick", (), {"g/a": limited}, frozenset(), ("k/c",), "interrupted (SIGTERM)")
    raw = again.to_dict()
    assert raw["cases"]["g/a"]["limit"] is True and raw["not_run"] == ["k/c"] and raw["incomplete"]


def default_sigint() -> None:
    """A shell's background job starts with SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_after_first_case(storage: Path, sig: int) -> tuple[int, str]:
    """Run two groups of the smoke profile, timed and autosaved; send ``sig`` once the first group has ended."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", "-v", "--bench-profile", "smoke",
         "-k", "bs16 or workers_transform", "--benchmark-autosave", f"--benchmark-storage=file://{storage}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}, preexec_fn=default_sigint)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "test_workers_transform[workers0-none]" in line:  # bs16 ended; the group's rotation starts now
            proc.send_signal(sig)
            break
    try:
        rest, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, "".join(lines) + rest


@pytest.mark.slow
@pytest.mark.needs_shm(64)
@pytest.mark.parametrize(("sig", "code", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_an_interrupted_run_is_saved_marked_and_refused(tmp_path: Path, sig: int, code: int, name: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    status, output = interrupt_after_first_case(tmp_path / "runs", sig)
    assert status == code, output[-3000:]
    saved = list((tmp_path / "runs").rglob("*.json"))
    assert len(saved) == 1 and saved[0].name.endswith("_incomplete.json"), output[-2000:]
    run = load_run(saved[0])
    assert run.stopped_early is not None and f"interrupted ({name})" in run.stopped_early
    assert run.selection is not None and any(k.startswith("workers-transform/") for k in run.selection.not_run)
    assert json.loads(saved[0].read_text())["lfw_selection"]["incomplete"].startswith(f"interrupted ({name})")

    assert report_main([str(saved[0]), "--out", str(tmp_path / "report"), "--format", "png"]) == 0
    console = capsys.readouterr().out
    assert console.startswith(f"INCOMPLETE RUN: interrupted ({name})")
    page = (tmp_path / "report" / "README.md").read_text()
    assert "## Incomplete run" in page and "recommended num_workers" not in console.lower()
    assert "Incomplete run" in (tmp_path / "report" / "index.html").read_text()

    assert gate_main([str(BASELINE), str(saved[0]), "--summary-md", str(tmp_path / "gate.md")]) == EXIT_INCOMPLETE
    assert "incomplete" in capsys.readouterr().err
    assert "no verdict" in (tmp_path / "gate.md").read_text()
    with pytest.raises(Exception, match="not put in the history"):
        append_run(saved[0], tmp_path / "history")


def test_the_report_lists_what_did_not_fit_and_draws_no_knee_from_one_worker_count(tmp_path: Path,
                                                                                    capsys: pytest.CaptureFixture[str]
                                                                                    ) -> None:
    """A run in a small /dev/shm: the cases left out are listed with what they need, and a transform measured at
    one worker count gets no recommendation (nothing to choose between)."""
    doc = json.loads((ROOT / "tests" / "fixtures" / "quick_run.json").read_text())
    workers = [b for b in doc["benchmarks"] if b["group"] == "workers-transform"]  # the one group the test needs
    gone = [b for b in workers if b["params"]["num_workers"] != 0 and b["params"]["transform"] == "none"]
    assert gone
    doc["benchmarks"] = [b for b in workers if b not in gone]
    need = "needs ~229 MiB of /dev/shm for 5 batches of 64 x float32 3 x 250 x 250, 64 MiB free: docker run ..."
    outcomes = {f"workers-transform/{b['param']}": Outcome("narrowed", need, limit=True) for b in gone}
    doc["lfw_selection"] = Selection("", "", "quick", (), outcomes, frozenset()).to_dict()
    run = tmp_path / "run.json"
    run.write_text(json.dumps(doc))
    assert report_main([str(run), "--out", str(tmp_path / "report"), "--format", "png"]) == 0
    console = capsys.readouterr().out
    assert "no num_workers recommendation for none: one worker count measured" in console
    assert f"left out, beyond this machine's limits: {len(gone)} cases" in console
    page = (tmp_path / "report" / "README.md").read_text()
    assert "## Left out on this machine" in page and need in page
    assert "Left out on this machine" in (tmp_path / "report" / "index.html").read_text()


def test_a_case_interrupted_before_its_first_round_is_left_out_of_the_saved_run() -> None:
    """Ctrl-C inside a case, after pytest-benchmark made its entry and before one round: the entry has no data,
    and pytest-benchmark's saving raises on it; the plugin drops it so the rest of the run is saved."""
    from types import SimpleNamespace

    from pytest_benchmark.plugin import pytest_benchmark_generate_json
    from pytest_benchmark.stats import Metadata

    from lfw.suite.saving import drop_unmeasured

    def entry(name: str, rounds: list[float]) -> Metadata:
        fixture = SimpleNamespace(name=name, fullname=f"benchmarks/t.py::{name}", group="g", param=None, params=None,
                                  extra_info={}, cprofile_stats=None, has_error=False)
        meta = Metadata(fixture, iterations=1, options={})
        for value in rounds:
            meta.update(value)
        return meta

    def save(entries: list[Metadata]) -> dict[str, object]:
        return pytest_benchmark_generate_json(config=None, benchmarks=entries, include_data=True, machine_info={},
                                              commit_info={})

    entries = [entry("ended", [0.1, 0.2]), entry("in_flight", [])]
    with pytest.raises(ValueError):  # what the plugin works around
        save(entries)
    assert drop_unmeasured(entries) == ["benchmarks/t.py::in_flight"]
    assert [b["name"] for b in save(entries)["benchmarks"]] == ["ended"]
