"""The device campaign (tools/device_campaign.py) on a CPU-only machine: the plan that fits one device command, the
whole dry run through every step's real code, the output folder's 8-file limit, steps stopped at their budget or
with the command, the machine's limits, and the offline wheels."""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from lfw.errors import LFWError
from tests.processes import gone_or_zombie
from tests.trees import TINY_IMAGES
from tools import device_charts, device_run, device_steps
from tools.device_campaign import PROBE_STEPS, build_parser, plan_of, selected_steps
from tools.device_context import (
    DEFAULT_WORKERS,
    MAX_OUT_FILES,
    OUT_FILES,
    PROBE_BUDGET_S,
    STAND_IN,
    STEP_LIMIT_S,
    STEP_NAMES,
    STEPS,
    TOTAL_BUDGET_S,
    Context,
    parse_workers,
)
from tools.device_headlines import headlines
from tools.device_run import GRACE_S, Log, check_out, run_child, wheel_command
from tools.device_steps import workers_keyword

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RUN = ROOT / "tests" / "fixtures" / "quick_run.json"
HANG_GUARD_S = 600  # far beyond what these runs need: a failure to stop, not a timing
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without CUDA does")
DEVICE_TIME_S = 15 * 60  # a session's device time, machine starts included (the device tool's README)
MACHINE_START_S = 120  # what docs/device.md plans for one start of a bare machine


def campaign(out: Path, tree: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = {**os.environ, "LFW_ROOT": str(tree), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "tools/device_campaign.py", "--out", str(out), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    path = out / "campaign.json"
    return done, json.loads(path.read_text()) if path.exists() else {}


def test_one_command_runs_the_gpu_steps_first_within_nine_minutes() -> None:
    assert [s.name for s in STEPS] == ["pin", "bandwidth", "feed", "baseline", "decode", "workers"]
    gpu_only = [s.gpu for s in STEPS]
    assert gpu_only == sorted(gpu_only, reverse=True)  # every step that needs a GPU before any that does not
    assert all(0 < s.budget_s <= STEP_LIMIT_S for s in STEPS) and TOTAL_BUDGET_S <= 540
    assert sum(s.budget_s for s in STEPS) < TOTAL_BUDGET_S  # room for the wheels, the versions and the data
    assert max(DEFAULT_WORKERS) == 16 and len(DEFAULT_WORKERS) <= 4
    assert len(OUT_FILES) + 1 <= MAX_OUT_FILES  # every role, and the baseline file


RUN_CALL = re.compile(r'^run\(command="([^"]+)", carry=\[([^\]]*)\], timeout_s=(\d+)\)$', re.MULTILINE)


def test_the_plan_in_docs_is_one_probe_and_one_main_command_in_fifteen_minutes() -> None:
    """The two device calls docs/device.md gives to paste: valid commands of this campaign, the probe within 60-120 s,
    the main command within 540 s and its 600 s cut, .whl carried, and start + probe + main inside 15 minutes."""
    calls = RUN_CALL.findall((ROOT / "docs" / "device.md").read_text())
    assert len(calls) == 2, calls
    plans = []
    for command, carry, timeout in calls:
        argv = shlex.split(command)
        assert argv[:2] == ["python3", "tools/device_campaign.py"] and carry == '".whl"'
        plans.append((plan_of(build_parser().parse_args([a.replace("$OUT", "/out") for a in argv[2:]])),
                      int(timeout)))
    (probe, probe_timeout), (main, main_timeout) = plans
    assert probe["mode"] == "probe" and probe["steps"] == list(PROBE_STEPS) and probe["profile"] == "smoke"
    assert 60 <= probe["total_budget_s"] == PROBE_BUDGET_S <= 120
    assert probe["total_budget_s"] + GRACE_S < probe_timeout <= 160
    assert main["mode"] == "campaign" and main["steps"] == list(STEP_NAMES) and main["profile"] == "full"
    assert main["total_budget_s"] == TOTAL_BUDGET_S and main["total_budget_s"] + GRACE_S + 30 <= main_timeout <= 600
    assert MACHINE_START_S + probe_timeout + main["total_budget_s"] + GRACE_S <= DEVICE_TIME_S - 60


def test_step_selection_keeps_campaign_order_and_names_unknown_steps() -> None:
    assert selected_steps(None) == [s.name for s in STEPS]
    assert selected_steps(None, probe=True) == ["decode", "pin", "bandwidth", "feed", "baseline"]
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
    (tmp_path / "verdict.json").write_text("")
    with pytest.raises(LFWError, match=r"verdict\.json, which the campaign does not write"):
        check_out(tmp_path)
    (tmp_path / "verdict.json").unlink()
    for i in range(MAX_OUT_FILES - len(OUT_FILES)):
        (tmp_path / f"gpu-{i}.json").write_text("{}")
    with pytest.raises(LFWError, match="brings back 8 at most"):
        check_out(tmp_path)


@no_cuda
@pytest.mark.parametrize("step", [s.name for s in STEPS if s.gpu])
def test_outside_a_dry_run_gpu_steps_skip_with_a_one_line_reason(step: str, tmp_path: Path) -> None:
    ctx = Context(step, tmp_path, tmp_path, device_steps.profile_named("smoke"), (0,), 2)
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


def test_a_step_over_its_budget_is_stopped_with_its_children_and_keeps_its_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM at the budget: the step writes the figures it has (its fragment); its own child goes too."""
    monkeypatch.setattr(device_run, "GRACE_S", 5.0)
    pid_file, fragment = tmp_path / "child.pid", tmp_path / "fragment.json"
    code = textwrap.dedent(f"""
        import json, signal, subprocess, sys, time
        def stop(signum, frame):
            open({str(fragment)!r}, "w").write(json.dumps({{"status": "incomplete", "summary": {{"rounds": 2}}}}))
            sys.exit(3)
        signal.signal(signal.SIGTERM, stop)
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(p.pid)); print("started", flush=True); time.sleep(600)""")
    result: dict[str, Any] = {}
    with Log(tmp_path) as log:
        # a budget of 3 s: time for the step to start its own child and say so on a loaded 2-core runner
        runner = threading.Thread(target=lambda: result.update(run_child([sys.executable, "-c", code], 3.0,
                                                                          os.environ, log, "sleeper", fragment)))
        runner.start()
        runner.join(HANG_GUARD_S)
    assert not runner.is_alive(), "the step was not stopped"
    assert result["status"] == "incomplete" and result["reason"] == "stopped at its budget of 3 s"
    assert result["summary"] == {"rounds": 2} and result["exit_code"] == 3
    assert gone_or_zombie(int(pid_file.read_text()), HANG_GUARD_S), "the step's own child outlived it"
    assert "started" in (tmp_path / "campaign.log").read_text()


def test_a_command_cut_from_outside_leaves_no_step_running(tmp_path: Path) -> None:
    """The device tool kills a command cut at its limit with its process group: a step that started a session of
    its own outlived it and could overlap the next command on a warm machine."""
    pid_file = tmp_path / "step.pid"
    driver = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from tools.device_run import Log, run_child
        step = "import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
        with Log(Path({str(tmp_path)!r})) as log:
            run_child([sys.executable, "-c", step], 600, os.environ, log, "step")""")
    command = subprocess.Popen([sys.executable, "-c", driver], start_new_session=True)  # the tool's command
    try:
        deadline = threading.Event()
        while not pid_file.exists() and command.poll() is None and not deadline.wait(0.1):
            pass
        step = int(pid_file.read_text())
        os.killpg(command.pid, signal.SIGKILL)  # the cut: the command's process group
    finally:
        command.wait(HANG_GUARD_S)
    assert gone_or_zombie(step, 30), "the step outlived the command that started it"


def test_the_campaign_raises_its_open_files_limit_and_records_the_limits(tmp_path: Path) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 256:
        pytest.skip(f"needs a finite hard limit of open files above 256, this machine has {hard}")
    code = ("import resource, json; from tools.device_run import raise_open_files_limit, machine_limits; "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1])); "
            "before, now = raise_open_files_limit(); print(json.dumps(machine_limits(before)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=HANG_GUARD_S)
    limits = json.loads(done.stdout)
    assert (limits["open_files_soft_before"], limits["open_files_soft"], limits["open_files_hard"]) == (256, hard, hard)
    assert limits["mem_available_mib"] > 0 and limits["shm_total_mib"] >= limits["shm_free_mib"] >= 0


def test_the_dry_run_runs_every_steps_real_code_and_writes_every_figure(tmp_path: Path, tiny_tree: Path) -> None:
    """The whole dry run, GPU paths on the CPU stand-in (or on CUDA where there is one). It starts a dozen
    processes that import torch, four pytest sessions and the gate: a few minutes on a loaded 2-core runner, hence
    generous budgets here (the campaign's own are for the GPU machine)."""
    baselines = sorted((ROOT / "benchmarks" / "baselines").iterdir())
    out = tmp_path / "out"
    done, doc = campaign(out, tiny_tree, "--dry-run", "--total-budget", "1500", "--step-budget", "300")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == sorted(["campaign.json", "campaign.log", "gate.md",
                                                            "pin-memory.json", "workers.json"])
    assert sorted((ROOT / "benchmarks" / "baselines").iterdir()) == baselines  # nothing saved there
    assert doc["run"]["mode"] == "dry run" and list(doc["steps"]) == list(STEP_NAMES)
    assert {n: s["status"] for n, s in doc["steps"].items()} == dict.fromkeys(STEP_NAMES, "done")
    limits = doc["limits"]
    assert limits["open_files_soft"] == limits["open_files_hard"] and limits["mem_available_mib"] > 0
    assert doc["environment"]["torch"] == torch.__version__ and doc["environment"]["pytest-benchmark"]
    stand_in = not torch.cuda.is_available()
    s = {n: step["summary"] for n, step in doc["steps"].items()}
    for name in ("pin", "bandwidth", "feed", "baseline"):
        assert doc["steps"][name]["measured_on"] == (STAND_IN if stand_in else "cuda")
    assert s["pin"]["cases"]["nopin"]["images_per_s"] > 0 and s["pin"]["h2d_floor_ms_per_batch"] > 0
    assert s["pin"]["batch_bytes"] == TINY_IMAGES * (3 * 250 * 250 * 4 + 8) and s["pin"]["peak_h2d_gb_s"] > 0
    assert set(s["bandwidth"]["copies"]) == {"batch-pinned", "batch-pageable", "256MiB-pinned", "256MiB-pageable"}
    assert all(r["median"] > 0 and r["share_of_peak"] > 0 for r in s["bandwidth"]["copies"].values())
    assert s["feed"]["step_output_finite"] and 0 < s["feed"]["au_measured"] <= 1 and s["feed"]["batches"] > 0
    assert s["feed"]["pipeline"] == "simplejpeg-slots-w2" and 0 <= s["feed"]["au_predicted"] <= 1
    assert s["baseline"]["aa_passed"] and s["baseline"]["scratch"] and s["baseline"]["files"] == ["gate.md"]
    assert not Path(s["baseline"]["baseline"]).exists()  # in the command's scratch folder, removed with it
    assert (out / "gate.md").read_text().strip()
    gpu = s["decode"]["members"]["gpu-decode-w0"]
    assert gpu["images_per_s"] > 0 and gpu["measured_on"] == (STAND_IN if stand_in else "cuda")
    assert s["decode"]["decoders"]["gpu-decode"]["ceiling_images_per_s"] > 0
    assert {"pil-w0", "pil-w2", "simplejpeg-w2", "gpu-decode-w2"} <= set(s["decode"]["members"])
    assert set(s["workers"]["cases"]) == {"workers0-none", "workers0-uint8", "workers2-none", "workers2-uint8"}
    assert set(s["workers"]["knee"]) == {"none", "uint8"} and s["workers"]["per_batch"]["none"]["batch_bytes"] > 0
    log = (out / "campaign.log").read_text()
    gpu_lines = [line for line in log.splitlines() if line.startswith("   ") and "GB/s" in line]
    assert gpu_lines and all(f"[{STAND_IN}]" in line for line in gpu_lines) == stand_in


def test_a_step_over_its_budget_ends_the_campaign_incomplete(tmp_path: Path, tiny_tree: Path) -> None:
    done, doc = campaign(tmp_path / "out", tiny_tree, "--dry-run", "--step", "workers", "--step-budget", "1")
    assert done.returncode == 3, done.stderr[-2000:]
    assert doc["steps"]["workers"]["status"] == "incomplete"
    assert doc["steps"]["workers"]["reason"] == "stopped at its budget of 1 s"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, tiny_tree: Path) -> None:
    done, _ = campaign(tmp_path / "out", tiny_tree, "--dry-run", "--step", "gpu")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert done.stderr.startswith("error: unknown step 'gpu'")


GPU_SUMMARIES = {  # the shapes the GPU steps return (tools/device_steps.py, tools/device_measure.py)
    "pin": {"cases": {"nopin": {"images_per_s": 1.0, "h2d_ms_per_batch": 2.0}, "pin": {"images_per_s": 1.5}},
            "h2d_floor_ms_per_batch": 1.0, "peak_h2d_gb_s": 50.0},
    "bandwidth": {"copies": {"batch-pinned": {"median": 40.0, "share_of_peak": 0.8}}, "peak_gb_s": 50.0},
    "feed": {"pipeline": "simplejpeg-w8", "step_ms_measured": 20.1, "au_measured": 0.9, "au_predicted": 0.92,
             "recommendation": "nothing to gain", "step_output_finite": True},
    "baseline": {"baseline": "benchmarks/baselines/gpu.json", "gate_exit": 0, "aa_passed": True},
}


@pytest.mark.parametrize("step", sorted(GPU_SUMMARIES))
def test_gpu_step_headlines_read_their_summaries_and_mark_the_stand_in(step: str) -> None:
    lines = headlines(step, {"status": "done", "summary": GPU_SUMMARIES[step], "measured_on": "cuda"})
    assert lines and not any("no headline" in line or STAND_IN in line for line in lines)
    stand_in = headlines(step, {"status": "done", "summary": GPU_SUMMARIES[step], "measured_on": STAND_IN})
    assert stand_in and all(line.startswith(f"   [{STAND_IN}] ") for line in stand_in)
    assert headlines(step, {"status": "skipped", "reason": "no CUDA device"}) == []


def test_charts_never_draw_stand_in_figures_as_gpu_figures(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"version": 1, "steps": {
        "bandwidth": {"status": "done", "measured_on": STAND_IN, "summary": GPU_SUMMARIES["bandwidth"]},
        "decode": {"status": "done", "measured_on": "cpu", "summary": {"members": {
            "pil-w0": {"images_per_s_rounds": [100.0]},
            "gpu-decode-w0": {"images_per_s_rounds": [300.0], "measured_on": STAND_IN}}}}}}
    (tmp_path / "campaign.json").write_text(json.dumps(doc))
    assert device_charts.main([str(tmp_path), "--out", str(tmp_path / "charts")]) == 0
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == ["device-workers.png"]  # no bandwidth chart
    assert f"bandwidth (measured on the {STAND_IN} of a dry run: not GPU figures)" in capsys.readouterr().out


def test_charts_leave_out_a_probes_figures_and_take_pin_from_the_baseline_run(tmp_path: Path) -> None:
    """On the first GPU machine the pin step stopped at its budget while the baseline step saved the same cases:
    the chart then drew the probe's 160-image pin figures beside the full campaign's. The probe's steps are left
    out (another profile) and the pin figures come from the baseline's run."""
    probe, main = tmp_path / "probe", tmp_path / "main"
    probe.mkdir()
    main.mkdir()
    pin = {"cases": {"pin": {"images_per_s_rounds": [1.0], "h2d_ms_per_batch_rounds": [9.0]}},
           "h2d_floor_ms_per_batch": 1.0}
    (probe / "campaign.json").write_text(json.dumps({"version": 1, "run": {"profile": "smoke"}, "steps": {
        "pin": {"status": "done", "measured_on": "cuda", "summary": pin}}}))
    shutil.copyfile(FIXTURE_RUN, main / "gpu.json")
    bandwidth = {"copies": {"batch-pinned": {"bytes": 48_000_000}}, "peak_gb_s": 48.0}
    (main / "campaign.json").write_text(json.dumps({"version": 1, "run": {"profile": "full"}, "steps": {
        "pin": {"status": "incomplete", "summary": {"files": ["pin-memory.json"]}},
        "bandwidth": {"status": "done", "measured_on": "cuda", "summary": bandwidth},
        "baseline": {"status": "incomplete", "summary": {"files": ["gpu.json"]}}}}))
    steps, left_out = device_charts.merged_steps([probe, main])
    assert left_out == [f"pin of {probe} (profile smoke, not full)"]
    assert steps["pin"]["from"] == "gpu.json" and steps["pin"]["h2d_floor_ms_per_batch"] == 1.0
    assert steps["pin"]["cases"] == device_steps.case_summary(FIXTURE_RUN, "pin-memory")


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


FAKE_PIP = """#!/bin/sh
# pip as device_wheels.sh calls it, without a network: 'download ... -d DIR PKG==VER...' writes empty wheels
if [ "$3" = download ]; then
  while [ $# -gt 0 ]; do
    case "$1" in
      -d) shift; dir=$1 ;;
      *==*) n=$(echo "${1%%==*}" | tr - _); touch "$dir/$n-${1##*==}-py3-none-any.whl" ;;
    esac; shift; done
fi
exit 0
"""


def test_device_wheels_runs_on_a_fresh_checkout_without_a_virtualenv(tmp_path: Path) -> None:
    """It called .venv/bin/python, which a fresh checkout lacks; any python3 with pip will do."""
    checkout, bin_dir = tmp_path / "checkout", tmp_path / "bin"
    (checkout / "tools").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copy(ROOT / "tools" / "device_wheels.sh", checkout / "tools")
    shutil.copy(ROOT / "constraints.txt", checkout)
    (bin_dir / "python3").write_text(FAKE_PIP)
    (bin_dir / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PY"} | {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(checkout / "tools" / "device_wheels.sh")], env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    wheels = sorted(p.name.split("-")[0] for p in (checkout / ".whl").iterdir())
    assert wheels == ["memory_profiler", "py_cpuinfo2", "pytest_benchmark", "ruptures", "simplejpeg", "torchdata"]
    assert "installable on CPython 3.12" in done.stdout
