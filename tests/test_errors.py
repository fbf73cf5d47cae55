"""Exit codes that say whose failure it is: 2 for bad input, 4 for the machine; and nothing left behind."""

from __future__ import annotations

import errno
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

from lfw.errors import (
    EXIT_MEASUREMENT,
    EXIT_USAGE,
    SOCKET_PATH_MAX,
    SOCKET_SUFFIX,
    LFWError,
    MeasurementError,
    cli_entry,
    environment_failure,
)


class Suicidal(Dataset):
    """A dataset whose worker kills itself with SIGKILL, as the OOM killer would."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> Any:
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_worker_is_a_machine_failure_and_leaves_no_temporary_files(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str] = []

    @cli_entry
    def main() -> int:
        seen.append(tempfile.gettempdir())
        Path(tempfile.mkdtemp(prefix="pymp-")).joinpath("left-by-a-worker").write_text("")
        for _ in DataLoader(Suicidal(), batch_size=2, num_workers=1, timeout=30):
            pass
        return 0

    assert main() == EXIT_MEASUREMENT
    err = capsys.readouterr().err
    assert err.startswith("error: a DataLoader worker") and err.count("\n") == 1
    assert seen and not Path(seen[0]).exists()  # the private temporary folder and what was in it are gone
    assert tempfile.gettempdir() != seen[0] and os.environ.get("TMPDIR") != seen[0]


@pytest.mark.parametrize(("exc", "code"), [
    (RuntimeError("DataLoader worker (pid 12) is killed by signal: Killed. "), EXIT_MEASUREMENT),
    (RuntimeError("DataLoader worker (pid 12) is killed by signal: Segmentation fault. "), EXIT_MEASUREMENT),
    (RuntimeError("unable to write to file </torch_1_2>: No space left on device (28)"), EXIT_MEASUREMENT),
    (OSError(errno.EMFILE, "Too many open files"), EXIT_MEASUREMENT),
    (MeasurementError("a side crashed"), EXIT_MEASUREMENT),
    (OSError(errno.EACCES, "Permission denied", "/root/x"), EXIT_USAGE),
    (LFWError("bad flag"), EXIT_USAGE),
    (RuntimeError("Caught LFWError in DataLoader worker process 0.\nOriginal Traceback...\nlfw.X: bad jpeg"),
     EXIT_USAGE),
])
def test_exit_codes_separate_bad_input_from_machine_failures(exc: BaseException, code: int,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    @cli_entry
    def main() -> int:
        raise exc

    assert main() == code
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_unrelated_errors_still_surface() -> None:
    @cli_entry
    def main() -> int:
        raise RuntimeError("a bug, not an input problem")

    with pytest.raises(RuntimeError, match="a bug"):
        main()
    assert environment_failure(ValueError("x")) is None


def test_workers_load_under_a_temporary_folder_too_deep_for_their_sockets(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A deep TMPDIR (pytest's own, a CI's) once made every worker fail at its first batch: the socket that hands
    a batch's shared memory to the main process could not be bound (AF_UNIX path too long)."""
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile caches its folder: make it read TMPDIR again
    assert len(str(deep)) + SOCKET_SUFFIX > SOCKET_PATH_MAX
    seen: list[str] = []

    @cli_entry
    def main() -> int:
        seen.append(tempfile.gettempdir())
        loaded = [batch for (batch,) in DataLoader(TensorDataset(torch.arange(8)), batch_size=2, num_workers=1,
                                                   timeout=20)]
        assert torch.cat(loaded).tolist() == list(range(8))
        return 0

    assert main() == 0
    assert len(seen[0]) + SOCKET_SUFFIX <= SOCKET_PATH_MAX and not Path(seen[0]).exists()
