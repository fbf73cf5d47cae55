"""Storage formats made once from an LFW tree into the cache, under ``<cache>/formats/<key>/`` (:func:`formats_dir`):
tar shards and a decoded ``uint8`` memmap, each built with a progress bar in a staging folder renamed into place."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from lfw.data.dataset import ScanResult, scan_images
from lfw.data.synth import building, cache_root
from lfw.errors import LFWError
from lfw.pipelines.decoders import decode, read_file


@dataclass(frozen=True)
class ShardSet:
    """Tar shards of one tree: files in order, class names, image count, and ``build_s`` (None where not recorded)."""

    shards: list[Path]
    classes: list[str]
    images: int
    build_s: float | None = None


def formats_dir(scan: ScanResult) -> Path:
    """``<cache>/formats/<key>``: the key hashes the image root, its file count and total bytes."""
    size = sum(os.stat(p).st_size for p in scan.paths)
    key = hashlib.sha1(f"{scan.image_root.resolve()}|{len(scan.paths)}|{size}".encode()).hexdigest()[:12]
    return cache_root() / "formats" / key


def tar_shards(root: str | os.PathLike[str], images_per_shard: int, images: int | None = None) -> ShardSet:
    """The first ``images`` images (all when None) as tar shards of ``images_per_shard`` images, made on first use."""
    if images_per_shard < 1:
        raise LFWError(f"images per shard must be at least 1, got {images_per_shard}")
    scan = scan_images(root)
    paths = scan.paths[:images]
    final = formats_dir(scan) / f"tar-{len(paths)}-{images_per_shard}"
    manifest = final / "manifest.json"
    if not manifest.exists():
        with building(final) as staging:
            started = time.perf_counter()
            names = [f"shard-{i:05d}.tar" for i in range(-(-len(paths) // images_per_shard))]
            with tqdm(total=len(paths), unit="img", desc=f"writing tar shards into {final}") as bar:
                for number, name in enumerate(names):
                    chunk = paths[number * images_per_shard:(number + 1) * images_per_shard]
                    with tarfile.open(staging / name, "w") as tar:
                        for path in chunk:
                            tar.add(path, arcname=os.path.relpath(path, scan.image_root))
                    bar.update(len(chunk))
            (staging / "manifest.json").write_text(json.dumps(
                {"shards": names, "classes": scan.classes, "images": len(paths),
                 "build_s": round(time.perf_counter() - started, 3)}, indent=1))
    doc = json.loads(manifest.read_text())
    return ShardSet([final / n for n in doc["shards"]], doc["classes"], int(doc["images"]), doc.get("build_s"))


def decoded_memmap(root: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(images.npy, labels.npy): every image decoded once (Pillow) into an (N, H, W, 3) uint8 array on disk; the
    images must share one size, and a corrupt one stops the build with its name."""
    scan = scan_images(root)
    final = formats_dir(scan) / "memmap"
    images, labels = final / "images.npy", final / "labels.npy"
    if labels.exists():
        return images, labels
    with building(final) as staging:
        first = decode("pil", read_file(scan.paths[0]), scan.paths[0])
        shape = (len(scan.paths), first.shape[1], first.shape[2], 3)
        array = np.lib.format.open_memmap(staging / "images.npy", mode="w+", dtype=np.uint8, shape=shape)
        for i, path in enumerate(tqdm(scan.paths, unit="img", desc="decoding LFW into a uint8 memmap")):
            image = decode("pil", read_file(path), path)
            if tuple(image.shape[1:]) != shape[1:3]:
                raise LFWError(f"{path} is {image.shape[2]}x{image.shape[1]}, the others {shape[2]}x{shape[1]}: "
                               "a decoded memmap needs images of one size")
            array[i] = image.permute(1, 2, 0).numpy()
        array.flush()
        del array
        np.save(staging / "labels.npy", np.asarray(scan.labels, dtype=np.int32))
    return images, labels
