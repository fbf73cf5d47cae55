"""``python -m lfw.diagnose --dataset MODULE:FACTORY [--step MODULE:FN]``: a user's dataset and step, measured and
diagnosed like LFW; every wrong string is one line naming the flag, exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lfw.diagnose.__main__ import main

MODULE = '''
import time
import torch
from torch.utils.data import TensorDataset

STEPS = []

def make():
    return TensorDataset(torch.zeros(24, 3, 8, 8), torch.arange(24))

def step(batch):
    STEPS.append(len(batch[0]))
    time.sleep(0.002)

NOT_CALLABLE = 3
'''


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "diagnose_user_parts_mod"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


@pytest.mark.parametrize("workers", ["0", "1"], ids=["workers0", "workers1"])
def test_a_user_dataset_and_step_are_diagnosed(user_module: str, workers: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--dataset", f"{user_module}:make", "--step", f"{user_module}:step", "--workers", workers,
               "--batches", "3", "--batch-size", "4", "--no-chart", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"dataset {user_module}:make" in out and f"step {user_module}:step" in out
    for field in ("data wait", "bottleneck", "simulated", "recommend"):
        assert field in out
    assert sys.modules[user_module].STEPS == [4, 4, 4]  # type: ignore[attr-defined]


def test_a_user_dataset_with_the_cnn_step(user_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--dataset", f"{user_module}:make", "--model", "cnn", "--workers", "0", "--batches", "2",
               "--batch-size", "4", "--no-chart", "--quiet"])
    assert rc == 0 and "cnn on " in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "says"), [
    (["--dataset", "no_such_module_here:make"], "--dataset 'no_such_module_here:make': no module"),
    (["--dataset", "{mod}"], "expected MODULE:FACTORY"),
    (["--dataset", "{mod}:missing"], "has no attribute"),
    (["--dataset", "{mod}:make", "--transform", "none"], "--transform does not apply"),
    (["--dataset", "{mod}:make", "--step", "{mod}:NOT_CALLABLE"], "not a callable that takes a batch"),
    (["--dataset", "{mod}:make", "--step", "{mod}:step", "--step-ms", "5"], "give one step"),
    (["--step", "{mod}:step", "--model", "cnn"], "give one step"),
], ids=["no-module", "no-colon", "no-attr", "transform", "step-not-callable", "step-and-sleep", "step-and-model"])
def test_bad_user_parts_are_one_line_and_exit_2(user_module: str, argv: list[str], says: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([a.replace("{mod}", user_module) for a in argv] + ["--no-chart", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error: ") and "\n" not in err and says in err
    assert "--bench-dataset" not in err
