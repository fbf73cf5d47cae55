"""Tiny synthetic LFW trees for fast behaviour tests (never the benchmark cache, never a download)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image

from lfw.synth import synthesize

TINY_IMAGES = 40


@pytest.fixture(scope="session")
def tiny_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-image synthetic tree (the image folder itself); read-only by convention."""
    return synthesize(tmp_path_factory.mktemp("tiny") / "lfw", images=TINY_IMAGES, seed=0, workers=1, progress=False)


@pytest.fixture
def tree_copy(tiny_tree: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny tree that a test may damage."""
    return Path(shutil.copytree(tiny_tree, tmp_path / "lfw"))


def first_image(root: Path) -> Path:
    return sorted(root.glob("*/*.jpg"))[0]


def write_jpeg(path: Path, mode: str = "RGB") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    color = {"RGB": (200, 100, 50), "L": 128, "CMYK": (0, 50, 100, 0)}[mode]
    Image.new(mode, (250, 250), color).save(path, format="JPEG")
