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
    """One step: its name, whether it needs a CUDA device, its time budget and what it measures."""

    name: str
    gpu: bool
    budget_s: float
    what: str


# In the order they run. Budgets add up to TOTAL_BUDGET_S; none exceeds STEP_LIMIT_S (a device command is cut at 10
# minutes; 9 leave room for start-up and the transfer back).
STEPS = (
    StepSpec("pin", True, 180, "pin_memory off/on with the host-to-device copy in the timed pass"),
    StepSpec("bandwidth", True, 60, "host-to-device GB/s, pinned vs pageable, batch-sized and 256 MiB buffers"),
    StepSpec("decode", False, 300, "CPU decode pipelines by worker count beside GPU decode_jpeg"),
    StepSpec("workers", False, 420, "the workers curve of the quick presets, its knee, what saturates"),
    StepSpec("feed", True, 180, "a GPU step fed by a decode pipeline: measured vs simulated utilization"),
    StepSpec("baseline", True, 360, "the full profile's GPU cases saved as a baseline, then an A/A gate"),
)
STEP_NAMES = tuple(s.name for s in STEPS)
STEP_LIMIT_S = 540.0
TOTAL_BUDGET_S = 1500.0
DEFAULT_WORKERS = (0, 1, 2, 4, 8, 12, 16)
DRY_RUN_WORKERS = (0, 1, 2)
MAX_OUT_FILES = 8
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


@dataclass
class Context:
    """What a step is given: where to write, how much data and which worker counts, and its options.

    ``work`` is a private folder outside ``out`` for anything that must not come back (temporary runs).
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
    facts: dict[str, Any] = field(default_factory=dict)

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
