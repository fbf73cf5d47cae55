"""The device campaign's steps (tools/device_steps.py, tools/device_measure.py, tools/device_gpu.py) on the CPU: the
GPU paths through the CPU stand-in, what a step keeps when it fails or is stopped, and where the baseline step
writes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import torch
from torch.utils.data import DataLoader

from lfw.measure import LoaderConfig, LoaderPass, measure_pass
from tools import device_gpu, device_measure, device_steps
from tools.device_context import GATE_MD, PIN_RUN, STAND_IN, Context, Skip, Stopped, profile_named
from tools.device_run import check_out

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "quick_run.json"


def context(step: str, tmp_path: Path, workers: tuple[int, ...] = (0,), **kw: Any) -> Context:
    (tmp_path / "out").mkdir(exist_ok=True)
    (tmp_path / "work").mkdir(exist_ok=True)
    return Context(step, tmp_path / "out", tmp_path / "work", profile_named("smoke"), workers, 2, **kw)


@pytest.mark.parametrize("workers", [0, 2])
def test_the_gpu_decode_pass_counts_its_images_on_the_cpu_stand_in(tiny_tree: Path, workers: int) -> None:
    """The decode member's real collate and step, ``decode_jpeg(list, device="cpu")`` for the GPU's: every image is
    counted (a list batch counted as 0, and the record then raised), and with workers the bytes reach the main
    process (torchvision's read_file tensors could not: the batch never came)."""
    loader = LoaderConfig(batch_size=16, num_workers=workers, timeout_s=60).build(
        device_gpu.jpeg_bytes(tiny_tree, 40), device_gpu.collate_bytes)
    decoded: list[int] = []

    def step(batch: Any) -> None:
        device_gpu.decode_step("cpu")(batch)
        decoded.append(len(batch[0]))

    result = measure_pass(loader, memory_interval_s=None, step=step)
    assert (result.images, result.batch_images, decoded) == (40, [16, 16, 8], [16, 16, 8])


def test_an_error_of_any_type_fails_the_step_with_its_figures(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def breaks(ctx: Context) -> dict[str, Any]:
        ctx.summary["members"] = {"pil-w0": {"images_per_s": 100.0}}
        raise ValueError("no rounds of cpu_ms_per_image to summarize")

    monkeypatch.setitem(device_steps.STEP_FUNCTIONS, "workers", breaks)
    fragment, code = device_steps.run_step(context("workers", tmp_path))
    assert code == 4 and fragment["status"] == "failed"
    assert fragment["reason"] == "ValueError: no rounds of cpu_ms_per_image to summarize"
    assert fragment["summary"]["members"] == {"pil-w0": {"images_per_s": 100.0}}


def test_a_stopped_step_ends_incomplete_with_its_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def stopped(ctx: Context) -> dict[str, Any]:
        ctx.summary["copies"] = {"batch-pinned": {"median": 1.0}}
        raise Stopped()

    monkeypatch.setitem(device_steps.STEP_FUNCTIONS, "workers", stopped)
    fragment, code = device_steps.run_step(context("workers", tmp_path))
    assert code == 3 and fragment["status"] == "incomplete"
    assert fragment["summary"] == {"copies": {"batch-pinned": {"median": 1.0}}}


def fake_pytest(ctx: Context, keyword: str, path: Path, *extra: str) -> int:
    path.write_bytes(FIXTURE_RUN.read_bytes())
    return 0


def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with its baselines folder, on a GPU runner, whose benchmark runs write the fixture run."""
    monkeypatch.setenv("LFW_RUNNER", "gpu")
    monkeypatch.setattr(device_steps, "REPO", tmp_path)
    monkeypatch.setattr(device_steps, "pytest_run", fake_pytest)
    baselines = tmp_path / "benchmarks" / "baselines"
    baselines.mkdir(parents=True)
    return baselines


def test_the_gate_verdict_stays_out_of_the_output_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The A/A gate's verdict.json went beside its --summary-md, into OUT, which the campaign then refused (exit 2)."""
    checkout(tmp_path, monkeypatch)
    ctx = context("baseline", tmp_path)
    summary = device_steps.step_baseline(ctx)
    assert summary["aa_passed"] and sorted(p.name for p in ctx.out.iterdir()) == [GATE_MD, "gpu.json"]
    check_out(ctx.out)
    assert (ctx.work / "verdict.json").is_file()


def test_a_dry_run_baseline_goes_to_a_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never benchmarks/baselines/, never back into OUT: a smoke baseline there would refuse the real run and
    could be committed."""
    baselines = checkout(tmp_path, monkeypatch)
    ctx = context("baseline", tmp_path, dry_run=True)
    summary = device_steps.step_baseline(ctx)
    assert not any(baselines.iterdir())
    assert Path(summary["baseline"]) == ctx.work / "baselines" / "gpu.json" and summary["scratch"]
    assert sorted(p.name for p in ctx.out.iterdir()) == [GATE_MD] and summary["aa_passed"]


def pin_run_in_out(ctx: Context, runner: str = "gpu", stopped: str | None = None) -> Path:
    """The pin step's run in OUT, saved as the fixture run made on ``runner`` with the context's profile."""
    raw = json.loads(FIXTURE_RUN.read_text())
    raw["machine_info"]["runner_class"] = runner
    raw["lfw_selection"] = {"keyword": "pin_memory", "markexpr": "", "profile": ctx.profile.name, "layers": ["cost"],
                            "cases": {"pin-memory/pin": {"outcome": "passed"}}, "stopped": stopped}
    path = ctx.out / PIN_RUN
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize(("runner", "stopped", "reused"), [("gpu", None, True), ("gpu", "SIGTERM", False),
                                                           ("cpu-16core", None, False)])
def test_the_baseline_step_reuses_a_whole_pin_run_of_this_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  runner: str, stopped: str | None,
                                                                  reused: bool) -> None:
    """On the first GPU machine the pin step's run, the baseline's and the A/A gate's were the same minute-long
    ``-k pin_memory`` run three times and the campaign outran its budget; a whole pin run of this runner class
    is now the baseline, and only the gate's run is made. A stopped run, or another runner's, is never used."""
    baselines = checkout(tmp_path, monkeypatch)
    runs: list[tuple[str, ...]] = []

    def counting(ctx: Context, keyword: str, path: Path, *extra: str) -> int:
        runs.append(extra)
        return fake_pytest(ctx, keyword, path, *extra)

    monkeypatch.setattr(device_steps, "pytest_run", counting)
    ctx = context("baseline", tmp_path)
    pin = pin_run_in_out(ctx, runner, stopped)
    summary = device_steps.step_baseline(ctx)
    assert summary["from_pin_run"] is reused and len(runs) == (1 if reused else 2)
    assert all(device_steps.BASELINE_ARGS[0] in extra for extra in runs)
    assert ((baselines / "gpu.json").read_bytes() == pin.read_bytes()) is reused


@pytest.mark.parametrize(("dry_run", "gate_exit", "status"), [(True, 0, "done"), (True, 1, "done"),
                                                                (True, 2, "failed"), (False, 1, "failed")])
def test_a_dry_runs_aa_verdict_is_recorded_not_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      dry_run: bool, gate_exit: int, status: str) -> None:
    """Two one-round smoke runs: a regression the gate finds there is noise, not a failed probe; a gate that
    cannot reach a verdict (exit 2) fails the path all the same, and a real run's regression fails the step."""
    checkout(tmp_path, monkeypatch)
    monkeypatch.setattr(device_steps, "cuda_missing", lambda: None)
    monkeypatch.setattr(device_steps, "run_gate", lambda *paths: gate_exit)
    fragment, _ = device_steps.run_step(context("baseline", tmp_path, dry_run=dry_run))
    assert fragment["status"] == status and fragment["summary"]["gate_exit"] == gate_exit
    assert fragment["summary"]["aa_judged"] is not dry_run


def test_the_decode_step_keeps_one_configurations_workers_alive(tiny_tree: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Persistent workers of every decoder and count stayed alive for the whole rotation (4 decoders x 26 workers
    on the device, about 8 descriptors each in the main process); one configuration's at a time now."""
    monkeypatch.setenv("LFW_ROOT", str(tiny_tree))
    ctx = context("decode", tmp_path, workers=(1, 2), dry_run=True)
    ctx.device = "cpu"
    most, done = [0], threading.Event()

    def watch() -> None:
        me = psutil.Process()
        while not done.wait(0.01):
            most[0] = max(most[0], len(me.children()))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        summary = device_measure.step_decode(ctx)
    finally:
        done.set()
        watcher.join()
    assert 1 <= most[0] <= 2
    assert summary["members"]["gpu-decode-w2"]["images_per_s"] > 0
    gpu = summary["decoders"]["gpu-decode"]
    assert 0 <= gpu["best_cpu_ms_per_image_outside_decode"] <= gpu["best_cpu_ms_per_image"]


def test_a_wait_for_the_device_that_spins_is_left_out_of_the_cpu_outside_the_step() -> None:
    """CUDA's default wait spins a core: a step that spins 20 ms of CPU a batch adds 20 ms / 8 images of CPU to the
    tree's figure, and nothing to the figure outside the step (the saving's upper bound). It spins on its thread's
    CPU clock, so a busy machine stretches the step's wall time, never its CPU time."""
    def spin(_batch: object) -> None:
        end = time.thread_time() + 0.02
        while time.thread_time() < end:
            pass

    loader = DataLoader(list(range(64)), batch_size=8)
    results = [LoaderPass(loader, step=spin, memory_interval_s=None).run() for _ in range(2)]
    raw = min(1e3 * (r.cpu_s or 0.0) / r.images for r in results)
    outside = device_measure.cpu_ms_outside_step(results)
    assert outside is not None and raw >= 2.0 and outside < 1.0, (raw, outside)


def test_the_feed_step_stays_finite_however_many_products() -> None:
    """A chain of 110 products of random matrices overflowed bf16 to inf/NaN after a few dozen."""
    step, facts = device_gpu.matmul_step(20.0, "cpu", size=64, products=110)
    assert facts["matmuls_per_step"] == 110 and facts["ms_per_matmul"] > 0
    step([torch.zeros(2, 3, 8, 8, dtype=torch.uint8)])
    assert step.output_finite()


def test_a_failed_pytest_fails_its_step_with_its_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest exit 1 (a case's assertion failed, say the GPU-only pinning check) with its run written: the step is
    failed, so the campaign cannot exit 0, and the figures it measured are kept."""
    def failed_run(ctx: Context, keyword: str, path: Path, *extra: str) -> int:
        fake_pytest(ctx, keyword, path)
        return 1

    monkeypatch.setattr(device_steps, "pytest_run", failed_run)
    monkeypatch.setattr(device_steps.device_measure, "batch_counts", lambda ctx, preset: {})
    fragment, code = device_steps.run_step(context("workers", tmp_path, workers=(0, 2), dry_run=True))
    assert code == 1 and fragment["status"] == "failed" and fragment["measured_on"] == "cpu"
    assert fragment["summary"]["pytest_exit"] == 1 and fragment["summary"]["cases"]


def test_a_gpu_path_on_the_cpu_is_marked_a_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_steps, "cuda_missing", lambda: "no CUDA device (test)")
    monkeypatch.setitem(device_steps.STEP_FUNCTIONS, "bandwidth", lambda ctx: ctx.summary)
    monkeypatch.setitem(device_steps.STEP_FUNCTIONS, "decode", lambda ctx: ctx.summary)
    assert device_steps.run_step(context("bandwidth", tmp_path))[0] == {"status": "skipped",
                                                                       "reason": "no CUDA device (test)"}
    fragment, _ = device_steps.run_step(context("bandwidth", tmp_path, dry_run=True))
    assert (fragment["status"], fragment["measured_on"]) == ("done", STAND_IN)
    fragment, _ = device_steps.run_step(context("decode", tmp_path, dry_run=True))
    assert fragment["measured_on"] == f"cpu; its GPU part on the {STAND_IN}"
    fragment, code = device_steps.run_step(context("bandwidth", tmp_path, dry_run=True), require_cuda=True)
    assert code == 4 and fragment["status"] == "failed" and "the probe needs a CUDA device" in fragment["reason"]


def test_the_probe_fails_a_gpu_step_that_would_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A feed pipeline that cannot be built skipped its step with exit 0, so a probe passed without its figure."""
    def cannot(_ctx: Context) -> dict[str, Any]:
        raise Skip("simplejpeg is not installed")

    monkeypatch.setattr(device_steps, "cuda_missing", lambda: None)
    monkeypatch.setitem(device_steps.STEP_FUNCTIONS, "feed", cannot)
    fragment, code = device_steps.run_step(context("feed", tmp_path, dry_run=True))
    assert (code, fragment["status"]) == (0, "skipped")
    fragment, code = device_steps.run_step(context("feed", tmp_path, dry_run=True), require_cuda=True)
    assert (code, fragment["status"]) == (4, "failed") and "simplejpeg is not installed" in fragment["reason"]


def test_a_partial_file_left_by_a_stopped_write_does_not_refuse_the_output_folder(tmp_path: Path) -> None:
    """A step stopped inside write_atomic leaves ``.<name>.*.partial``; the next step's check refused the folder."""
    (tmp_path / GATE_MD).write_text("# gate")
    partial = tmp_path / f".{GATE_MD}.x1y2.partial"
    partial.write_text("# ga")
    check_out(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [GATE_MD]
