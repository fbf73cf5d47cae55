"""Distributed loading: coverage and reshuffling, a rank's measurement, and torchrun end to end (2 ranks, CPU).

The end-to-end tests start PyTorch's own launcher on the tiny tree: a 2-rank run that reports and writes its JSON,
and a run one of whose ranks is killed, which must end non-zero, name that rank's SIGKILL and leave no process
behind.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch.distributed as dist

from lfw.data.dataset import LFWDataset
from lfw.distributed.__main__ import main
from lfw.distributed.gathered import epoch_coverage, same_order_every_epoch
from lfw.distributed.rank import measure_rank
from lfw.measure import LoaderConfig
from lfw.results import load_run

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m",
            "lfw.distributed"]


def test_coverage_counts_missing_images_and_padding() -> None:
    assert epoch_coverage([[0, 2, 4], [1, 3, 0]], 5).ok  # 5 images in 2 shards of 3: one padding repeat
    gap = epoch_coverage([[0, 1], [1, 3]], 4)
    assert not gap.ok and gap.missing == 1 and gap.duplicates == 1 and gap.expected_duplicates == 0
    assert "coverage FAILED: 1 images never loaded" in gap.text()
    assert same_order_every_epoch([[3, 1, 2], [3, 1, 2]]) and not same_order_every_epoch([[3, 1, 2], [1, 2, 3]])
    assert not same_order_every_epoch([[1, 2]])


@pytest.fixture
def single_rank_group(tmp_path: Path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("set_epoch", [True, False])
def test_a_rank_measures_its_epochs_and_the_order_it_visited(tiny_tree: Path, single_rank_group: None,
                                                             set_epoch: bool) -> None:
    dataset = LFWDataset(tiny_tree, transform="uint8")
    measured = measure_rank(dataset, LoaderConfig(batch_size=8), 2, rank=0, world_size=1, set_epoch=set_epoch)
    summary = measured.summary()
    assert summary["images"] == [40, 40] and all(w > 0 for w in summary["wall_s"])
    assert all(0 <= c <= w for c, w in zip(summary["collective_s"], summary["wall_s"], strict=True))
    assert same_order_every_epoch(measured.orders) is not set_epoch


def test_not_under_torchrun_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: not started by torchrun") and "--nproc-per-node=2" in err and err.count("\n") == 1


@pytest.mark.needs_shm(64)
def test_two_ranks_report_per_rank_figures_straggler_and_coverage(tiny_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = subprocess.run([*TORCHRUN, "--path", str(tiny_tree), "--batch-size", "8", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)  # a hang guard only
    assert proc.returncode == 0, rank_errors(proc.stderr)
    assert "straggler ratio" in proc.stdout and "coverage ok" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line[:1].isdigit()]
    assert [row.split()[0] for row in rows] == ["0", "1"]
    run = load_run(out)
    assert sorted(c.short_name for c in run.cases) == ["distributed[rank0-of-2]", "distributed[rank1-of-2]",
                                                       "distributed[total-of-2]"]
    assert all(c.value("coverage_ok") for c in run.cases)


RANK_STARTED = re.compile(r"rank (\d+) of \d+: pid (\d+)")


def rank_errors(said: str) -> str:
    """What a failed torchrun run said that names the cause: each rank's own ``error:`` line (the suite's one-line
    errors, ``rank N: ...``), the exceptions its workers printed, and torchrun's per-rank exit codes."""
    keep = [line for line in said.splitlines()
            if "error:" in line or re.search(r"^\w*(Error|Exception): ", line.strip()) or "exitcode" in line]
    return "\n".join(dict.fromkeys(keep)) or said[-2000:]


def start_two_ranks(command: list[str], tmp: Path) -> tuple[subprocess.Popen[str], int | None, str]:
    """Start torchrun and read its stderr until rank 1 says its pid; (process, pid or None, what it said).

    ``TMPDIR`` is ``tmp``: the killed rank cannot remove its private temporary folder, so it stays in the test's.
    """
    tmp.mkdir(exist_ok=True)
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.stderr is not None
    deadline, seen = time.monotonic() + 90, []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:  # torchrun ended before rank 1 said where it runs
            break
        seen.append(line)
        started = {int(r): int(pid) for r, pid in RANK_STARTED.findall(line)}
        if 1 in started:
            return proc, started[1], "".join(seen)
    return proc, None, "".join(seen)


def read_for(proc: subprocess.Popen[str], seconds: float) -> str:
    """What is left on ``proc``'s stderr, read until end of file or ``seconds``: a process it started that
    outlived it would hold the pipe open (the leftover check below names it), so never read to the end blindly."""
    assert proc.stderr is not None
    out, deadline = [], time.monotonic() + seconds
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0 and sel.select(left):
            line = proc.stderr.readline()
            if not line:
                break
            out.append(line)
    return "".join(out)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary folder shallow enough for the ranks' worker sockets (pytest's ``tmp_path`` is ~65 characters
    deep); removed afterwards with whatever the killed rank left in it."""
    folder = Path(tempfile.mkdtemp(prefix="lfw-rank-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_killed_rank_fails_the_run_and_leaves_nothing(tiny_tree: Path, short_tmp: Path) -> None:
    out = short_tmp / "killed.json"
    command = [*TORCHRUN, "--path", str(tiny_tree), "--batch-size", "4", "--epochs", "200", "--timeout", "20",
               "--out", str(out)]
    proc, victim, said = start_two_ranks(command, short_tmp / "tmp")
    try:
        assert victim is not None, f"rank 1 never started; the ranks said:\n{rank_errors(said)}"
        time.sleep(1.0)  # into its epochs
        os.kill(victim, signal.SIGKILL)
        code = proc.wait(timeout=120)  # a hang guard only, six times --timeout
        said += read_for(proc, 5.0)
        assert code != 0
        # torchrun names that rank's SIGKILL among the failures that ended the run
        assert re.search(rf"exitcode\s*: -9 \(pid: {victim}\)", said), rank_errors(said)
        # the ranks were loading when one was killed, not failing on their own (their workers' sockets once did)
        assert "gave no batch" not in said and "AF_UNIX" not in said, rank_errors(said)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    deadline = time.monotonic() + 10
    while (leftover := subprocess.run(["pgrep", "-f", str(out)], capture_output=True)).returncode == 0 \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftover.returncode == 1, leftover.stdout  # no rank, and no rank's DataLoader worker, survives
    assert not out.exists()
