"""The device campaign (lfw/gate/device_campaign.py, run as tools/device_campaign.py) on a CPU-only machine: the
plan that fits one device command, the steps as one pytest run of the device profile and their statuses, the output
folder's 8-file limit, a child stopped at its budget or with the command, the machine's limits, the offline wheels,
and (slow) the whole dry run."""

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
from lfw.gate import device_campaign as C
from lfw.measure.resources import usable_cores
from lfw.results import load_run
from lfw.suite.matrix import GROUPS as MATRIX
from lfw.suite.profiles import DEVICE_STEPS, device_peers
from tests.processes import gone_or_zombie

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RUN = ROOT / "tests" / "fixtures" / "quick_run.json"
HANG_GUARD_S = 600  # far beyond what these runs need: a failure to stop, not a timing
DEVICE_TIME_S = 15 * 60  # a session's device time, machine starts included (the device tool's README)
MACHINE_START_S = 120  # what docs/device.md plans for one start of a bare machine


def campaign(out: Path, tree: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = {**os.environ, "LFW_ROOT": str(tree), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "tools/device_campaign.py", "--out", str(out), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    path = out / "campaign.json"
    return done, json.loads(path.read_text()) if path.exists() else {}


def test_one_command_measures_the_gpu_steps_first_and_fits_nine_minutes() -> None:
    assert C.STEP_NAMES == ("bandwidth", "decode", "feed", "pin", "workers", "baseline", "peers")
    measuring = [s for s in C.STEP_NAMES if s != "baseline" and s not in C.AFTER_BASELINE]
    tests = [DEVICE_STEPS[s].strip("()").split()[0] for s in measuring]
    assert tests == sorted(tests), "the steps run in the order pytest collects their test files"
    assert all(0 < b <= C.STEP_LIMIT_S for b in C.STEPS.values()) and C.TOTAL_BUDGET_S <= 540
    first = [s for s in C.STEP_NAMES if s not in C.AFTER_BASELINE]
    assert C.STEP_NAMES[len(first):] == C.AFTER_BASELINE  # the peers take what is left, last
    assert sum(C.STEPS[s] for s in first) < C.TOTAL_BUDGET_S  # room for the wheels and the versions
    assert set(C.GROUPS.values()) <= set(MATRIX) | {"device-copy", "device-feed"}
    assert set(C.BASELINE_STEPS) <= set(C.GROUPS) and set(C.PROBE_STEPS) < set(C.STEP_NAMES)


def test_the_peers_step_runs_every_peer_at_the_device_counts_beside_slot_batches_there() -> None:
    from lfw.suite.matrix import _peers

    assert DEVICE_STEPS["peers"] == device_peers(usable_cores())
    assert device_peers(16) == "(test_peers and not processes and (t8] or w8] or t16] or w16]))"
    assert device_peers(2) == "(test_peers and not processes and (t1] or w1] or t2] or w2]))"
    sixteen = _peers((8, 16)).ids
    assert {"dataloader-simplejpeg-slots-w8", "dataloader-simplejpeg-slots-w16", "grain-threads-t16"} <= set(sixteen)
    assert [c for c in _peers((1, 2)).ids if "slots" in c] == ["dataloader-simplejpeg-slots-w2"]
    assert [c for c in _peers((6, 12)).ids if c.startswith("spdl")] == [f"spdl-t{n}" for n in (1, 2, 4, 6, 8, 12, 16)]


def test_the_peers_step_gives_each_peer_its_paired_ratio_to_dataloaders_best() -> None:
    from lfw.results import Case
    from lfw.results import keys as K
    from lfw.results.record import SCHEMA_VERSION

    rotation = {"group": "peers", "seed": 0, "rounds": 3, "members": ["a", "b", "c", "d"]}

    def case(name: str, peer: str, rounds: list[float], rotated: bool = True) -> Case:
        extra = {K.SCHEMA_VERSION: SCHEMA_VERSION, K.IMAGES_PER_S: rounds[1], f"{K.IMAGES_PER_S}_rounds": rounds,
                 **({K.ROTATION: rotation} if rotated else {})}
        return Case(f"test_peers[{name}]", f"b::test_peers[{name}]", "peers", {"peer": peer, "pipeline": name},
                    (1.0,) * len(rounds), extra)

    cases = [case("dataloader-w8", "dataloader", [1000, 1100, 1200]),
             case("dataloader-w16", "dataloader", [1500, 1600, 1700]), case("grain-t16", "grain", [750, 800, 850]),
             case("litdata-w16", "litdata", [1500, 1600, 1700], rotated=False)]
    rows: dict[str, dict[str, Any]] = {c.name: {} for c in cases}
    assert C.paired_to_dataloader(cases, rows) == {"dataloader_best": "test_peers[dataloader-w16]"}
    assert rows["test_peers[grain-t16]"]["ratio_to_dataloader_best"] == [0.5, 0.5, 0.5]
    assert rows["test_peers[litdata-w16]"] == {} == rows["test_peers[dataloader-w8]"]  # unpaired; a reference
    assert C.paired_to_dataloader(cases[2:], {c.name: {} for c in cases[2:]}) == {}  # no reference ran
    step = {"measured_on": "cuda", "dataloader_best": "test_peers[dataloader-w16]",
            "cases": {"test_peers[grain-t16]": {"images_per_s": 800.0, **rows["test_peers[grain-t16]"]}}}
    assert C.headlines(step)[0].endswith("; 0.50 [0.50, 0.50] of test_peers[dataloader-w16]'s images/s, paired")


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
        plans.append((C.plan_of(C.build_parser().parse_args([a.replace("$OUT", "/out") for a in argv[2:]])),
                      int(timeout)))
    (probe, probe_timeout), (main, main_timeout) = plans
    assert probe["mode"] == "probe" and probe["steps"] == list(C.PROBE_STEPS) and probe["profile"] == "smoke"
    assert 60 <= probe["total_budget_s"] == C.PROBE_BUDGET_S <= 120
    assert probe["total_budget_s"] + C.GRACE_S < probe_timeout <= 160
    assert main["mode"] == "campaign" and main["steps"] == list(C.STEP_NAMES) and main["profile"] == "device"
    assert main["total_budget_s"] == C.TOTAL_BUDGET_S and main["total_budget_s"] + C.GRACE_S + 30 <= main_timeout <= 600
    assert MACHINE_START_S + probe_timeout + main["total_budget_s"] + C.GRACE_S <= DEVICE_TIME_S - 60


def test_step_selection_keeps_campaign_order_and_bad_input_is_one_line() -> None:
    assert C.selected_steps(None) == list(C.STEP_NAMES)
    assert C.selected_steps(None, probe=True) == list(C.PROBE_STEPS)
    assert C.selected_steps(["workers", "pin,decode"]) == ["decode", "pin", "workers"]
    with pytest.raises(LFWError, match="unknown step 'gpu'; choose from: bandwidth, decode"):
        C.selected_steps(["gpu"])
    assert C.plan_of(C.build_parser().parse_args(["--out", "o", "--workers", "16,0,2"]))["workers"] == (0, 2, 16)
    for bad in ("", "a", "-1"):
        with pytest.raises(LFWError, match="--workers"):
            C.plan_of(C.build_parser().parse_args(["--out", "o", "--workers", bad]))
    with pytest.raises(LFWError, match="--step-budget must be between 0 and 540"):
        C.plan_of(C.build_parser().parse_args(["--out", "o", "--step-budget", "600"]))


def test_bad_input_exits_2_before_anything_runs(tmp_path: Path) -> None:
    assert C.main(["--out", str(tmp_path / "out"), "--step", "gpu"]) == 2
    assert not (tmp_path / "out").exists()


def test_the_steps_are_one_pytest_run_of_their_cases_with_the_dry_runs_stand_in(tmp_path: Path) -> None:
    args = C.build_parser().parse_args(["--out", str(tmp_path), "--dry-run", "--step-ms", "5"])
    plan = C.plan_of(args)
    argv = C.pytest_argv(plan, args, ["decode", "workers"], tmp_path / "run.json", tmp_path / "steps.xml")
    assert argv[argv.index("-k") + 1] == f"{DEVICE_STEPS['decode']} or {DEVICE_STEPS['workers']}"
    assert argv[argv.index("--bench-profile") + 1] == "smoke" and "--bench-stand-in" in argv
    assert "--bench-step-ms=5.0" in argv and f"--benchmark-json={tmp_path / 'run.json'}" in argv
    main = C.build_parser().parse_args(["--out", str(tmp_path)])
    assert "--bench-stand-in" not in C.pytest_argv(C.plan_of(main), main, ["pin"], tmp_path / "r.json", None)


def test_step_statuses_come_from_the_saved_run_and_its_junit_times(tmp_path: Path) -> None:
    junit = tmp_path / "steps.xml"
    junit.write_text('<testsuites><testsuite><testcase name="test_pin_memory[nopin]" time="1.5"/>'
                     '<testcase name="test_pin_memory[pin]" time="0.5"/><testcase name="test_device_feed" time="2"/>'
                     '</testsuite></testsuites>')
    times = C.step_times(junit)
    assert times["pin"] == 2.0 and times["feed"] == 2.0 and times["decode"] == 0.0
    ran = {"status": "done", "exit_code": 0}
    rows = C.step_results(FIXTURE_RUN, ["bandwidth", "pin"], ran, times)
    assert rows["pin"]["status"] == "done" and rows["pin"]["cases"]["test_pin_memory[nopin]"]["images_per_s"] > 0
    assert rows["bandwidth"]["status"] == "skipped" and rows["pin"]["measured_on"] == "cpu"
    assert rows["pin"]["cases"]["test_pin_memory[nopin]"]["limited_by"].startswith(("the machine", "the decoder",
                                                                                   "idle cores", "the main"))
    assert rows["bandwidth"]["cpus"].startswith(f"{load_run(FIXTURE_RUN).machine['usable_cores']} usable")
    stopped = {"status": "incomplete", "exit_code": -15, "reason": "stopped at its budget of 3 s"}
    assert C.step_results(tmp_path / "none.json", ["pin"], stopped, {})["pin"]["status"] == "incomplete"
    junit.write_text('<testsuites><testsuite><testcase name="test_peers[grain-t1]" time="0.5"><skipped '
                     'message="grain not measured: not importable"/></testcase></testsuite></testsuites>')
    every_case_skipped = C.step_results(tmp_path / "none.json", ["peers"], ran, C.step_times(junit),
                                        C.step_skips(junit))  # pytest-benchmark saved no run
    assert every_case_skipped["peers"] == {**ran, "status": "skipped", "elapsed_s": 0.5,
                                           "reason": "grain not measured: not importable"}
    assert C.step_results(tmp_path / "none.json", ["pin"], ran, {}, C.step_skips(junit))["pin"]["status"] == "failed"


def test_headlines_say_each_figure_beside_its_limit_and_mark_the_stand_in() -> None:
    step = {"measured_on": C.STAND_IN, "cases": {
        "copy": {"h2d_gb_s": 50.0, "h2d_share_of_peak": 0.9}, "fed": {"au_measured": 0.97, "au_predicted": 0.98},
        "decode": {"images_per_s": 1000.0, "own_decoder_share": 0.5, "cpu_ms_per_image": 1.0,
                   "limited_by": "the machine: 1.95 of the 1.97 cores the machine gave busy"}},
        "cpus": "2 usable cores of 2 logical CPUs"}
    lines = C.headlines(step)
    assert lines == ["   CPUs: 2 usable cores of 2 logical CPUs",
                     f"   [{C.STAND_IN}] copy: 50.0 GB/s (90% of the measured peak)",
                     f"   [{C.STAND_IN}] fed: AU measured 97.0%, simulated 98.0% (ceiling 100%)",
                     f"   [{C.STAND_IN}] decode: 1,000 img/s, 50% of its own decoder's limit, 1.000 CPU ms/img; "
                     "limited by the machine: 1.95 of the 1.97 cores the machine gave busy"]
    assert not any(C.STAND_IN in line for line in C.headlines({**step, "measured_on": "cuda"}))
    assert C.headlines({"measured_on": "cpu", "cases": {}}) == []  # the CPUs are named on the first step only


def test_out_folder_refuses_foreign_files_and_more_than_eight(tmp_path: Path) -> None:
    for name in ("campaign.json", "campaign.log", "gate.md", "device.json", "gpu.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / ".device.json.x.partial").write_text("")  # what a stopped write leaves: removed
    C.check_out(tmp_path)
    assert not (tmp_path / ".device.json.x.partial").exists()
    (tmp_path / "verdict.json").write_text("")
    with pytest.raises(LFWError, match=r"verdict\.json, which the campaign does not write"):
        C.check_out(tmp_path)
    (tmp_path / "verdict.json").unlink()
    for i in range(4):
        (tmp_path / f"device-{i + 2}.json").write_text("{}")
    with pytest.raises(LFWError, match="brings back 8 at most"):
        C.check_out(tmp_path)


def test_an_earlier_campaign_of_another_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "campaign.json").write_text(json.dumps({"version": 1, "steps": {}}))
    with pytest.raises(LFWError, match="not a campaign file of version 2"):
        C.load_campaign(tmp_path / "campaign.json")
    assert C.load_campaign(tmp_path / "none.json") == {"version": 2, "steps": {}}


def test_the_baseline_is_never_replaced_without_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C, "REPO", tmp_path)
    own = tmp_path / "benchmarks" / "baselines" / "gpu.json"
    own.parent.mkdir(parents=True)
    own.write_text("kept")
    campaign_plan = {"dry_run": False}
    with pytest.raises(LFWError, match=r"gpu\.json exists; refresh it deliberately with --force"):
        C.baseline_target("gpu", campaign_plan, tmp_path, force=False)
    assert C.baseline_target("gpu", campaign_plan, tmp_path, force=True) == own
    assert C.baseline_target("gpu", {"dry_run": True}, tmp_path, force=False) == tmp_path / "baselines" / "gpu.json"
    assert own.read_text() == "kept"


def test_a_child_over_its_budget_is_stopped_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked to stop at its budget (a pytest run then saves its partial run), killed with what it started after
    the grace; the campaign log has its output."""
    monkeypatch.setattr(C, "GRACE_S", 2.0)
    pid_file = tmp_path / "child.pid"
    code = textwrap.dedent(f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(p.pid)); print("started", flush=True); time.sleep(600)""")
    result = C.Log(tmp_path).run("sleeper", [sys.executable, "-c", code], 3.0, dict(os.environ))
    assert result["status"] == "incomplete" and result["reason"] == "stopped at its budget of 3 s"
    assert result["exit_code"] == -9 and gone_or_zombie(int(pid_file.read_text()), HANG_GUARD_S)
    assert "started" in (tmp_path / "campaign.log").read_text()
    done = C.Log(tmp_path).run("fails", [sys.executable, "-c", "print('last words'); raise SystemExit(4)"], 60,
                               dict(os.environ))
    assert done["status"] == "failed" and done["reason"] == "exit 4: last words"


def test_a_command_cut_from_outside_leaves_no_step_running(tmp_path: Path) -> None:
    """The device tool kills a command cut at its limit with its process group: the children stay in it."""
    pid_file = tmp_path / "step.pid"
    driver = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from lfw.gate.device_campaign import Log
        step = "import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
        Log(Path({str(tmp_path)!r})).run("step", [sys.executable, "-c", step], 600, dict(os.environ))""")
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


def test_the_campaign_raises_its_open_files_limit_and_records_the_limits() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 256:
        pytest.skip(f"needs a finite hard limit of open files above 256, this machine has {hard}")
    code = ("import resource, json; from lfw.gate.device_campaign import raise_limits; "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1])); "
            "print(json.dumps(raise_limits()))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=HANG_GUARD_S)
    found = json.loads(done.stdout)
    assert (found["open_files_soft_before"], found["open_files_soft"], found["open_files_hard"]) == (256, hard, hard)
    assert found["mem_available_mib"] > 0 and found["shm_total_mib"] >= found["shm_free_mib"] >= 0


def test_wheels_for_another_python_are_left_out_and_named(tmp_path: Path) -> None:
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    other = "cp39" if here != "cp39" else "cp312"
    (tmp_path / f"ruptures-1.1.10-{other}-{other}-manylinux2014_x86_64.whl").write_bytes(b"")
    (tmp_path / "not-a-wheel.whl").write_bytes(b"")
    (tmp_path / "out").mkdir()
    log = C.Log(tmp_path / "out")
    assert C.install_wheels(tmp_path, tmp_path / "site", log) == {"installed": False, "folder": str(tmp_path)}
    assert "2 in" in (tmp_path / "out" / "campaign.log").read_text()


@pytest.mark.slow
def test_the_dry_run_measures_every_step_through_the_suite(tmp_path: Path, tiny_tree: Path) -> None:
    """The whole dry run: one pytest run of the device steps (GPU members on the CPU stand-in, or on CUDA where
    there is one), the baseline in a scratch folder, an A/A run and the gate. Generous budgets: a loaded runner."""
    baselines = sorted((ROOT / "benchmarks" / "baselines").iterdir())
    out = tmp_path / "out"
    done, doc = campaign(out, tiny_tree, "--dry-run", "--total-budget", "1500", "--step-budget", "300")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["campaign.json", "campaign.log", "device.json", "gate.md"]
    assert sorted((ROOT / "benchmarks" / "baselines").iterdir()) == baselines  # nothing saved there
    assert doc["run"]["mode"] == "dry run" and list(doc["steps"]) == list(C.STEP_NAMES)
    assert {n: s["status"] for n, s in doc["steps"].items()} == {**dict.fromkeys(C.STEP_NAMES, "done"),
                                                                 "peers": "skipped"}
    assert doc["limits"]["open_files_soft"] == doc["limits"]["open_files_hard"]
    assert doc["environment"]["torch"] == torch.__version__ and doc["environment"]["pytest-benchmark"]
    gpu = "cuda" if torch.cuda.is_available() else C.STAND_IN
    assert [doc["steps"][s]["measured_on"] for s in ("bandwidth", "decode", "feed")] == [gpu] * 3
    assert len(doc["steps"]["bandwidth"]["cases"]) == 4 and doc["steps"]["baseline"]["aa_passed"]
    assert any("gpu-decode-w0" in name for name in doc["steps"]["decode"]["cases"])
    peers = doc["steps"]["peers"]  # in a run of its own, after the baseline; the 40-image tree holds no pass of it
    assert "file" not in peers and "holds 40: use a larger one" in peers["reason"]  # every case skipped: no run
    assert set(doc["environment"]["peers_ready"]) == {"spdl", "dali", "grain", "webdataset", "litdata"}
    assert not Path(doc["steps"]["baseline"]["baseline"]).exists()  # in the command's scratch folder, removed
    log = (out / "campaign.log").read_text()
    gb_lines = [line for line in log.splitlines() if line.startswith("   ") and "GB/s" in line]
    assert gb_lines and all(f"[{C.STAND_IN}]" in line for line in gb_lines) == (gpu == C.STAND_IN)


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
    """It called .venv/bin/python, which a fresh checkout lacks; any python3 with pip will do. The peers that
    travel go at constraints-peers.txt's versions; a pin missing is one line and exit 2."""
    checkout, bin_dir = tmp_path / "checkout", tmp_path / "bin"
    (checkout / "tools").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copy(ROOT / "tools" / "device_wheels.sh", checkout / "tools")
    shutil.copy(ROOT / "constraints.txt", checkout)
    (bin_dir / "python3").write_text(FAKE_PIP)
    (bin_dir / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PY"} | {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def wheels_sh() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(checkout / "tools" / "device_wheels.sh")], env=env, capture_output=True,
                              text=True, timeout=HANG_GUARD_S)

    missing = wheels_sh()
    assert (missing.returncode, missing.stderr.strip()) == (2, "error: constraints-peers.txt pins no version of grain "
                                                               "(the wheels travel at the project's pinned versions)")
    shutil.copy(ROOT / "constraints-peers.txt", checkout)
    done = wheels_sh()
    assert done.returncode == 0, done.stderr
    wheels = {p.name.split("-")[0]: p.name.split("-")[1] for p in (checkout / ".whl").iterdir()}
    assert {"memory_profiler", "py_cpuinfo2", "pytest_benchmark", "ruptures", "simplejpeg", "torchdata"} < set(wheels)
    pins = dict(line.split("==") for line in (ROOT / "constraints-peers.txt").read_text().split() if "==" in line)
    assert {peer: wheels[peer] for peer in ("grain", "webdataset", "litdata")} == {
        peer: pins[peer] for peer in ("grain", "webdataset", "litdata")}
    assert "moto" not in wheels and "installable on CPython 3.12" in done.stdout


@pytest.mark.slow
def test_a_run_past_its_budget_ends_the_campaign_incomplete(tmp_path: Path, tiny_tree: Path) -> None:
    done, doc = campaign(tmp_path / "out", tiny_tree, "--dry-run", "--step", "workers", "--step-budget", "1")
    assert done.returncode == 3, done.stderr[-2000:]
    assert doc["steps"]["workers"]["status"] == "incomplete"
