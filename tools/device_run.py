"""The device campaign's machinery: the output folder and its log, the wheel install, the versions and the
machine's limits, and running a step under a time budget (:func:`run_child`).

A step that outruns its budget gets SIGTERM (it stops what it runs, a pytest run saving its partial run marked
incomplete, and writes the figures it has), then SIGKILL for whatever is left of its process tree after
:data:`GRACE_S`; it is marked ``incomplete``, its figures kept. Ctrl-C (or SIGTERM to the campaign) stops the
running step the same way before the campaign ends. Steps stay in the campaign's process group: a command cut
from outside takes them with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import psutil
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from lfw.errors import LFWError
from lfw.measure.resources import Limits, MiB
from tools.device_context import BASELINE_PATTERN, CAMPAIGN_JSON, CAMPAIGN_LOG, MAX_OUT_FILES, OUT_FILES, write_json

GRACE_S = 20.0
CHECK_TIMEOUT_S = 120.0  # the wheels' install, the versions, nvidia-smi: a hang there is an error, not a wait
VERSION = 1


class Log:
    """``campaign.log`` in the output folder: every line printed, by the campaign and its steps, also on stdout."""

    def __init__(self, out: Path) -> None:
        self.path = out / CAMPAIGN_LOG
        self._file: IO[bytes] | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Log:
        self._file = open(self.path, "ab")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._file is not None:
            self._file.close()

    def write(self, data: bytes) -> None:
        with self._lock:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            if self._file is not None:
                self._file.write(data)
                self._file.flush()

    def line(self, text: str) -> None:
        self.write((text + "\n").encode())


def check_out(out: Path) -> None:
    """Refuse an output folder holding anything the campaign does not write, or more than 8 files: a device
    command brings back 8 files at most, no deeper than its own names. A ``.<name>.*.partial`` file, what a write
    cut by a stopped step leaves (:func:`lfw.cli.saving.write_atomic`), never holds a whole file: it is removed."""
    for partial in out.glob(".*.partial"):
        partial.unlink(missing_ok=True)
    entries = sorted(out.iterdir())
    foreign = [e.name for e in entries if e.is_dir() or not (e.name in OUT_FILES or e.match(BASELINE_PATTERN))]
    if foreign:
        raise LFWError(f"{out} holds {', '.join(foreign)}, which the campaign does not write; give it an empty folder")
    if len(entries) > MAX_OUT_FILES:
        raise LFWError(f"{out} holds {len(entries)} files; a device command brings back {MAX_OUT_FILES} at most")


def load_campaign(path: Path) -> dict[str, Any]:
    """An earlier ``campaign.json`` of this folder (steps run one command at a time add up), else a new one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": VERSION, "steps": {}}
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise LFWError(f"{path} is not a campaign file of version {VERSION}; give another --out")
    return doc


def save_campaign(out: Path, doc: Mapping[str, Any]) -> None:
    tmp = out / (CAMPAIGN_JSON + ".tmp")
    write_json(tmp, doc)
    os.replace(tmp, out / CAMPAIGN_JSON)


def checked(command: list[str], what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end within :data:`CHECK_TIMEOUT_S`, its output captured; a hang is a one-line error."""
    try:
        return subprocess.run(command, capture_output=True, text=True, check=False, env=env,
                              timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise LFWError(f"{what} took more than {CHECK_TIMEOUT_S:g} s: {' '.join(command[:4])} ...") from None


def wheel_command(wheels: list[Path], site: Path, python: str = sys.executable) -> list[str]:
    """The offline install of ``wheels`` into ``site``: no index, no dependencies (the preinstalled torch stays)."""
    return [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
            "--upgrade", "--target", str(site), *map(str, wheels)]


def installable_here(wheel: Path) -> bool:
    """Whether one of ``wheel``'s tags is one this Python accepts (``packaging.tags.sys_tags``)."""
    try:
        _, _, _, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename:
        return False
    return not tags.isdisjoint(sys_tags())


def install_wheels(folder: Path, site: Path, log: Log) -> dict[str, Any]:
    """Install every wheel of ``folder`` that this Python can use into ``site`` (:func:`wheel_command`); wheels
    made for another Python (``.whl/`` holds CPython 3.12 ones for the GPU machine) are named and left out. What
    was done, for the record."""
    found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    wheels = [w for w in found if installable_here(w)]
    if len(wheels) < len(found):
        log.line(f"wheels: {len(found) - len(wheels)} in {folder} are for another Python than this "
                 f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor}: left out")
    if not wheels:
        log.line(f"wheels: none to install from {folder} (packages the suite imports must already be installed)")
        return {"installed": False, "folder": str(folder)}
    command = wheel_command(wheels, site)
    log.line("$ " + " ".join(command))
    done = checked(command, "installing the wheels")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise LFWError(f"installing the wheels of {folder} failed: {last}")
    return {"installed": True, "folder": str(folder), "site": str(site), "wheels": [w.name for w in wheels]}


def raise_open_files_limit() -> tuple[int, int]:
    """Raise this process's soft limit of open files to its hard limit (its children inherit it): DataLoader
    workers cost the main process several descriptors each, and a soft 1,024 fails high worker counts. Returns
    (soft before, soft now)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:  # unlimited: the kernel's own ceiling for one process
        with contextlib.suppress(OSError, ValueError):
            hard = int(Path("/proc/sys/fs/nr_open").read_text())
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def machine_limits(soft_before: int) -> dict[str, Any]:
    """What the steps may use, as they start: ``/dev/shm`` (size and free), ``ulimit -n`` (soft before it was
    raised, soft now, hard) and MemAvailable, in MiB."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    shm = Limits.read()
    return {"shm_total_mib": None if shm.shm_total is None else shm.shm_total // MiB,
            "shm_free_mib": None if shm.shm_free is None else shm.shm_free // MiB,
            "open_files_soft_before": soft_before, "open_files_soft": soft, "open_files_hard": hard,
            "mem_available_mib": psutil.virtual_memory().available // MiB}


NVIDIA_SMI_QUERY = "name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current"
VERSIONS_CODE = """import json, torch, torchvision
from lfw.measure.machine import machine_info, package_version
info = machine_info()
info["torch_cuda_build"] = torch.version.cuda
info["cudnn"] = torch.backends.cudnn.version() if torch.cuda.is_available() else None
for name in ("pytest", "pytest-benchmark", "psutil", "scipy", "matplotlib", "memory-profiler", "torchdata", "ruptures"):
    info[name] = package_version(name)
print(json.dumps(info, default=str))"""


def environment(env: Mapping[str, str], log: Log) -> dict[str, Any]:
    """Versions and machine facts as the steps will see them (their ``PYTHONPATH``), and ``nvidia-smi``'s."""
    done = checked([sys.executable, "-c", VERSIONS_CODE], "reading the versions", env=dict(env))
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise LFWError(f"the suite does not import on this machine: {last}")
    info: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    info["executable"], info["platform"] = sys.executable, platform.platform()
    smi = shutil.which("nvidia-smi")
    if smi:
        q = checked([smi, f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader"], "nvidia-smi")
        info["nvidia_smi"] = q.stdout.strip() if q.returncode == 0 else f"failed: {q.stderr.strip()[:200]}"
    else:
        info["nvidia_smi"] = "not found"
    for key in ("python", "torch", "torchvision", "numpy", "pytest", "pytest-benchmark", "torch_cuda_build",
                "cuda_device", "cuda_driver", "nvidia_smi", "cpu_model", "usable_cores", "total_memory_gib",
                "runner_class"):
        log.line(f"{key}: {info.get(key)}")
    return info


def _pump(stream: IO[bytes], log: Log, tail: list[bytes]) -> None:
    for chunk in iter(lambda: stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096), b""):
        log.write(chunk)
        tail[:] = (tail + chunk.splitlines())[-20:]


def _tree(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The step's process and every process below it, as they are now."""
    try:
        leader = psutil.Process(proc.pid)
        return [leader, *leader.children(recursive=True)]
    except psutil.Error:
        return []


def _stop_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the step's own process (it stops what it runs and keeps its figures); after :data:`GRACE_S`,
    SIGKILL to whatever is left of it and of every process seen below it, before or after the SIGTERM."""
    seen = _tree(proc)
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GRACE_S)
    for process in {p.pid: p for p in [*seen, *_tree(proc)]}.values():
        with contextlib.suppress(psutil.Error):
            process.kill()  # psutil checks the pid still names the process it saw
    proc.wait()
    psutil.wait_procs(seen, timeout=5)


def run_child(argv: list[str], budget_s: float, env: Mapping[str, str], log: Log, name: str,
              fragment: Path | None = None) -> dict[str, Any]:
    """Run ``argv`` for at most ``budget_s``, its output into ``log``.

    The child stays in the campaign's process group and session, so whatever stops the command (Ctrl-C, a device
    command cut at its limit) stops the step with it; past its budget the campaign stops it itself
    (:func:`_stop_tree`). Returns the step's record: ``status`` (``done``/``skipped``/``failed``/``incomplete``
    from its ``fragment`` when it wrote one, ``done`` for a plain command that exited 0, ``failed`` otherwise,
    ``incomplete`` when stopped at its budget, with the figures its fragment has), ``reason``, ``exit_code``,
    ``elapsed_s``, ``budget_s`` and its ``summary``.
    """
    log.line(f"== {name}: budget {budget_s:.0f} s")
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(env))
    assert proc.stdout is not None
    tail: list[bytes] = []
    pump = threading.Thread(target=_pump, args=(proc.stdout, log, tail), daemon=True)
    pump.start()
    timed_out = False
    try:
        proc.wait(timeout=budget_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop_tree(proc)
    except BaseException:  # Ctrl-C, SIGTERM: stop the step and everything it started, then go
        _stop_tree(proc)
        raise
    pump.join(timeout=5)
    proc.stdout.close()
    record: dict[str, Any] = {"exit_code": proc.returncode, "elapsed_s": round(time.monotonic() - t0, 1),
                              "budget_s": round(budget_s, 1)}
    written = json.loads(fragment.read_text(encoding="utf-8")) if fragment is not None and fragment.exists() else {}
    if timed_out:
        return {**written, "status": "incomplete", "reason": f"stopped at its budget of {budget_s:.0f} s", **record}
    if written:
        return {**written, **record}
    if proc.returncode == 0:
        return {"status": "done", **record}
    last = tail[-1].decode(errors="replace").strip() if tail else "no output"
    return {"status": "failed", "reason": f"exit {proc.returncode}: {last[:300]}", **record}
