"""The device campaign's shared vocabulary: its steps, their budgets, the files it may write, and what a step is given.

A step runs in a process of its own (``python3 -m tools.device_steps NAME``) so that the campaign can stop it,
workers and all, when it outruns its budget. It writes one fragment (JSON) that the campaign merges into
``campaign.json``; the files it writes into the output folder are named in :data:`OUT_FILES`, and the campaign
refuses anything else there: a device command brings back 8 files at most.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lfw.errors import LFWError
from lfw.suite.profiles import PROFILES, Profile


@dataclass(frozen=True)
class StepSpec:
    """One step: its name, whether it needs a CUDA device (``gpu``: skipped without one, outside a dry run) or has
    a GPU part beside its CPU ones (``gpu_part``), its time budget and what it measures."""

    name: str
    gpu: bool
    budget_s: float
    what: str
    gpu_part: bool = False

    @property
    def uses_gpu(self) -> bool:
        """Whether some of the step's code runs on the GPU (what the probe must pass through)."""
        return self.gpu or self.gpu_part


# In the order they run: what only a GPU can measure first, the CPU curves last, so that a command cut short loses
# those. The budgets, the wheels, the versions and the data fit TOTAL_BUDGET_S (one device command is cut at 10
# minutes: 9 leave room for the machine's start and the transfer back); no step is given more than what is left.
# Each budget is what the step took on the first GPU machine (docs/runs/device-main.txt: an H200 with 16 Xeon
# cores, the full profile) with room to spare; the baseline step reuses the pin step's run, so it runs one pytest.
STEPS = (
    StepSpec("pin", True, 80, "pin_memory off/on with the host-to-device copy in the timed pass"),
    StepSpec("bandwidth", True, 20, "host-to-device GB/s, pinned vs pageable, batch-sized and 256 MiB buffers"),
    StepSpec("feed", True, 30, "a GPU step fed by a decode pipeline: measured vs simulated utilization"),
    StepSpec("baseline", True, 80, "the pin step's run saved as the gpu baseline, then an A/A gate"),
    StepSpec("decode", False, 120, "CPU decode pipelines by worker count beside GPU decode_jpeg", gpu_part=True),
    StepSpec("workers", False, 180, "the workers curve of the quick presets, its knee, what saturates"),
)
STEP_NAMES = tuple(s.name for s in STEPS)
STEP_LIMIT_S = 540.0
TOTAL_BUDGET_S = 540.0  # the whole command: wheels, versions, data and every step
PROBE_BUDGET_S = 120.0  # the probe command: a tiny pass of every GPU path on the smoke tree
DATA_BUDGET_S = 90.0  # making the synthetic tree (seconds on 8 processes), within the total
DEFAULT_WORKERS = (0, 2, 8, 16)
DRY_RUN_WORKERS = (0, 2)
MAX_OUT_FILES = 8
STAND_IN = "cpu stand-in"  # what a GPU path measured on the CPU in a dry run: never a GPU figure
# What may be written into the output folder, by role; the baseline file is named by the runner class.
CAMPAIGN_JSON, CAMPAIGN_LOG, PIN_RUN, WORKERS_RUN, GATE_MD = (
    "campaign.json", "campaign.log", "pin-memory.json", "workers.json", "gate.md")
OUT_FILES = (CAMPAIGN_JSON, CAMPAIGN_LOG, PIN_RUN, WORKERS_RUN, GATE_MD)
BASELINE_PATTERN = "gpu*.json"  # benchmarks/baselines/<runner class>.json, copied back


def step_spec(name: str) -> StepSpec:
    for spec in STEPS:
        if spec.name == name:
            return spec
    raise LFWError(f"unknown step {name!r}; choose from: {', '.join(STEP_NAMES)}")


def parse_workers(text: str) -> tuple[int, ...]:
    """``0,1,2,4`` -> (0, 1, 2, 4): whole numbers, 0 or more, no repeats, at least one."""
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise LFWError(f"--workers must be whole numbers separated by commas (e.g. 0,1,2,4), got {text!r}") from None
    if not counts or min(counts) < 0 or len(set(counts)) != len(counts):
        raise LFWError(f"--workers needs distinct counts of 0 or more, got {text!r}")
    return tuple(sorted(counts))


class Skip(Exception):  # a step that does not run here, not an error
    """Raised by a step that cannot run on this machine; its message is the one-line reason."""


class Stopped(BaseException):
    """Raised in a step's process when the campaign stops it (SIGTERM at its budget): not an ``Exception``, so
    that no measurement's own error handling swallows it; the step keeps the figures it has and ends incomplete."""


@dataclass
class Context:
    """What a step is given: where to write, how much data and which worker counts, and its options.

    ``work`` is a private folder outside ``out`` for anything that must not come back (temporary runs).
    ``device`` is where the step's GPU paths run: ``cuda``, ``cpu`` in a dry run without a GPU (a
    :data:`STAND_IN`, its figures marked so), or None where they cannot run (no GPU, not a dry run).
    ``summary`` collects the step's figures as they are measured, so a step that fails or is stopped part-way
    keeps those it has; ``facts["exit_code"]`` is the step's own verdict.
    """

    step: str
    out: Path
    work: Path
    profile: Profile
    workers: tuple[int, ...]
    cores: int
    dry_run: bool = False
    pipeline: str = "decoder=simplejpeg,batching=slots"
    feed_workers: int | None = None
    step_ms: float = 20.0
    force: bool = False
    device: str | None = "cuda"
    facts: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    stopped: bool = False

    @property
    def stand_in(self) -> bool:
        """Whether the GPU paths run on the CPU (a dry run without a GPU)."""
        return self.device == "cpu"

    def gpu_device(self) -> str:
        """Where the GPU paths run; raises :class:`Skip` where they cannot."""
        if self.device is None:
            raise Skip("no CUDA device")
        return self.device

    def check_stopped(self) -> None:
        """Raise :class:`Stopped` once the step was asked to stop (its figures so far are in ``summary``)."""
        if self.stopped:
            raise Stopped()

    @property
    def rounds(self) -> int:
        """Interleaved rounds of the steps' own rotations: 1 in a dry run, else 3 (the decoders group's)."""
        return 1 if self.dry_run else 3

    def root(self) -> Path:
        """The synthetic LFW tree of the profile (made in ``$LFW_CACHE`` on first use), or ``$LFW_ROOT``."""
        from lfw.data.root import resolve_root

        return resolve_root(synthetic_images=self.profile.synthetic_images).path


def profile_named(name: str) -> Profile:
    if name not in PROFILES:
        raise LFWError(f"unknown profile {name!r}; choose from: {', '.join(sorted(PROFILES))}")
    return PROFILES[name]


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
