"""The gate-rates campaign (``tools/gate_rates.py``) runs each try in a clean checkout of the campaign's commit,
left behind by nothing: checked on a throwaway repository whose ``make gate`` only reports where it ran."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from lfw.gate.__main__ import main as gate_main
from tests.processes import gone_or_zombie
from tools.gate_rates import gate_record, main, run_gate, run_logged

ROOT = Path(__file__).parent.parent
MAKEFILE = "gate:\n\t@pwd; cat FILE; exit $(CODE)\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def fake_project(tmp_path: Path, code: int) -> tuple[Path, str]:
    """A repository whose committed ``make gate`` prints its folder and ``FILE`` ("committed"), then exits
    ``code``; its working tree has ``FILE`` edited. Returns the repository and the commit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "Makefile").write_text(f"CODE ?= {code}\n{MAKEFILE}")
    (repo / "FILE").write_text("committed\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "fake project")
    (repo / "FILE").write_text("edited, not committed\n")
    return repo, git(repo, "rev-parse", "HEAD")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("code", [0, 3])
def test_each_run_is_made_in_a_clean_checkout_that_is_removed_after(tmp_path: Path, code: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):  # under make test, the fake make would name its folders
        monkeypatch.delenv(name, raising=False)
    repo, commit = fake_project(tmp_path, code)
    raw = tmp_path / "raw"
    raw.mkdir()
    record = run_gate(repo, raw, commit)
    ran_in, content = record["tail"][:2]
    assert record["exit_code"] == (2 if code else 0)  # make exits 2 when a recipe fails
    assert content == "committed"  # the commit, not the edited working tree
    assert Path(ran_in) != repo and not Path(ran_in).exists()
    assert git(repo, "worktree", "list").count("\n") == 0  # the main checkout alone


def test_an_unknown_commit_or_a_folder_outside_git_is_one_line_exit_2(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    repo, _ = fake_project(tmp_path, 0)
    monkeypatch.chdir(repo)
    assert main(["gate", "--commit", "no-such-commit"]) == 2
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert main(["gate"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: unknown commit 'no-such-commit': commit first, or name one that exists"
    assert err[1].startswith(f"error: {plain} is not a git checkout") and len(err) == 2


def test_an_interrupted_try_stops_everything_it_started(tmp_path: Path) -> None:
    """Ctrl-C during a try: the try's whole process group goes (here a grandchild, as make's pytest would be)."""
    pid_file = tmp_path / "grandchild.pid"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background CI step ignores SIGINT
    try:
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            run_logged(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], tmp_path, dict(os.environ),
                       tmp_path / "log")
    finally:
        signal.signal(signal.SIGINT, previous)
    pid = int(pid_file.read_text())
    assert gone_or_zombie(pid, 30), f"the try's grandchild {pid} outlived the interrupt"  # 30 s: a hang guard


def test_a_gate_run_is_recorded_from_its_verdict_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed cross-CPU run against the baseline: the one regression, the worst moves, nothing unjudged."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    runs = ROOT / "benchmarks" / "gate_rates" / "cross_cpu"
    baseline, current = runs / "baseline-xeon-2026-11-23.json", runs / "2026-11-23-gate-run.json"
    assert gate_main([str(baseline), str(current), "--verdict-json", str(tmp_path / "verdict.json"), "--summary-md",
                      str(tmp_path / "gate.md")]) == 1
    (tmp_path / "make-gate.log").write_text("one\ntwo\n")
    record = gate_record(tmp_path, 1, 12.34, tmp_path / "make-gate.log")
    assert record["regressions"] == ["test_decoders[memmap-w0] pil_ceiling_share -0.4024"]
    worst = {"efficiency": 0.2228, "ttfb_core_images": 0.1742, "data_wait_excess": 0.0251,
             "instructions_per_image": -0.0001}
    assert record["worst_relative_change"] == worst
    assert record["unjudged"] == {} and record["seconds"] == 12.3 and record["tail"] == ["one", "two"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_an_injected_kind_runs_its_cases_with_its_sitecustomize_and_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):
        monkeypatch.delenv(name, raising=False)
    repo = tmp_path / "repo"
    (repo / "benchmarks" / "gate_rates" / "slow_handover").mkdir(parents=True)
    (repo / "benchmarks" / "gate_rates" / "slow_handover" / "sitecustomize.py").write_text("# injected\n")
    (repo / "Makefile").write_text("gate:\n\t@echo \"$(PYTEST_ARGS)|$$LFW_HANDOVER_MS|$$(cat sitecustomize.py)\"\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "fake project")
    raw = tmp_path / "raw"
    raw.mkdir()
    record = run_gate(repo, raw, git(repo, "rev-parse", "HEAD"), inject="handover")
    assert record["tail"][0] == "-k 'test_data_wait'|30|# injected"
