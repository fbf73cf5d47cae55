"""Where the images come from: a real LFW copy (``LFW_ROOT`` or an explicit path) or the synthetic cache."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lfw.data import SYNTHETIC_SIZES
from lfw.data.dataset import find_image_root, list_dir
from lfw.data.screen import Screening, screen_tree
from lfw.data.synth import cached_tree


@dataclass(frozen=True)
class DataSource:
    """The resolved image folder and whether it is real LFW or synthetic; ``screening``: what :func:`screened`
    left out (``path`` is then the tree's view without those images)."""

    path: Path
    kind: str  # "real" | "synthetic"
    screening: Screening | None = None

    @property
    def tree(self) -> str:
        """The folder the images come from (the user's, where ``path`` is a screened view of it)."""
        return self.screening.data if self.screening is not None else str(self.path)


def screened(source: DataSource) -> DataSource:
    """``source`` without its unreadable images (:func:`lfw.data.screen.screen_tree`): the skip option's data."""
    path, screening = screen_tree(source.path)
    return DataSource(path, source.kind, screening)


def resolve_root(path: str | os.PathLike[str] | None = None,
                 synthetic_images: int = SYNTHETIC_SIZES["quick"], seed: int = 0) -> DataSource:
    """An explicit ``path`` (checked: one-line errors), else ``$LFW_ROOT``, else the cached synthetic tree."""
    if given := path or os.environ.get("LFW_ROOT"):
        return DataSource(find_image_root(given), "real")
    return DataSource(cached_tree(synthetic_images, seed), "synthetic")


def tree_stats(root: Path) -> tuple[int, int]:
    """(number of files, total bytes) under ``root``: what the machine info records about the dataset."""
    count = size = 0
    for person in list_dir(root):
        if person.is_dir():
            for entry in list_dir(person.path):
                count += 1
                size += entry.stat().st_size
    return count, size
