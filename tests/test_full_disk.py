"""A full disk never leaves a corrupt file: every writer of a file that a later command reads (the autosaved run
through the plugin, --benchmark-json, verdict.json, the gate's pages, the A/B runs, the report's pages and charts,
the history store, the CLI's -mprof, the skip option's screen) saves whole or not at all, says in one line which
file, the bytes it needed and the bytes free, ends with exit 4, and leaves the folder as it was.

As root, each writer meets a real full file system: ``tests/full_disk.py`` runs inside ``unshare -m`` with a
tmpfs mounted on its folder and filled (12 KB left for the autosave through pytest, as a user met it; nothing for
the others). Elsewhere (no root, no mount namespace) it runs with its stand-in, which fails the atomic writer's
writes with ENOSPC.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lfw.cli.saving import DiskFullError, append_atomic, write_atomic
from lfw.errors import EXIT_MEASUREMENT, LFWError
from tests.full_disk import WRITERS, StandIn

ROOT = Path(__file__).resolve().parents[1]
MOUNT_SIZE = "4m"


def tmpfs_possible(folder: Path) -> bool:
    """Root, with a mount namespace of its own in which a tmpfs mounts (a container may refuse either)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$1"', "sh", str(folder)],
                           capture_output=True, timeout=30, check=False)
    return probe.returncode == 0


def run_writers(folder: Path, names: list[str]) -> dict[str, Any]:
    """``tests/full_disk.py`` on ``names`` in ``folder``: each writer's outcome."""
    if tmpfs_possible(folder):
        command = ["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o size={MOUNT_SIZE} tmpfs "$1" && exec "$0" -m '
                   'tests.full_disk "$@"', sys.executable, str(folder), *names]
    else:
        command = [sys.executable, "-m", "tests.full_disk", str(folder), "--stand-in", *names]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout))


PLUGIN = "pytest --benchmark-autosave"  # a real pytest run of the suite's smoke profile: the slow tier's


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every writer's but the plugin's, in one process."""
    return run_writers(tmp_path_factory.mktemp("full"), [name for name in WRITERS if name != PLUGIN])


@pytest.fixture(scope="module")
def plugin_outcome(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_writers(tmp_path_factory.mktemp("full-plugin"), [PLUGIN])


@pytest.mark.parametrize("writer", [pytest.param(name, marks=pytest.mark.slow) if name == PLUGIN else name
                                    for name in WRITERS])
def test_a_writer_on_a_full_disk_says_so_in_one_line_and_leaves_the_folder_as_it_was(
        request: pytest.FixtureRequest, writer: str) -> None:
    found = request.getfixturevalue("plugin_outcome" if writer == PLUGIN else "outcomes")[writer]
    errors = [line for line in found["stderr"].splitlines() if line.startswith("error:")]
    assert found["exit"] == EXIT_MEASUREMENT, found["stderr"][-2000:]
    assert len(errors) == 1 and "Traceback" not in found["stderr"], found["stderr"][-2000:]
    assert re.search(rf"^error: cannot save \S+: it needs [\d,]+ bytes and {WRITERS[writer].room:,} are free there "
                     r"\(No space left on device\)", errors[0]), errors[0]
    assert found["same_files"], "a failed save leaves no new file (nor a temporary one, nor a folder)"
    assert found["earlier_identical"], "the earlier file is byte-identical"


def test_a_save_is_whole_replaces_the_earlier_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "run.json"
    write_atomic(path, "first\n")
    write_atomic(path, b"second\n")
    assert path.read_bytes() == b"second\n" and os.listdir(path.parent) == ["run.json"]
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask, "the permissions a plain open() gives"


def test_an_exclusive_save_never_replaces_a_run(tmp_path: Path) -> None:
    path = tmp_path / "0001_run.json"
    path.write_bytes(b"earlier")
    with pytest.raises(LFWError, match="refusing to overwrite"):
        write_atomic(path, "new", exclusive=True)
    assert path.read_bytes() == b"earlier" and os.listdir(tmp_path) == ["0001_run.json"]


def test_a_full_disk_is_one_line_with_need_and_free_and_exit_4(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "store.jsonl"
    append_atomic(path, "line 1\n")
    stand_in = StandIn()
    stand_in.fill(4)
    try:
        with pytest.raises(DiskFullError) as caught:
            append_atomic(path, "line 2\n")
        with pytest.raises(DiskFullError):
            write_atomic(tmp_path / "new" / "folder" / "verdict.json", "{}\n" * 10)
    finally:
        stand_in.empty()
    assert caught.value.exit_code == EXIT_MEASUREMENT
    assert str(caught.value).startswith(f"cannot save {path}: it needs 14 bytes and 4 are free there (No space left")
    assert path.read_text() == "line 1\n" and os.listdir(path.parent) == ["store.jsonl"]
    assert sorted(os.listdir(tmp_path)) == ["runs"], "no folder made for a file that could not be saved"
