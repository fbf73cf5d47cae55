"""Unreadable images found once, before a run, and left out of it: what every entry point's skip option does.

Every image is read once in this process before anything is timed; the run records how many were left out and which
(:meth:`Screening.facts`). An LFW tree that has some is read through a cached *view* of links to the readable images;
a user's own dataset is screened item by item (:func:`find_unreadable`). Why and how: docs/faults.md."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from lfw.cli.saving import write_atomic
from lfw.data.dataset import UNREADABLE, pil_loader, scan_images
from lfw.data.synth import building, cache_root
from lfw.errors import LFWError, one_line
from lfw.results import keys as K

NAMED = 5  # unreadable images named in a run's record and in its one-line summary; the count covers them all
REASON_CHARS = 100


@dataclass(frozen=True)
class Screening:
    """What a screen found in ``data``: ``checked`` images, and each unreadable one as (its name, why), in order."""

    data: str
    checked: int
    skipped: tuple[tuple[str, str], ...] = ()

    def facts(self) -> dict[str, Any]:
        """What a run records (``machine_info``): how many images it skipped, and the first few by name."""
        return {K.SKIPPED_IMAGES: len(self.skipped), K.SKIPPED_IMAGE_FILES: [n for n, _ in self.skipped[:NAMED]]}

    def summary(self) -> str:
        """One line: how many of how many were skipped, the first few with why."""
        if not self.skipped:
            return f"checked {self.checked:,} images of {self.data}: every one is readable, none skipped"
        first = "; ".join(f"{name} ({why})" for name, why in self.skipped[:NAMED])
        more = f"; and {len(self.skipped) - NAMED:,} more" if len(self.skipped) > NAMED else ""
        return f"skipped {len(self.skipped):,} unreadable images of {self.checked:,} in {self.data}: {first}{more}"


def find_unreadable(names: Sequence[str], read: Callable[[int], object],
                    errors: tuple[type[BaseException], ...] = UNREADABLE) -> list[tuple[int, str]]:
    """(position, why) of each item whose ``read(position)`` raises one of ``errors``, with a progress bar."""
    found = []
    for i in tqdm(range(len(names)), desc="checking images", unit="img", leave=False, file=sys.stderr,
                  disable=len(names) < 500):
        try:
            read(i)
        except errors as exc:
            found.append((i, _why(exc, names[i])))
    return found


def _why(exc: BaseException, path: str) -> str:
    """Why an image failed, short: the error's own words without the file's name or the fix that follows."""
    text = one_line(exc)
    prefix = f"cannot decode image {path}"
    if text.startswith(prefix):  # CorruptImageError: "<prefix>: <why>; <fix>" or "<prefix> (<why>); <fix>"
        text = text.removeprefix(prefix).split("; replace the file", 1)[0]
        text = text.removeprefix(": ").removeprefix(" (").removesuffix(")")
    return text[:REASON_CHARS]


def screen_tree(root: str | os.PathLike[str],
                cache_dir: str | os.PathLike[str] | None = None) -> tuple[Path, Screening]:
    """Screen every image of the LFW tree at ``root`` (cached): the folder to read (the tree, or its view without
    the unreadable images) and what the screen found; an :class:`LFWError` when none is readable."""
    scan = scan_images(root)
    names = [os.path.relpath(p, scan.image_root) for p in scan.paths]
    folder = Path(cache_dir or cache_root()) / "screened" / _key(scan.image_root, scan.paths, names)
    record = folder / "screening.json"
    if (skipped := _cached(record)) is None:
        skipped = [(names[i], why) for i, why in find_unreadable(scan.paths, lambda i: pil_loader(scan.paths[i]))]
        write_atomic(record, json.dumps({"tree": str(scan.image_root), "images": len(names), "skipped": skipped},
                                        indent=1) + "\n")
    screening = Screening(str(scan.image_root), len(names), tuple((n, why) for n, why in skipped))
    if len(skipped) == len(names):
        raise LFWError(f"no readable image under {scan.image_root}: all {len(names):,} failed, e.g. "
                       f"{skipped[0][0]} ({skipped[0][1]})")
    _forget_older(folder, str(scan.image_root))
    if not skipped:
        return scan.image_root, screening
    return _view(scan.paths, names, {name for name, _ in skipped}, folder / "lfw"), screening


def _key(image_root: Path, paths: Sequence[str], names: Sequence[str]) -> str:
    """The screen's cache key: the tree's folder and each image's name, size and modification time."""
    digest = hashlib.sha256(str(image_root.resolve()).encode())
    for path, name in zip(paths, names, strict=True):
        stat = os.stat(path)
        digest.update(f"\n{name}\t{stat.st_size}\t{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _forget_older(folder: Path, tree: str) -> None:
    """Remove the other screens (and views) of ``tree`` beside ``folder``: the tree changed since they were made."""
    for other in folder.parent.iterdir():
        if other != folder and other.is_dir():
            try:
                same = json.loads((other / "screening.json").read_text(encoding="utf-8")).get("tree") == tree
            except (OSError, ValueError, AttributeError):
                continue
            if same:
                shutil.rmtree(other, ignore_errors=True)


def _cached(record: Path) -> list[tuple[str, str]] | None:
    """The unreadable images a cached screen found; None when there is none (or it cannot be read)."""
    try:
        return [(str(name), str(why)) for name, why in json.loads(record.read_text(encoding="utf-8"))["skipped"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _view(paths: Sequence[str], names: Sequence[str], bad: set[str], final: Path) -> Path:
    """``final``: person folders of links to the readable images (made once, whole: :func:`building`)."""
    if final.is_dir():
        return final
    with building(final) as staging:
        for path, name in zip(paths, names, strict=True):
            if name not in bad:
                target = staging / name
                target.parent.mkdir(exist_ok=True)
                try:
                    os.link(path, target)
                except OSError:  # another file system, or links to others' files refused
                    os.symlink(os.path.abspath(path), target)
    return final
