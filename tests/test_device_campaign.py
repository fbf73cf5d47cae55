"""The device campaign (tools/device_campaign.py) on a CPU-only machine: which steps run, what a GPU step says when
there is no GPU, the output folder's 8-file limit, a step stopped at its budget, the offline wheel install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from lfw.errors import LFWError
from tests.processes import gone_or_zombie
from tools import device_run, device_steps
from tools.device_campaign import selected_steps
from tools.device_context import MAX_OUT_FILES, OUT_FILES, STEP_LIMIT_S, STEPS, TOTAL_BUDGET_S, Context, parse_workers
from tools.device_headlines import headlines
from tools.device_run import Log, check_out, run_child, wheel_command
from tools.device_steps import workers_keyword

ROOT = Path(__file__).resolve().parents[1]
HANG_GUARD_S = 300  # far beyond what these runs need: a failure to stop, not a timing
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skips of a machine without CUDA")


def campaign(out: Path, tree: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = {**os.environ, "LFW_ROOT": str(tree), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "tools/device_campaign.py", "--out", str(out), "--dry-run", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    path = out / "campaign.json"
    return done, json.loads(path.read_text()) if path.exists() else {}


def test_budgets_fit_a_device_command_and_the_whole_campaign() -> None:
    assert all(0 < s.budget_s <= STEP_LIMIT_S < 600 for s in STEPS)
    assert sum(s.budget_s for s in STEPS) <= TOTAL_BUDGET_S <= 25 * 60
    assert len(OUT_FILES) + 1 <= MAX_OUT_FILES  # every role, and the baseline file


def test_step_selection_keeps_campaign_order_and_names_unknown_steps() -> None:
    assert selected_steps(None) == [s.name for s in STEPS]
    assert selected_steps(["workers", "pin,decode"]) == ["pin", "decode", "workers"]
    with pytest.raises(LFWError, match="unknown step 'gpu'; choose from: pin, bandwidth"):
        selected_steps(["gpu"])
    assert parse_workers("16,0,2") == (0, 2, 16)
    for bad in ("", "a", "1,1", "-1"):
        with pytest.raises(LFWError, match="--workers"):
            parse_workers(bad)


def test_workers_keyword_selects_exact_ids() -> None:
    expression = workers_keyword((1, 12))
    assert expression == "workers1-none or workers1-uint8 or workers12-none or workers12-uint8"


def test_wheel_install_is_offline_and_keeps_the_installed_torch(tmp_path: Path) -> None:
    command = wheel_command([tmp_path / "a.whl"], tmp_path / "site", python="python3")
    assert command[:4] == ["python3", "-m", "pip", "install"]
    assert {"--no-index", "--no-deps"} <= set(command)
    assert command[command.index("--target") + 1] == str(tmp_path / "site") and command[-1].endswith("a.whl")


def test_out_folder_refuses_foreign_files_and_more_than_eight(tmp_path: Path) -> None:
    for name in (*OUT_FILES, "gpu.json"):
        (tmp_path / name).write_text("{}")
    check_out(tmp_path)
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(LFWError, match=r"notes\.txt, which the campaign does not write"):
        check_out(tmp_path)
    (tmp_path / "notes.txt").unlink()
    for i in range(MAX_OUT_FILES - len(OUT_FILES)):
        (tmp_path / f"gpu-{i}.json").write_text("{}")
    with pytest.raises(LFWError, match="brings back 8 at most"):
        check_out(tmp_path)


@no_cuda
@pytest.mark.parametrize("step", [s.name for s in STEPS if s.gpu])
def test_gpu_steps_skip_with_a_one_line_reason(step: str, tmp_path: Path) -> None:
    ctx = Context(step, tmp_path, tmp_path, device_steps.profile_named("smoke"), (0,), 2, dry_run=True)
    fragment, code = device_steps.run_step(ctx)
    assert code == 0 and fragment["status"] == "skipped"
    assert fragment["reason"].startswith("no CUDA device") and "\n" not in fragment["reason"]


def test_baseline_step_never_replaces_a_baseline_without_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LFW_RUNNER", "gpu")
    monkeypatch.setattr(device_steps, "REPO", tmp_path)
    own = tmp_path / "benchmarks" / "baselines" / "gpu.json"
    own.parent.mkdir(parents=True)
    own.write_text("kept")
    ctx = Context("baseline", tmp_path, tmp_path, device_steps.profile_named("smoke"), (0,), 2)
    with pytest.raises(LFWError, match=r"gpu\.json exists; refresh it deliberately with --force"):
        device_steps.step_baseline(ctx)
    assert own.read_text() == "kept"


def test_a_step_over_its_budget_is_stopped_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_run, "GRACE_S", 2.0)
    pid_file = tmp_path / "child.pid"
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            f"open({str(pid_file)!r}, 'w').write(str(p.pid)); print('started', flush=True); time.sleep(600)")
    result: dict[str, Any] = {}
    with Log(tmp_path) as log:
        # a budget of 3 s: time for the step to start its own child and say so on a loaded 2-core runner
        runner = threading.Thread(target=lambda: result.update(run_child([sys.executable, "-c", code], 3.0,
                                                                          os.environ, log, "sleeper")))
        runner.start()
        runner.join(HANG_GUARD_S)
    assert not runner.is_alive(), "the step was not stopped"
    assert result["status"] == "incomplete" and result["reason"] == "stopped at its budget of 3 s"
    child = int(pid_file.read_text())  # the step's own child went with it (at most a zombie left to reap)
    assert gone_or_zombie(child, HANG_GUARD_S), "the step's own child outlived it"
    assert "started" in (tmp_path / "campaign.log").read_text()


@no_cuda
def test_dry_run_runs_cpu_steps_skips_gpu_steps_and_writes_few_files(tmp_path: Path, tiny_tree: Path) -> None:
    done, doc = campaign(tmp_path / "out", tiny_tree, "--step", "pin,decode,feed", "--workers", "0,1")
    assert done.returncode == 0, done.stderr[-2000:]
    steps = doc["steps"]
    assert list(steps) == ["pin", "decode", "feed"]
    assert steps["pin"]["status"] == steps["feed"]["status"] == "skipped"
    assert steps["pin"]["reason"].startswith("no CUDA device")
    decode = steps["decode"]["summary"]
    assert steps["decode"]["status"] == "done" and decode["gpu_skipped"].startswith("no CUDA device")
    assert {"pil-w0", "pil-w1"} <= set(decode["members"]) and decode["decoders"]["pil"]["best_workers"] in (0, 1)
    assert doc["environment"]["usable_cores"] >= 1 and "torch" in doc["environment"]
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["campaign.json", "campaign.log"] and len(files) <= MAX_OUT_FILES


def test_a_step_over_its_budget_ends_the_campaign_incomplete(tmp_path: Path, tiny_tree: Path) -> None:
    done, doc = campaign(tmp_path / "out", tiny_tree, "--step", "workers", "--step-budget", "1")
    assert done.returncode == 3, done.stderr[-2000:]
    assert doc["steps"]["workers"]["status"] == "incomplete"
    assert doc["steps"]["workers"]["reason"] == "stopped at its budget of 1 s"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, tiny_tree: Path) -> None:
    done, _ = campaign(tmp_path / "out", tiny_tree, "--step", "gpu")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert done.stderr.startswith("error: unknown step 'gpu'")


GPU_SUMMARIES = {  # the shapes the GPU steps return (tools/device_steps.py, tools/device_measure.py)
    "pin": {"cases": {"nopin": {"images_per_s": 1.0, "h2d_ms_per_batch": 2.0}, "pin": {"images_per_s": 1.5}},
            "h2d_floor_ms_per_batch": 1.0, "peak_h2d_gb_s": 50.0},
    "bandwidth": {"copies": {"batch-pinned": {"median": 40.0, "share_of_peak": 0.8}}, "peak_gb_s": 50.0},
    "feed": {"pipeline": "simplejpeg-w8", "step_ms_measured": 20.1, "au_measured": 0.9, "au_predicted": 0.92,
             "recommendation": "nothing to gain"},
    "baseline": {"baseline": "benchmarks/baselines/gpu.json", "gate_exit": 0, "aa_passed": True},
}


@pytest.mark.parametrize("step", sorted(GPU_SUMMARIES))
def test_gpu_step_headlines_read_their_summaries(step: str) -> None:
    lines = headlines(step, {"status": "done", "summary": GPU_SUMMARIES[step]})
    assert lines and not any("no headline" in line for line in lines)
    assert headlines(step, {"status": "skipped", "reason": "no CUDA device"}) == []


def test_wheels_for_another_python_are_left_out_and_named(tmp_path: Path) -> None:
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    other = "cp39" if here != "cp39" else "cp312"
    (tmp_path / f"ruptures-1.1.10-{other}-{other}-manylinux2014_x86_64.whl").write_bytes(b"")
    (tmp_path / "not-a-wheel.whl").write_bytes(b"")
    assert not device_run.installable_here(tmp_path / f"ruptures-1.1.10-{other}-{other}-manylinux2014_x86_64.whl")
    assert device_run.installable_here(Path("tqdm-4.67.1-py3-none-any.whl"))
    (tmp_path / "out").mkdir()
    with Log(tmp_path / "out") as log:
        assert device_run.install_wheels(tmp_path, tmp_path / "site", log) == {"installed": False,
                                                                              "folder": str(tmp_path)}
    assert "2 in" in (tmp_path / "out" / "campaign.log").read_text()


def test_a_failed_pytest_fails_its_step_with_its_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest exit 1 (a case's assertion failed, say the GPU-only pinning check) with its run written: the step is
    failed, so the campaign cannot exit 0, and the figures it measured are kept."""
    fixture = Path(__file__).parent / "fixtures" / "quick_run.json"

    def failed_run(ctx: Context, keyword: str, path: Path, *extra: str) -> int:
        path.write_bytes(fixture.read_bytes())
        return 1

    monkeypatch.setattr(device_steps, "pytest_run", failed_run)
    monkeypatch.setattr(device_steps.device_measure, "batch_counts", lambda ctx, preset: {})
    ctx = Context("workers", tmp_path, tmp_path, device_steps.profile_named("smoke"), (0, 2), 2, dry_run=True)
    fragment, code = device_steps.run_step(ctx)
    assert code == 1 and fragment["status"] == "failed"
    assert fragment["summary"]["pytest_exit"] == 1 and fragment["summary"]["cases"]
