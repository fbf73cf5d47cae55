"""Synthetic LFW: deterministic bytes, the real layout and a heavy-tailed images-per-person distribution."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image

from lfw.data.synth import LFW_IMAGES, LFW_PEOPLE, images_per_person, main, synthesize
from lfw.errors import LFWError


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.jpg"))}


def test_same_seed_gives_byte_identical_files(tiny_tree: Path, tmp_path: Path) -> None:
    again = synthesize(tmp_path / "again", images=40, seed=0, workers=2, progress=False)
    assert digest(again) == digest(tiny_tree)
    other = synthesize(tmp_path / "other", images=40, seed=1, workers=1, progress=False)
    assert digest(other) != digest(tiny_tree)


def test_layout_and_image_format(tiny_tree: Path) -> None:
    for person in tiny_tree.iterdir():
        files = sorted(person.iterdir())
        assert [f.name for f in files] == [f"{person.name}_{k:04d}.jpg" for k in range(1, len(files) + 1)]
    with Image.open(next(tiny_tree.rglob("*.jpg"))) as img:
        assert img.format == "JPEG" and img.size == (250, 250) and img.mode == "RGB"


def test_full_size_distribution_matches_lfw() -> None:
    counts = images_per_person(LFW_IMAGES)
    assert sum(counts) == LFW_IMAGES and len(counts) == LFW_PEOPLE
    singles = sum(c == 1 for c in counts)
    assert 3_900 <= singles <= 4_200  # LFW: 4,069 people with one image
    assert 300 <= max(counts) <= 600  # LFW's largest folder holds 530


@pytest.mark.parametrize("images", [1, 2, 5, 40, 999])
def test_small_trees_sum_exactly(images: int) -> None:
    counts = images_per_person(images)
    assert sum(counts) == images and min(counts) >= 1


def test_refuses_non_empty_folder_and_bad_counts(tiny_tree: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(LFWError, match="non-empty"):
        synthesize(tiny_tree, images=3, progress=False)
    assert main([str(tmp_path / "x"), "--images", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [(["--seed", "-1"], "--seed must be 0 or more"),
                                               (["--images", "0"], "--images must be at least 1")])
def test_bad_seed_and_size_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               args: list[str], message: str) -> None:
    from lfw.data.synth import main

    assert main([str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
