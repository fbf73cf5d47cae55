"""Helpers for tests that build or damage small LFW trees (a plain module: test files import it, not conftest)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

TINY_IMAGES = 40


def first_image(root: Path) -> Path:
    return sorted(root.glob("*/*.jpg"))[0]


def write_jpeg(path: Path, mode: str = "RGB") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    color = {"RGB": (200, 100, 50), "L": 128, "CMYK": (0, 50, 100, 0)}[mode]
    Image.new(mode, (250, 250), color).save(path, format="JPEG")
