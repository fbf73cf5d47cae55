"""The device campaign: the suite's ``device`` profile on a bare GPU machine without a network, within a time budget.

    python3 tools/device_campaign.py --out DIR [--step NAME ...] [--workers LIST] [--dry-run | --probe]
    make device-campaign OUT=DIR [STEPS=pin,decode] [CAMPAIGN_ARGS=...]

It installs the wheels of ``.whl/`` (``bash tools/device_wheels.sh``) beside the preinstalled torch and records the
versions and limits; the measuring steps (:data:`STEPS`) are then one pytest run within the sum of their budgets, and
``baseline`` saves it as ``benchmarks/baselines/gpu.json`` and gates an A/A run against it (docs/device.md); ``peers``
then runs on its own with what is left (its budget at most), all within ``--total-budget``. ``--dry-run``: the smoke
tree, the GPU members on the CPU stand-in (marked ``cpu stand-in``), the baseline in a scratch folder; ``--probe``:
the dry run of the steps with a GPU path, failing without CUDA. DIR receives at most 8 files: ``campaign.json``
(version 2, merged with an earlier one), ``campaign.log``, the run (``device.json``, ``device-2.json``...), the
baseline (``gpu*.json``), ``gate.md`` and the peers' run (``peers.json``...).

Exit codes: 0 every step done or skipped; 2 bad input; 3 a step outran its budget (incomplete); 4 a step failed;
130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lfw.cli.args import OneLineParser, parse_counts
from lfw.cli.child import Child
from lfw.cli.saving import write_atomic
from lfw.errors import LFWError, cli_entry
from lfw.gate.worktree import sigterm_as_interrupt
from lfw.suite.profiles import DEVICE_STEPS, PROFILES, device_worker_counts

REPO = Path(__file__).resolve().parents[2]  # the checkout: its benchmarks/ run, its baselines/ receive
# In the order one pytest run measures them (its test files' order), GPU first; then the baseline, which needs them;
# then the peers, a run of their own with what is left (reference rows: never in the baseline).
STEPS = {"bandwidth": 20, "decode": 110, "feed": 30, "pin": 60, "workers": 110, "baseline": 190, "peers": 90}  # s
GROUPS = {"bandwidth": "device-copy", "decode": "device-decode", "feed": "device-feed", "pin": "pin-memory",
          "workers": "workers-transform", "peers": "peers"}
AFTER_BASELINE = ("peers",)  # measured after the baseline, in a run of their own
STEP_NAMES = tuple(STEPS)
BASELINE_STEPS = ("decode", "pin", "workers")  # the cases the gpu baseline holds and its A/A run measures again
PROBE_STEPS = ("bandwidth", "decode", "feed", "pin", "baseline")  # those with a GPU path
STEP_LIMIT_S, TOTAL_BUDGET_S, PROBE_BUDGET_S, DATA_BUDGET_S, GRACE_S = 540.0, 540.0, 120.0, 90.0, 20.0
CHECK_TIMEOUT_S = 120.0  # the wheels' install, the versions, nvidia-smi: a hang there is an error, not a wait
MAX_OUT_FILES, VERSION, STAND_IN = 8, 2, "cpu stand-in"
EXIT_INCOMPLETE, EXIT_FAILED, GATE_REGRESSION = 3, 4, 1
CAMPAIGN_JSON, CAMPAIGN_LOG, GATE_MD = "campaign.json", "campaign.log", "gate.md"
OWN_FILES = (CAMPAIGN_JSON, CAMPAIGN_LOG, GATE_MD, "device*.json", "gpu*.json", "peers*.json")
VERSIONS_CODE = """import json, torch
from lfw.measure.machine import machine_info, package_version
info = {**machine_info(), "torch_cuda_build": torch.version.cuda, "cuda": torch.cuda.is_available()}
info.update({n: package_version(n) for n in ("pytest", "pytest-benchmark", "simplejpeg", "torchdata", "ruptures")})
import lfw.peers as P
info["peers_ready"] = {p: P.missing(p) or "ready" for p in P.PEERS}
print(json.dumps(info, default=str))"""
SHOWN = ("python", "torch", "torchvision", "numpy", "pytest", "pytest-benchmark", "torch_cuda_build", "cuda_device",
         "cuda_driver", "nvidia_smi", "cpu_model", "usable_cores", "total_memory_gib", "runner_class", "peers_ready")
NVIDIA_SMI_QUERY = "name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current"
HEADLINE_KEYS = ("images_per_s", "own_decoder_share", "cpu_ms_per_image", "main_cpu_share", "cpu_utilization",
                 "efficiency", "h2d_ms_per_batch", "h2d_gb_s", "h2d_share_of_peak", "au_measured", "au_predicted",
                 "prediction_error", "step_output_finite", "measured_on")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python3 tools/device_campaign.py", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="folder for the campaign's files (8 at most)")
    p.add_argument("--step", action="append", default=None, metavar="NAME",
                   help=f"run only this step (repeatable, or comma-separated): {', '.join(STEP_NAMES)}")
    p.add_argument("--workers", default=None, help="worker counts (default 0, 2, half and all of the usable cores)")
    p.add_argument("--profile", default=None, choices=sorted(PROFILES),
                   help="the data and rounds (default device; dry run and probe smoke)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true",
                      help="every step on tiny data, one round; GPU members on the CPU stand-in without a GPU")
    mode.add_argument("--probe", action="store_true", help=f"the dry run of {', '.join(PROBE_STEPS)}, failing "
                      f"without CUDA; total budget {PROBE_BUDGET_S:g} s")
    p.add_argument("--total-budget", type=float, default=None, metavar="S",
                   help=f"seconds for the whole command (default {TOTAL_BUDGET_S:g}; probe {PROBE_BUDGET_S:g})")
    p.add_argument("--step-budget", type=float, default=None, metavar="S",
                   help=f"seconds for each step instead of its own budget (at most {STEP_LIMIT_S:g})")
    p.add_argument("--wheels", type=Path, default=REPO / ".whl", help="wheels to install first (default .whl/)")
    p.add_argument("--site", type=Path, default=None, help="where the wheels go (default: a temporary folder)")
    p.add_argument("--pipeline", default=None, help="the feed step's decode pipeline: a spec or a decoders case id")
    p.add_argument("--feed-workers", type=int, default=None, help="the feed step's workers (default half the cores)")
    p.add_argument("--step-ms", type=float, default=None, help="the feed step's GPU step in ms (default 20)")
    p.add_argument("--force", action="store_true", help="let the baseline step replace an existing baseline")
    return p


def selected_steps(asked: list[str] | None, probe: bool = False) -> list[str]:
    """The steps to run, in campaign order: all when none is named (the probe: :data:`PROBE_STEPS`)."""
    if not asked:
        return list(PROBE_STEPS if probe else STEP_NAMES)
    names = {n.strip() for a in asked for n in a.split(",") if n.strip()}
    if unknown := sorted(names - set(STEP_NAMES)):
        raise LFWError(f"unknown step {unknown[0]!r}; choose from: {', '.join(STEP_NAMES)}")
    return [n for n in STEP_NAMES if n in names]


def plan_of(args: argparse.Namespace) -> dict[str, Any]:
    """What this command will do: its steps, worker counts, profile, mode and total budget (checked)."""
    small = args.dry_run or args.probe
    budget = args.total_budget if args.total_budget is not None else PROBE_BUDGET_S if args.probe else TOTAL_BUDGET_S
    if args.step_budget is not None and not 0 < args.step_budget <= STEP_LIMIT_S:
        raise LFWError(f"--step-budget must be between 0 and {STEP_LIMIT_S:g} seconds, got {args.step_budget:g}")
    if budget <= 0:
        raise LFWError(f"--total-budget must be more than 0 seconds, got {budget:g}")
    from lfw.measure.resources import usable_cores

    workers = (device_worker_counts(usable_cores()) if args.workers is None
               else parse_counts(args.workers, "--workers", fewest=1))
    return {"steps": selected_steps(args.step, args.probe), "workers": workers, "dry_run": small,
            "profile": args.profile or ("smoke" if small else "device"), "total_budget_s": budget,
            "mode": "probe" if args.probe else "dry run" if args.dry_run else "campaign"}


def check_out(out: Path) -> None:
    """Refuse a folder holding anything the campaign does not write, or more than 8 files (a device command brings
    back 8 at most); a ``.<name>.*.partial`` file a stopped write left (:func:`write_atomic`) is removed."""
    for partial in out.glob(".*.partial"):
        partial.unlink(missing_ok=True)
    entries = sorted(out.iterdir())
    foreign = [e.name for e in entries if e.is_dir() or not any(e.match(p) for p in OWN_FILES)]
    if foreign:
        raise LFWError(f"{out} holds {', '.join(foreign)}, which the campaign does not write; give it an empty folder")
    if len(entries) > MAX_OUT_FILES:
        raise LFWError(f"{out} holds {len(entries)} files; a device command brings back {MAX_OUT_FILES} at most")


def load_campaign(path: Path) -> dict[str, Any]:
    """An earlier ``campaign.json`` of this folder (commands into one folder add up their steps), else a new one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": VERSION, "steps": {}}
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise LFWError(f"{path} is not a campaign file of version {VERSION}; give another --out")
    return doc


class Log:
    """``campaign.log``: the campaign's lines, also on stdout; the children's output goes there too (:meth:`run`)."""

    def __init__(self, out: Path) -> None:
        self.path = out / CAMPAIGN_LOG

    def line(self, text: str) -> None:
        print(text, flush=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")

    def run(self, name: str, argv: list[str], budget_s: float, env: dict[str, str]) -> dict[str, Any]:
        """``argv`` for at most ``budget_s`` (:class:`~lfw.cli.child.Child`: its stdout here, its stderr into the
        log); past it, asked to stop and :data:`GRACE_S` later killed with everything it started. Its status:
        ``done``, ``failed`` (with the last line) or ``incomplete``; ``exit_code``, ``elapsed_s``, ``budget_s``."""
        self.line(f"== {name}: budget {budget_s:.0f} s\n$ {' '.join(argv)}")
        t0, last = time.monotonic(), "no output"
        child = Child(name, argv, log=self.path, cwd=REPO, env=env, grace_s=0.0, term_grace_s=GRACE_S)
        try:
            while (left := t0 + budget_s - time.monotonic()) > 0:
                with contextlib.suppress(queue.Empty):
                    if (line := child.lines.get(timeout=min(left, 1.0))) is None:
                        break
                    self.line(line.rstrip("\n"))
                    last = line.strip() or last
        finally:
            child.stop()  # a finished child is only reaped; Ctrl-C or the budget stops it and its tree
        code, elapsed = child.proc.returncode, time.monotonic() - t0
        status = "incomplete" if left <= 0 else "done" if code == 0 else "failed"
        self.line(f"== {name}: {status} (exit {code}) in {elapsed:.1f} s of {budget_s:.0f} s")
        record = {"status": status, "exit_code": code, "elapsed_s": round(elapsed, 1), "budget_s": round(budget_s, 1)}
        if status == "incomplete":
            return {**record, "reason": f"stopped at its budget of {budget_s:.0f} s"}
        return {**record, "reason": f"exit {code}: {last[:300]}"} if code else record


def checked(command: list[str], what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, check=False, env=env, timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise LFWError(f"{what} took more than {CHECK_TIMEOUT_S:g} s: {' '.join(command[:4])} ...") from None


def install_wheels(folder: Path, site: Path, log: Log) -> dict[str, Any]:
    """Install every wheel of ``folder`` this Python can use into ``site``, offline and without dependencies (the
    preinstalled torch stays); wheels for another Python are named and left out."""
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    def here(wheel: Path) -> bool:
        with contextlib.suppress(InvalidWheelFilename):
            return not parse_wheel_filename(wheel.name)[3].isdisjoint(sys_tags())
        return False

    found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    wheels = [w for w in found if here(w)]
    if len(wheels) < len(found):
        log.line(f"wheels: {len(found) - len(wheels)} in {folder} are for another Python than this "
                 f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor}: left out")
    if not wheels:
        log.line(f"wheels: none to install from {folder} (packages the suite imports must already be installed)")
        return {"installed": False, "folder": str(folder)}
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
               "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, wheels)]
    log.line("$ " + " ".join(command))
    done = checked(command, "installing the wheels")
    if done.returncode != 0:
        raise LFWError(f"installing the wheels of {folder} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return {"installed": True, "folder": str(folder), "site": str(site), "wheels": [w.name for w in wheels]}


def raise_limits() -> dict[str, Any]:
    """Raise the soft limit of open files to the hard one (workers cost the main process several descriptors
    each); returns what the steps may use: /dev/shm, open files (soft before and now, hard), available memory."""
    import psutil

    from lfw.measure.resources import Limits, MiB

    before, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:  # unlimited: the kernel's own ceiling for one process
        with contextlib.suppress(OSError, ValueError):
            hard = int(Path("/proc/sys/fs/nr_open").read_text())
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    shm = Limits.read().machine_info()
    return {"shm_total_mib": shm["shm_total_mib"], "shm_free_mib": shm["shm_free_mib"], "open_files_soft_before":
            before, "open_files_soft": soft, "open_files_hard": hard,
            "mem_available_mib": psutil.virtual_memory().available // MiB}


def environment(env: dict[str, str], log: Log) -> dict[str, Any]:
    """Versions and machine facts as the steps see them (their ``PYTHONPATH``), and ``nvidia-smi``'s."""
    done = checked([sys.executable, "-c", VERSIONS_CODE], "reading the versions", env=env)
    if done.returncode != 0:
        raise LFWError(f"the suite does not import on this machine: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    info: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    smi = shutil.which("nvidia-smi")
    query = checked([smi, f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader"], "nvidia-smi") if smi else None
    info["nvidia_smi"] = "not found" if query is None else query.stdout.strip() or query.stderr.strip()[:200]
    info["executable"] = sys.executable
    log.line("\n".join(f"{key}: {info.get(key)}" for key in SHOWN))
    return info


def pytest_argv(plan: dict[str, Any], args: argparse.Namespace, steps: list[str], json_path: Path,
                junit: Path | None) -> list[str]:
    """One pytest run of ``steps``' cases (the suite collected, every other case deselected by ``-k``): the plan's
    profile and worker counts, saved to ``json_path``."""
    argv = [sys.executable, "-m", "pytest", "benchmarks", "-q", "-p", "no:cacheprovider",
            "-p", "pytest_benchmark.plugin", "--bench-profile", plan["profile"],
            "-k", " or ".join(DEVICE_STEPS[s] for s in steps), "--bench-workers", ",".join(map(str, plan["workers"])),
            f"--benchmark-json={json_path}"]
    options = {"--bench-feed-pipeline": args.pipeline, "--bench-feed-workers": args.feed_workers,
               "--bench-step-ms": args.step_ms}
    argv += [f"{flag}={value}" for flag, value in options.items() if value is not None]
    argv += ["--bench-stand-in"] if args.dry_run else []
    return argv + ([f"--junitxml={junit}", "-o", "junit_duration_report=total"] if junit else [])


def step_times(junit: Path) -> dict[str, float]:
    """Seconds per step from pytest's JUnit report: its test files' cases, set-up and tear-down included (a group's
    rotation runs in its first case)."""
    return {step: round(sum(t for t, _ in cases), 1) for step, cases in junit_cases(junit).items()}


def step_skips(junit: Path) -> dict[str, str]:
    """Each step's first skip message in pytest's JUnit report, for a step none of whose cases ran."""
    return {step: found[0] for step, cases in junit_cases(junit).items() if (found := [w for _, w in cases if w])}


def junit_cases(junit: Path) -> dict[str, list[tuple[float, str]]]:
    """Per step, each of its cases' seconds and skip message (empty when it was not skipped) in the JUnit report."""
    import xml.etree.ElementTree as ET

    step_of = {DEVICE_STEPS[step].strip("()").split()[0]: step for step in GROUPS}  # a case's test: its step
    found: dict[str, list[tuple[float, str]]] = {step: [] for step in GROUPS}
    with contextlib.suppress(OSError, ET.ParseError):
        for case in ET.parse(junit).iter("testcase"):
            if (step := step_of.get(case.get("name", "").partition("[")[0])) is not None:
                skip = case.find("skipped")
                why = (skip.get("message") or "skipped") if skip is not None else ""
                found[step].append((float(case.get("time") or 0.0), why))
    return found


def step_results(run_path: Path, steps: list[str], ran: dict[str, Any], times: dict[str, float],
                 skips: dict[str, str] | None = None) -> dict[str, Any]:
    """Each measuring step's status from the saved run (:class:`lfw.results.Selection`): ``failed`` when a case
    failed, ``incomplete`` when the run was stopped before all its cases ran, ``skipped`` when none ran (why),
    else ``done``; its seconds, where its figures were measured and its cases' headline figures."""
    from lfw.results import load_run
    from lfw.results.limits import machine_line, what_limits

    if not run_path.exists():  # pytest-benchmark saves nothing when every case skipped
        if ran["status"] == "done" and skips and all(s in skips for s in steps):
            return {s: {**ran, "status": "skipped", "reason": skips[s], "elapsed_s": times.get(s, 0.0)} for s in steps}
        return {s: {**ran, "status": "incomplete" if ran["status"] == "incomplete" else "failed",
                    "reason": ran.get("reason", "the run saved nothing")} for s in steps}
    run = load_run(run_path)
    outcomes, not_run = (run.selection.outcomes, run.selection.not_run) if run.selection else ({}, ())
    out = {}
    for step in steps:
        prefix, cases = GROUPS[step] + "/", run.group(GROUPS[step])
        mine = [o for k, o in outcomes.items() if k.startswith(prefix)]
        missing = sum(k.startswith(prefix) for k in not_run)
        failed = [o.reason for o in mine if o.status == "failed"]
        row: dict[str, Any] = {"status": "done", "elapsed_s": times.get(step, 0.0), "exit_code": ran["exit_code"]}
        if failed:
            row.update(status="failed", reason=failed[0])
        elif missing:
            row.update(status="incomplete", reason=f"{missing} of its cases did not run: {ran.get('reason')}")
        elif not cases:
            row.update(status="skipped", reason=next((o.reason for o in mine), "no case selected"))
        places = {c.extra.get("measured_on") for c in cases} - {None}
        row["measured_on"] = STAND_IN if STAND_IN in places else "cuda" if "cuda" in places else "cpu"
        row["cases"] = {c.name: {**{k: c.extra[k] for k in HEADLINE_KEYS if k in c.extra},
                                 "limited_by": what_limits(c).text} for c in cases}
        out[step] = {**row, **paired_to_dataloader(cases, row["cases"])} if step == "peers" else row
    if (cpus := machine_line(run)) is not None:
        out[steps[0]]["cpus"] = cpus  # the machine, once: usable cores, threads per core, capacity measured
    return out


def paired_to_dataloader(cases: list[Any], rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The peers step's DataLoader best (its fastest uint8 reference case) and, in each peer's uint8 case rows, the
    paired ratio of its images/s to it (estimate, low, high; left out where the two are not paired by round)."""
    from lfw.results.peers import DATALOADER, fastest, peer_cases
    from lfw.results.ratios import ratio

    by_peer = peer_cases(cases)
    if DATALOADER not in by_peer:
        return {}
    best = fastest(by_peer.pop(DATALOADER))
    for case in (c for found in by_peer.values() for c in found):
        if (r := ratio(case, best)) is not None:
            rows[case.name]["ratio_to_dataloader_best"] = [round(r.estimate, 3), round(r.low, 3), round(r.high, 3)]
    return {"dataloader_best": best.name}


def headlines(step: dict[str, Any]) -> list[str]:
    """A line per case of a finished step, each figure beside its limit and what limits it (the machine's CPUs
    first, on the first step); the stand-in's say so."""
    mark = f"[{STAND_IN}] " if step.get("measured_on") == STAND_IN else ""
    lines = [f"   CPUs: {step['cpus']}"] if "cpus" in step else []
    for case, f in step.get("cases", {}).items():
        if "h2d_gb_s" in f:
            text = f"{f['h2d_gb_s']:,.1f} GB/s ({f['h2d_share_of_peak']:.0%} of the measured peak)"
        elif "au_measured" in f:
            text = f"AU measured {f['au_measured']:.1%}, simulated {f['au_predicted']:.1%} (ceiling 100%)"
        else:
            limit = (f"{f['own_decoder_share']:.0%} of its own decoder's limit" if "own_decoder_share" in f else
                     f"efficiency {f['efficiency']:.2f}" if "efficiency" in f else "no limit measured")
            text = (f"{f.get('images_per_s', 0):,.0f} img/s, {limit}, {f.get('cpu_ms_per_image', 0):.3f} CPU ms/img; "
                    f"limited by {f.get('limited_by', 'not measured')}")
            if (r := f.get("ratio_to_dataloader_best")) is not None:
                text += f"; {r[0]:.2f} [{r[1]:.2f}, {r[2]:.2f}] of {step['dataloader_best']}'s images/s, paired"
        lines.append(f"   {mark}{case}: {text}")
    return lines


def baseline_target(runner: str, plan: dict[str, Any], work: Path, force: bool) -> Path:
    """Where this runner class's baseline goes: ``benchmarks/baselines/<runner>.json`` (never over one without
    ``--force``), or a scratch folder in a dry run or a probe: their baseline is never one to commit."""
    target = (work / "baselines" if plan["dry_run"] else REPO / "benchmarks" / "baselines") / f"{runner}.json"
    if target.exists() and not force and not plan["dry_run"]:
        raise LFWError(f"{target.relative_to(REPO)} exists; refresh it deliberately with --force "
                       "(make baseline FORCE=1)")
    return target


def whole(run_path: Path, steps: tuple[str, ...] | list[str] = BASELINE_STEPS) -> bool:
    """Whether a saved run can stand as the baseline: it holds every baseline step, not stopped, no case failed."""
    from lfw.results import load_run

    return (set(BASELINE_STEPS) <= set(steps) and run_path.exists()
            and (run := load_run(run_path)).selection is not None and run.incomplete is None)


def step_baseline(plan: dict[str, Any], args: argparse.Namespace, log: Log, env: dict[str, str], run_path: Path,
                  work: Path, budget_s: float, runner: str) -> dict[str, Any]:
    """The measuring run saved as this runner's baseline (else a run of the baseline's cases made here), then a
    second run of the baseline's cases and ``python -m lfw.gate`` of it against the baseline (A/A: exit 0; a dry
    run's is recorded, not judged: two one-round smoke runs)."""
    t0 = time.monotonic()
    if not plan["dry_run"] and not runner.startswith("gpu"):
        return {"status": "skipped", "reason": f"runner class is {runner}, not gpu (no CUDA device, or set LFW_RUNNER)"}
    target = baseline_target(runner, plan, work, args.force)
    row: dict[str, Any] = {"budget_s": round(budget_s, 1), "baseline": str(target), "scratch": plan["dry_run"],
                           "from_run": whole(run_path, plan["steps"])}
    source = run_path if row["from_run"] else work / "baseline-run.json"
    left = lambda: budget_s - (time.monotonic() - t0)  # noqa: E731
    if not row["from_run"]:
        made = log.run("baseline run", pytest_argv(plan, args, list(BASELINE_STEPS), source, None), left(), env)
        if made["status"] != "done" or not whole(source):
            return {**row, **made, "status": "failed" if made["status"] == "failed" else "incomplete",
                    "reason": made.get("reason", "the baseline's run is not whole: nothing saved")}
    write_atomic(target, source.read_bytes(), exclusive=not (args.force or plan["dry_run"]))
    if not plan["dry_run"]:
        shutil.copyfile(target, args.out / target.name)
    gate_run = work / "gate-run.json"
    again = log.run("A/A run", pytest_argv(plan, args, list(BASELINE_STEPS), gate_run, None), left(), env)
    if not gate_run.exists() or again["status"] == "incomplete":
        return {**row, **again, "status": again["status"] if again["status"] == "incomplete" else "failed",
                "reason": again.get("reason", "the A/A run saved nothing"),
                "elapsed_s": round(time.monotonic() - t0, 1)}
    gate = [sys.executable, "-m", "lfw.gate", str(target), str(gate_run), "--summary-md", str(args.out / GATE_MD),
            "--verdict-json", str(work / "verdict.json")]
    code = log.run("A/A gate", gate, left(), env)["exit_code"]
    ok = code == 0 or (code == GATE_REGRESSION and plan["dry_run"])
    verdict = "passed" if code == 0 else "recorded, not judged" if ok else "FAILED"
    row.update(gate_exit=code, aa_passed=code == 0, aa_judged=not plan["dry_run"],
               elapsed_s=round(time.monotonic() - t0, 1), exit_code=code, status="done" if ok else "failed",
               headline=f"A/A gate exit {code} ({verdict})")
    return row if ok else {**row, "reason": f"the A/A gate exited {code}: see {GATE_MD}"}


def next_free(out: Path, stem: str) -> Path:
    """``DIR/<stem>.json``, else ``<stem>-2.json``... beside an earlier command's: a run is never written over."""
    return next(p for n in range(1, 100) if not (p := out / f"{stem}{f'-{n}' if n > 1 else ''}.json").exists())


def step_budget(args: argparse.Namespace, step: str) -> float:
    """A step's budget: ``--step-budget`` where given, else its planned seconds (:data:`STEPS`), at most the cap."""
    return min(args.step_budget or STEPS[step], STEP_LIMIT_S)


def measure(plan: dict[str, Any], args: argparse.Namespace, log: Log, env: dict[str, str], doc: dict[str, Any],
            work: Path, names: list[str], run_path: Path, label: str, allowed: float) -> None:
    """One pytest run of the measuring steps ``names`` within ``allowed`` seconds, saved as ``run_path``; each
    step's row into ``doc`` and the log, ``doc`` saved."""
    budget = {s: step_budget(args, s) for s in names}
    junit = work / f"{run_path.stem}.xml"
    ran = log.run(label, pytest_argv(plan, args, names, run_path, junit), allowed, env) if allowed >= 1 else {
        "status": "incomplete", "exit_code": None, "reason": "not run: the total budget is spent"}
    for name, row in step_results(run_path, names, ran, step_times(junit), step_skips(junit)).items():
        doc["steps"][name] = {**row, "budget_s": budget[name], **({"file": run_path.name} if run_path.exists() else {})}
        why = f" ({row['reason']})" if row.get("reason") else ""
        log.line(f"== {name}: {row['status']}{why} in {row.get('elapsed_s', 0):.1f} s of {budget[name]:.0f} s")
        for line in headlines(row) if row["status"] == "done" else []:
            log.line(line)
    write_atomic(args.out / CAMPAIGN_JSON, json.dumps(doc, indent=2, default=str) + "\n")


def run_steps(plan: dict[str, Any], args: argparse.Namespace, log: Log, env: dict[str, str], doc: dict[str, Any],
              work: Path, deadline: float) -> None:
    """The measuring steps as one pytest run within the sum of their budgets, then the baseline, then the peers in
    a run of their own within what is left (at most their budget); ``doc`` saved after each run."""
    steps = plan["steps"]
    measuring = [s for s in steps if s != "baseline" and s not in AFTER_BASELINE]
    budget = {s: step_budget(args, s) for s in steps}
    doc["steps"].update({name: {"status": "interrupted", "reason": "the campaign was stopped"} for name in steps})
    run_path = next_free(args.out, "device")  # the measuring run, which the baseline step reuses when it is whole
    if measuring:
        allowed = min(sum(budget[s] for s in measuring), deadline - time.monotonic())
        measure(plan, args, log, env, doc, work, measuring, run_path, "measuring run", allowed)
    if "baseline" in steps:
        left = min(budget["baseline"], deadline - time.monotonic())
        runner = doc.get("environment", {}).get("runner_class", "?")
        row = step_baseline(plan, args, log, env, run_path, work, left, runner) if left >= 1 else {
            "status": "incomplete", "reason": "not run: the total budget is spent"}
        doc["steps"]["baseline"] = row
        log.line(f"== baseline: {row['status']} ({row.get('reason') or row.get('headline')}) in "
                 f"{row.get('elapsed_s', 0):.1f} s of {budget['baseline']:.0f} s")
    if after := [s for s in steps if s in AFTER_BASELINE]:
        allowed = min(sum(budget[s] for s in after), deadline - time.monotonic())
        measure(plan, args, log, env, doc, work, after, next_free(args.out, "peers"), "peers run", allowed)


@cli_entry
def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    args = build_parser().parse_args(argv)
    plan = plan_of(args)
    deadline = started + plan["total_budget_s"]
    args.out.mkdir(parents=True, exist_ok=True)
    check_out(args.out)
    doc = load_campaign(args.out / CAMPAIGN_JSON)
    doc["limits"] = raise_limits()
    log = Log(args.out)
    with sigterm_as_interrupt(), tempfile.TemporaryDirectory(prefix="lfw-campaign-") as tmp:
        work, site = Path(tmp), args.site or Path(tmp) / "site"
        log.line("limits: " + ", ".join(f"{k} {v}" for k, v in doc["limits"].items()))
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        env.setdefault("LFW_CACHE", str(REPO / ".cache" / "lfw-bench"))
        doc["wheels"] = install_wheels(args.wheels, site, log)
        paths = (str(site) if doc["wheels"]["installed"] else "", str(REPO), env.get("PYTHONPATH", ""))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        doc["environment"], doc["run"] = environment(env, log), plan
        if "baseline" in plan["steps"]:  # an existing baseline is bad input: said before anything is measured
            baseline_target(doc["environment"].get("runner_class", "?"), plan, work, args.force)
        if plan["mode"] == "probe" and not doc["environment"].get("cuda"):
            for name in plan["steps"]:
                doc["steps"][name] = {"status": "failed", "reason": "the probe needs a CUDA device: none here"}
            write_atomic(args.out / CAMPAIGN_JSON, json.dumps(doc, indent=2, default=str) + "\n")
            log.line("probe: no CUDA device (torch.cuda.is_available() is False): every step failed")
            return EXIT_FAILED
        tree = next(n for n, p in PROFILES.items() if p.synthetic_images == PROFILES[plan["profile"]].synthetic_images)
        data = log.run("data", [sys.executable, "-m", "lfw.data.cache", "--profile", tree],
                       min(DATA_BUDGET_S, max(1.0, deadline - time.monotonic())), env)
        if data["status"] != "done":
            raise LFWError(f"the synthetic LFW tree could not be made: {data.get('reason')}")
        try:
            run_steps(plan, args, log, env, doc, work, deadline)
        finally:
            write_atomic(args.out / CAMPAIGN_JSON, json.dumps(doc, indent=2, default=str) + "\n")
    statuses = [doc["steps"][n]["status"] for n in plan["steps"]]
    if plan["mode"] == "probe":  # a GPU path the probe could not take is its finding
        statuses = ["failed" if s == "skipped" else s for s in statuses]
    log.line(f"{plan['mode']}: " + ", ".join(f"{n} {s}" for n, s in zip(plan["steps"], statuses, strict=True))
             + f"; {time.monotonic() - started:.0f} s of {plan['total_budget_s']:g}")
    check_out(args.out)
    return EXIT_FAILED if "failed" in statuses else EXIT_INCOMPLETE if "incomplete" in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
