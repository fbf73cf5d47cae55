"""The resource budget: what a loader holds (/dev/shm, open files, memory) against what the machine has, the one
line a case that does not fit is left out with, and a rotation whose other cases go on without it."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from lfw.data.dataset import LFWDataset
from lfw.measure import LoaderConfig
from lfw.measure.machine import nvidia_driver
from lfw.measure.resources import (
    Limits,
    MiB,
    Need,
    cgroup_memory,
    loader_need,
    open_fds,
    shortfall,
)
from lfw.pipelines.slots import SlotBatches
from lfw.suite import matrix
from lfw.suite.profiles import PROFILES
from lfw.suite.runner import Datasets, GroupRunner

ROOT = Path(__file__).resolve().parents[1]
FLOAT_ITEM = 3 * 250 * 250 * 4  # a float32 LFW image (its label is a Python int: no tensor bytes)
UINT8_ITEM = 3 * 250 * 250


def limits(shm_mib: float | None = 64, *, open_files: int = 1024, memory_mib: float | None = None) -> Limits:
    shm = None if shm_mib is None else int(shm_mib * MiB)
    memory = None if memory_mib is None else int(memory_mib * MiB)
    return Limits(shm, shm, open_files, memory, memory, 2)


def test_batches_in_flight_follow_workers_and_prefetch(tiny_tree: Path) -> None:
    none, uint8 = LFWDataset(tiny_tree, transform="none"), LFWDataset(tiny_tree, transform="uint8")
    two = loader_need(LoaderConfig(batch_size=8, num_workers=2).build(none))
    assert (two.in_flight, two.batch_bytes, two.shm_in_flight) == (5, 8 * FLOAT_ITEM, 5 * 8 * FLOAT_ITEM)
    deep = loader_need(LoaderConfig(batch_size=8, num_workers=2, prefetch_factor=8).build(uint8))
    assert (deep.in_flight, deep.shm_in_flight) == (17, 17 * 8 * UINT8_ITEM)
    alone = loader_need(LoaderConfig(batch_size=8, num_workers=0).build(none))
    assert alone.shm == 0 and alone.fds < two.fds  # the main process loads alone: no batch crosses /dev/shm
    assert "float32 3 x 250 x 250" in two.what


def test_slot_batches_hold_a_ring_per_worker_and_send_slot_numbers(tiny_tree: Path) -> None:
    slots = SlotBatches(tiny_tree, "pil", batch_size=8, ring=4)
    need = loader_need(LoaderConfig(batch_size=8, num_workers=2).build(slots))
    assert need.shm_in_flight == 0 and need.shm_held == 2 * slots.ring_bytes
    assert slots.ring_bytes == 4 * 8 * (250 * 250 * 3 + 8)


def test_the_shortfall_names_the_need_the_limit_and_a_way_out() -> None:
    need = Need(shm_in_flight=240 * MiB, shm_held=0, memory=0, fds=10, in_flight=5, batch_bytes=48 * MiB,
                workers=2, what="5 batches of 64 x float32 3 x 250 x 250")
    line = shortfall(need, limits(64)) or ""
    assert line.startswith("needs ~240 MiB of /dev/shm for 5 batches of 64 x float32") and "64 MiB free" in line
    assert "--shm-size" in line and "uint8" in line and "\n" not in line
    assert shortfall(need, limits(1024)) is None
    assert shortfall(need, limits(None)) is None  # no /dev/shm to read: nothing to say
    fds = shortfall(Need(0, 0, 0, 300, 5, 1, 4, "x"), limits(1024, open_files=256)) or ""
    assert "needs ~300 open files" in fds and "ulimit -n is 256" in fds
    memory = shortfall(Need(0, 0, 900 * MiB, 10, 5, 1, 4, "x"), limits(1024, memory_mib=512)) or ""
    assert "needs ~900 MiB of memory" in memory and "cgroup" in memory


def test_what_other_loaders_hold_counts_and_running_alone_is_offered() -> None:
    ring = Need(0, 40 * MiB, 0, 10, 1, 1, 2, "2 worker rings")
    assert shortfall(ring, limits(64)) is None
    line = shortfall(ring, limits(64), held_beside=0, in_flight_beside=30 * MiB, alone="-k slots") or ""
    assert "beside ~30 MiB its group's other cases use" in line and "run it alone (-k slots)" in line


def test_limits_read_a_shm_folder_and_a_cgroup(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text("536870912\n")
    (tmp_path / "memory.current").write_text("134217728\n")
    assert cgroup_memory(tmp_path) == (512 * MiB, 128 * MiB)
    (tmp_path / "memory.max").write_text("max\n")
    assert cgroup_memory(tmp_path) == (None, 128 * MiB)
    assert cgroup_memory(tmp_path / "absent") == (None, None)
    read = Limits.read(shm=tmp_path, cgroup=tmp_path / "absent")
    assert read.shm_free is not None and read.shm_total is not None and read.open_files > 0 and read.cores >= 1
    assert Limits.read(shm=tmp_path / "absent").shm_free is None
    info = limits(64).machine_info()
    assert info["shm_total_mib"] == 64 and info["open_files_limit"] == 1024


def test_limits_read_ulimit_n() -> None:
    code = "from lfw.measure.resources import Limits; print(Limits.read().open_files)"
    soft = 200

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         preexec_fn=lower, check=True)
    assert int(out.stdout.strip()) == soft


class Blocks(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 512

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(3, 32, 32, dtype=torch.uint8)


@pytest.mark.parametrize("workers", [1, 4])
def test_the_descriptor_model_covers_a_real_loader(workers: int) -> None:
    """The main process's descriptors at the peak of a pass stay within the need the budget states."""
    loader = DataLoader(Blocks(), batch_size=16, num_workers=workers)
    need = loader_need(loader)
    peak = 0
    for _ in loader:
        peak = max(peak, open_fds())
    assert peak <= need.fds


def test_a_group_leaves_out_what_does_not_fit_and_measures_the_rest(tiny_tree: Path) -> None:
    """At 40 MiB of /dev/shm: float batches with 2 workers (~229 MiB) are left out with their line; workers0 and
    one worker's uint8 batches (~34 MiB) run."""
    group = matrix.GROUPS["workers-transform"]
    cases = [group.case("workers0-none"), group.case("workers2-none"), group.case("workers1-uint8")]
    runner = GroupRunner(PROFILES["smoke"], Datasets(tiny_tree), limits=limits(40))
    rotation = runner.run(group, cases, timed=False)
    assert set(rotation.left_out) == {"workers2-none"}
    assert "of /dev/shm" in rotation.left_out["workers2-none"] and "40 MiB free" in rotation.left_out["workers2-none"]
    assert "workers2-none" not in rotation.measured
    assert rotation.measured["workers0-none"].results and rotation.measured["workers1-uint8"].results


@pytest.mark.slow
def test_make_test_runs_green_in_a_small_dev_shm(tmp_path: Path) -> None:
    """The benchmarks' smoke run with /dev/shm mounted at 16 MiB (root's own mount namespace): nothing fails,
    and what cannot fit is left out saying what it needs."""
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs root and unshare -m to mount a small /dev/shm (make test-small-shm does it as root)")
    script = textwrap.dedent(f"""\
        mount -t tmpfs -o size=16m tmpfs /dev/shm || exit 97
        exec {sys.executable} -m pytest benchmarks -p no:cacheprovider -q --benchmark-disable \\
          --bench-profile smoke -k "workers_transform or prefetch" -rs
        """)
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode == 97:
        pytest.skip("could not mount a tmpfs on /dev/shm here")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "failed" not in proc.stdout.splitlines()[-1]
    assert "of /dev/shm for" in proc.stdout and "16 MiB free" in proc.stdout


@pytest.mark.slow
@pytest.mark.needs_shm(512)  # else four workers' float batches are left out for /dev/shm first
def test_a_low_ulimit_n_leaves_out_the_cases_that_would_run_out_of_descriptors() -> None:
    """``ulimit -n 60``: four workers would need more descriptors and are left out in one line; nothing fails."""
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (60, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    proc = subprocess.run([sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", "-q", "-rs",
                           "--benchmark-disable", "--bench-profile", "smoke", "-k", "workers_transform and none"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, preexec_fn=lower,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "open files (4 workers" in proc.stdout and "ulimit -n is 60" in proc.stdout
    assert " failed" not in proc.stdout.splitlines()[-1]


@pytest.mark.parametrize(("line", "driver"), [
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)\n",
     "580.159.04"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n", "535.104.05"),
    ("GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n", None),
])
def test_the_nvidia_driver_comes_from_the_kernel_modules_line(line: str, driver: str | None) -> None:
    """On the H200 machine torch 2.11 had no ``cuda.driver_version``: every run saved ``cuda_driver: None``."""
    assert nvidia_driver(line) == driver
