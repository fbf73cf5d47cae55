"""Tiny synthetic LFW trees for fast behaviour tests (never the benchmark cache, never a download)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lfw.data.synth import synthesize
from tests.trees import TINY_IMAGES


@pytest.fixture(scope="session")
def tiny_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-image synthetic tree (the image folder itself); read-only by convention."""
    return synthesize(tmp_path_factory.mktemp("tiny") / "lfw", images=TINY_IMAGES, seed=0, workers=1, progress=False)


@pytest.fixture
def tree_copy(tiny_tree: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny tree that a test may damage."""
    return Path(shutil.copytree(tiny_tree, tmp_path / "lfw"))
