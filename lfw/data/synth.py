"""Offline LFW: a deterministic LFW-like tree, since LFW cannot be downloaded at run time.

``python -m lfw.data.synth DIR --images N --seed S`` writes ``DIR/<Person_Name>/<Person_Name>_0001.jpg``: LFW's
layout and naming, 250x250 face-like RGB JPEGs of about LFW's file size, and its heavy-tailed images-per-person
distribution. The same seed and Pillow build give byte-identical files (image seeds: ``(seed, person, image)``)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter
from tqdm import tqdm

from lfw.cli.args import OneLineParser
from lfw.errors import LFWError, cli_entry

LFW_IMAGES = 13_233
LFW_PEOPLE = 5_749
LFW_MULTI = 1_680  # people with two or more images
IMAGE_SIZE = 250
JPEG_QUALITY = 90
NOISE = 7  # uniform grain amplitude; sets the JPEG size near LFW's 13 KB average
TAIL_EXPONENT = 1.47  # people with >= n images falls like n^-1.47 in LFW (1680 at 2, 158 at 10, 7 at 70)

FIRST = ("Aaron Abel Ada Adrian Alba Alec Alice Amir Ana Andre Anna Arturo Beatriz Ben Bianca Boris Carla Carlos "
         "Celia Chen Dana Daniel Diego Dmitri Elena Emil Emma Erik Fatima Felix Gina Goran Hana Hugo Ines Ivan "
         "Jamal Jana Jose Julia Kai Karim Keiko Lara Leon Lina Luca Maya Marco Mei Nadia Nils Omar Olga Pablo "
         "Paula Rafael Rosa Sami Sara Tariq Tina Ugo Vera Victor Wen Yara Yusuf Zoe").split()
LAST = ("Abbott Adler Alvarez Amado Baker Banerjee Barros Bauer Becker Bianchi Blanco Brandt Brooks Campos "
        "Cardoso Castro Chang Costa Cruz Dahl Diaz Dubois Duarte Eriksen Estrada Farah Ferreira Fischer Flores "
        "Fong Garcia Gomez Gruber Haddad Hansen Herrera Hoffmann Ibrahim Ito Jansen Jensen Kaplan Kato Keller "
        "Khan Kim Klein Kowalski Kruger Lang Larsen Lopez Lund Marin Mendes Meyer Molina Moreau Morales Moreno "
        "Nakamura Navarro Nielsen Novak Okafor Olsen Ortiz Park Pereira Petrov Pham Popescu Quinn Ramos Reyes "
        "Rossi Sato Schmidt Silva Singh Smith Sousa Suzuki Tanaka Torres Varga Vega Vidal Wagner Weber Wolf "
        "Yamada Young Zhang Zhou Ziegler").split()


def images_per_person(images: int) -> list[int]:
    """Images per person, summing to ``images``, shaped like LFW's (5,749 people, 1,680 with two or more, a
    power-law tail), both counts scaled down for smaller trees."""
    if images < 1:
        raise LFWError(f"--images must be at least 1, got {images}")
    scale = images / LFW_IMAGES
    people = min(images, max(1, round(LFW_PEOPLE * scale)))
    multi = min(people, round(LFW_MULTI * scale))
    singles = people - multi
    budget = images - singles  # images shared by the people with two or more
    while multi and budget < 2 * multi:  # tiny trees: not enough images for every multi person to have two
        multi -= 1
        singles += 1
        budget -= 1
    if multi == 0:
        return [1] * images
    ranks = np.arange(1, multi + 1, dtype=float)
    # Survival S(n) = multi * (n / 2) ** -b, inverted: the person of rank r has 2 * (r / multi) ** (-1 / b).
    counts = np.maximum(2, np.floor(2 * (ranks / multi) ** (-1 / TAIL_EXPONENT))).astype(int)
    excess = int(counts.sum()) - budget
    if excess > 0:  # shrink the tail from the top until the budget fits
        for r in range(multi):
            take = min(excess, counts[r] - 2)
            counts[r] -= take
            excess -= take
    counts[0] += budget - int(counts.sum())  # the most photographed person absorbs the remainder
    return sorted(counts.tolist(), reverse=True) + [1] * singles


def person_names(count: int, seed: int) -> list[str]:
    """``count`` distinct ``First_Last`` names, in a seed-determined order."""
    pairs = [f"{f}_{last}" for f in FIRST for last in LAST]
    np.random.default_rng([seed, 0]).shuffle(pairs)
    names = list(pairs)
    letters = "ABCDEFGHJKLMNPRSTVW"
    i = 0
    while len(names) < count:  # beyond the First x Last combinations add a middle initial
        f, last = pairs[i % len(pairs)].split("_")
        names.append(f"{f}_{letters[(i // len(pairs)) % len(letters)]}_{last}")
        i += 1
    return names[:count]


def _face_image(seed: int, person: int, image: int) -> Image.Image:
    """One 250x250 face-like picture; a person keeps skin, hair and background hue across their images."""
    who = np.random.default_rng([seed, 1, person])
    rng = np.random.default_rng([seed, 2, person, image])
    skin = who.uniform([120, 80, 60], [240, 200, 170])
    hair = who.uniform(10, 120, 3)
    bg = who.uniform(30, 220, 3)
    ramp = np.linspace(0, 60, IMAGE_SIZE, dtype=np.float32)
    tilt = rng.uniform(-0.4, 0.4, 3).astype(np.float32)
    canvas = (bg.astype(np.float32) + ramp[None, :, None] * tilt + ramp[:, None, None] * (0.4 - tilt))
    img = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img)
    for _ in range(6):  # background clutter: other people, objects
        x, y = rng.uniform(0, IMAGE_SIZE, 2)
        w, h = rng.uniform(20, 90, 2)
        draw.rectangle((x, y, x + w, y + h), fill=tuple(int(c) for c in rng.uniform(0, 255, 3)))
    cx, cy = 125 + rng.normal(0, 6, 2)
    fw, fh = who.uniform(42, 56), who.uniform(58, 72)
    draw.ellipse((cx - fw - 8, cy - fh - 18, cx + fw + 8, cy + fh * 0.4), fill=tuple(int(c) for c in hair))
    draw.rectangle((cx - fw * 0.45, cy + fh * 0.7, cx + fw * 0.45, IMAGE_SIZE), fill=tuple(int(c) for c in skin * 0.9))
    draw.ellipse((cx - fw, cy - fh, cx + fw, cy + fh), fill=tuple(int(c) for c in skin))
    for side in (-1, 1):
        ex, ey = cx + side * fw * 0.4, cy - fh * 0.15
        draw.ellipse((ex - 9, ey - 5, ex + 9, ey + 5), fill=(235, 235, 235))
        draw.ellipse((ex - 4, ey - 4, ex + 4, ey + 4), fill=(40, 30, 25))
        draw.line((ex - 12, ey - 12, ex + 10, ey - 14), fill=tuple(int(c) for c in hair), width=3)
    draw.polygon([(cx, cy - 5), (cx - 8, cy + 18), (cx + 8, cy + 18)], fill=tuple(int(c) for c in skin * 0.8))
    smile = rng.uniform(2, 10)
    draw.chord((cx - 20, cy + 25 - smile, cx + 20, cy + 38 + smile), 0, 180, fill=(150, 60, 60))
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.8, 1.6)))
    noise = rng.integers(-NOISE, NOISE + 1, (IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.int16)  # sensor grain
    pixels = np.asarray(img, dtype=np.int16) + noise
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def _write_person(job: tuple[str, int, int, int, str]) -> int:
    """Write every image of one person; returns the number of images written."""
    out, seed, person, count, name = job
    folder = Path(out) / name
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        _face_image(seed, person, k).save(folder / f"{name}_{k + 1:04d}.jpg", format="JPEG", quality=JPEG_QUALITY)
    return count


def synthesize(out: str | os.PathLike[str], images: int = LFW_IMAGES, seed: int = 0,
               workers: int | None = None, progress: bool = True) -> Path:
    """Write the tree into ``out`` (which must not exist or be empty) and return it."""
    out = Path(out)
    if workers is not None and workers < 1:
        raise LFWError(f"--workers must be at least 1, got {workers}")
    if seed < 0:
        raise LFWError(f"--seed must be 0 or more (numpy seeds are non-negative), got {seed}")
    counts = images_per_person(images)  # an --images below 1 is refused here
    names = person_names(len(counts), seed)
    order = np.random.default_rng([seed, 3]).permutation(len(counts)).tolist()  # not alphabetical, as in LFW
    jobs = [(str(out), seed, person, counts[person], names[person]) for person in order]
    if out.exists() and not out.is_dir():
        raise LFWError(f"{out} is a file; choose a new folder for the synthetic tree")
    if out.exists() and any(out.iterdir()):
        raise LFWError(f"refusing to write into non-empty folder {out}; choose a new folder or empty it first")
    out.mkdir(parents=True, exist_ok=True)
    workers = workers or max(1, min(len(os.sched_getaffinity(0)), 8))
    with tqdm(total=images, unit="img", desc=f"synthesizing LFW into {out}", disable=not progress) as bar:
        if workers == 1:
            for job in jobs:
                bar.update(_write_person(job))
        else:
            with ProcessPoolExecutor(workers) as pool:
                for n in pool.map(_write_person, jobs, chunksize=16):
                    bar.update(n)
    return out


def cache_root() -> Path:
    """lfw-bench's cache folder: ``$LFW_CACHE``, else ``$XDG_CACHE_HOME/lfw-bench``, else ``~/.cache/lfw-bench``."""
    return Path(os.environ.get("LFW_CACHE") or
                Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lfw-bench")


@contextmanager
def building(final: Path) -> Iterator[Path]:
    """A fresh staging folder beside ``final``, renamed to ``final`` if the block completes (another process's
    ``final`` kept if it came first), removed either way."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".partial-{final.name}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        try:
            staging.rename(final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def cached_tree(images: int, seed: int = 0) -> Path:
    """A synthetic tree of ``images`` images in :func:`cache_root`, made once (:func:`building`) and reused."""
    final = cache_root() / f"synthetic-lfw-{images}-seed{seed}" / "lfw"
    if not final.is_dir():
        with building(final) as staging:
            synthesize(staging, images=images, seed=seed)
    return final


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m lfw.data.synth", description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to create (must not exist or be empty)")
    parser.add_argument("--images", type=int, default=LFW_IMAGES, help="number of images (default: LFW's 13,233)")
    parser.add_argument("--seed", type=int, default=0, help="seed; the same seed writes byte-identical files")
    parser.add_argument("--workers", type=int, default=None, help="processes (default: usable cores, up to 8)")
    args = parser.parse_args(argv)
    out = synthesize(args.out, images=args.images, seed=args.seed, workers=args.workers)
    print(f"wrote {args.images} images of {len(images_per_person(args.images))} people to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
