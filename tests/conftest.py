"""Tiny synthetic LFW trees for fast behaviour tests (never the benchmark cache, never a download)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lfw.data.synth import synthesize
from lfw.measure.resources import Limits, MiB
from tests.trees import TINY_IMAGES


@pytest.fixture(scope="session")
def tiny_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-image synthetic tree (the image folder itself); read-only by convention."""
    return synthesize(tmp_path_factory.mktemp("tiny") / "lfw", images=TINY_IMAGES, seed=0, workers=1, progress=False)


@pytest.fixture
def tree_copy(tiny_tree: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny tree that a test may damage."""
    return Path(shutil.copytree(tiny_tree, tmp_path / "lfw"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.needs_shm(MIB)``: skip, naming the need and the limit, where /dev/shm is smaller (a
    container's default 64 MB, ``make test-small-shm SHM=16m``). Tests marked 64 were measured to pass at 64 MiB
    (docs/runs/small-shm.txt)."""
    marker = item.get_closest_marker("needs_shm")
    if marker is None:
        return
    total = Limits.read().shm_total
    if total is not None and total < marker.args[0] * MiB:
        pytest.skip(f"needs ~{marker.args[0]} MiB of /dev/shm for its DataLoader workers' batches, this machine has "
                    f"{total // MiB} MiB: docker run --shm-size=1g")
