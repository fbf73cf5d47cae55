"""The LFW dataset over a real or synthetic ``<root>/<Person_Name>/<Person_Name>_0001.jpg`` tree.

Shaped like torchvision's ``datasets/lfw.py``, with the file index as a constructor argument (a benchmark axis) and
a scan by ``os.scandir`` alone; the roots it accepts: :func:`find_image_root`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

from lfw.data.index import INDEX_KINDS, IndexKind, make_index, path_at
from lfw.data.transforms import get_preset
from lfw.errors import CorruptImageError, LFWError, check_choice, corrupt_image_fix

JPEG_SUFFIXES = (".jpg", ".jpeg")
IMAGE_DIR_NAMES = ("lfw", "lfw_funneled", "lfw-deepfunneled", "lfw-py")
OnError = Literal["raise", "skip"]
# What reading an unreadable image raises: this module's own error, or Pillow's (truncated, unidentified, bad data).
UNREADABLE = (CorruptImageError, OSError, UnidentifiedImageError, SyntaxError, ValueError)


def pil_loader(path: str) -> Image.Image:
    """Open with PIL and convert to RGB; only JPEG data is accepted (Pillow decodes a PNG under a ``.jpg`` name)."""
    with Image.open(path) as img:
        if img.format != "JPEG":
            raise CorruptImageError(f"cannot decode image {path}: {img.format} data, not a JPEG; "
                                    f"{corrupt_image_fix()}")
        return img.convert("RGB")


@dataclass(frozen=True)
class ScanResult:
    """What a scan of an image folder found."""

    image_root: Path
    paths: list[str]
    labels: list[int]
    classes: list[str]
    skipped_files: int


def list_dir(folder: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    """The entries of ``folder`` sorted by name (the scandir iterator closed at once)."""
    with os.scandir(folder) as entries:
        return sorted(entries, key=lambda e: e.name)


def _has_person_folders(folder: Path) -> bool:
    """True if some subfolder of ``folder`` directly holds a JPEG (checks a few, never the whole tree)."""
    try:
        entries = [e for e in list_dir(folder) if e.is_dir()]
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return False
    return any(f.name.lower().endswith(JPEG_SUFFIXES) for entry in entries[:50] for f in list_dir(entry.path))


def find_image_root(root: str | os.PathLike[str]) -> Path:
    """The folder whose subfolders are people, given that folder or a parent of it; an :class:`LFWError` if ``root``
    is missing, empty, or holds no ``<Person>/<image>.jpg`` files."""
    root = Path(root).expanduser()
    if not root.exists():
        raise LFWError(f"LFW folder not found: {root}; pass the folder that holds the person folders "
                       "(or leave it out to use synthetic data)")
    if not root.is_dir():
        raise LFWError(f"LFW path is not a folder: {root}; pass the folder that holds the person folders")
    if not list_dir(root):
        raise LFWError(f"LFW folder is empty: {root}; extract LFW there or run `python -m lfw.data.synth {root}`")
    candidates = [root, *(root / name for name in IMAGE_DIR_NAMES)]
    candidates += [root / "lfw-py" / name for name in IMAGE_DIR_NAMES[:3]]
    for candidate in candidates:
        if _has_person_folders(candidate):
            return candidate
    raise LFWError(f"no JPEG images under {root}: expected <root>/<Person_Name>/<Person_Name>_0001.jpg "
                   "or one of lfw/, lfw_funneled/, lfw-deepfunneled/, lfw-py/ inside it")


def scan_images(root: str | os.PathLike[str]) -> ScanResult:
    """Find every ``<Person>/<file>.jpg`` under the image root; count (and skip) everything else."""
    image_root = find_image_root(root)
    paths: list[str] = []
    labels: list[int] = []
    classes: list[str] = []
    skipped = 0
    for person in list_dir(image_root):
        if not person.is_dir():
            skipped += 1  # pairs.txt, people.txt, .DS_Store beside the person folders
            continue
        files = list_dir(person.path)
        images = [f.path for f in files if f.name.lower().endswith(JPEG_SUFFIXES) and f.is_file()]
        skipped += len(files) - len(images)
        if not images:
            continue
        labels.extend([len(classes)] * len(images))
        classes.append(person.name)
        paths.extend(images)
    if not paths:
        raise LFWError(f"no JPEG images under {image_root}: expected <Person_Name>/<Person_Name>_0001.jpg files")
    return ScanResult(image_root, paths, labels, classes, skipped)


class LFWDataset(Dataset):
    """Labeled Faces in the Wild: items are ``(image, label)``, label = the person's id over sorted names.

    Args:
        root: the image folder (``lfw/``, ``lfw_funneled/``, ``lfw-deepfunneled/``, a synthetic tree) or a
            folder holding one of those or torchvision's ``lfw-py/``.
        transform: a callable on the PIL image, or a preset name from :mod:`lfw.data.transforms`.
        index: ``"numpy"`` (fixed-width bytes, one refcount), ``"packed"`` or ``"list"`` (:mod:`lfw.data.index`).
        on_error: ``"raise"`` turns an unreadable image into :class:`CorruptImageError` naming the file;
            ``"skip"`` returns ``None`` for it, which :func:`collate_skipping` drops and counts.
        loader: how a path becomes an image: a PIL image for the presets, or a tensor for a decode pipeline
            (:mod:`lfw.pipelines`); injectable for tests and alternative decoders."""

    def __init__(self, root: str | os.PathLike[str], transform: Callable[[Any], Any] | str | None = "none",
                 index: IndexKind | str = "numpy", on_error: OnError = "raise",
                 loader: Callable[[str], Any] = pil_loader) -> None:
        check_choice("on_error", on_error, get_args(OnError))
        self.index_kind: IndexKind = check_choice("index kind", index, INDEX_KINDS)
        self.transform = get_preset(transform) if isinstance(transform, str) else transform
        self.on_error = on_error
        self.loader = loader
        scan = scan_images(root)
        self.root = scan.image_root
        self.classes = scan.classes
        self.skipped_files = scan.skipped_files
        self.bad_files = 0  # unreadable images skipped in this process (workers keep their own count)
        self.paths, self.labels = make_index(scan.paths, scan.labels, self.index_kind)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[Any, int] | None:
        """``(sample, label)``, or None for an unreadable image under ``on_error="skip"``."""
        path = path_at(self.paths, i)
        try:
            image = self.loader(path)
        except UNREADABLE as exc:
            if self.on_error == "skip":
                self.bad_files += 1
                return None
            if isinstance(exc, CorruptImageError):  # a loader that already names the file and what is wrong
                raise
            raise CorruptImageError(f"cannot decode image {path} ({type(exc).__name__}: {exc}); "
                                    f"{corrupt_image_fix()}") from None
        sample = self.transform(image) if self.transform is not None else image
        return sample, int(self.labels[i])

    def name_of(self, label: int) -> str:
        """The person's name (underscores as spaces) for a label."""
        return self.classes[int(label)].replace("_", " ")

    def __repr__(self) -> str:
        return (f"LFWDataset(root={str(self.root)!r}, images={len(self)}, people={len(self.classes)}, "
                f"index={self.index_kind!r}, skipped_files={self.skipped_files})")
