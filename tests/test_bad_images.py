"""A corrupt image can be skipped from every entry point: ``python -m lfw -skip_bad_images``, the suite's
``--bench-skip-bad-images`` (``make bench SKIP_BAD_IMAGES=1``), and the same option with ``--bench-dataset``.
Without it the error names the option that exists; with it the run records how many images it left out and which,
the report says so, and the gate refuses to compare it with a run that read them all (exit 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

import lfw.data.screen as screen
from lfw.__main__ import main as cli_main
from lfw.data.dataset import LFWDataset
from lfw.data.index import path_at
from lfw.data.screen import screen_tree
from lfw.errors import SKIP_OPTION_ENV, CorruptImageError
from lfw.gate.__main__ import main as gate_main
from lfw.gate.compare import EXIT_INCOMPLETE
from lfw.pipelines import Pipeline
from lfw.report.console import console
from lfw.report.findings import find
from lfw.report.page import markdown_page
from lfw.report.render import Report
from lfw.results import keys as K
from lfw.results import load_run
from lfw.suite.user_dataset import SKIP_HINT, ReadableItems, user_dataset

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "quick_run.json"


def damage(tree: Path) -> list[str]:
    """Truncate two images, make one a text file and one PNG data under its .jpg name: their names."""
    victims = sorted(tree.glob("*/*.jpg"))[3:7]
    for path in victims[:2]:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    victims[2].write_bytes(b"not an image at all\n")
    Image.new("RGB", (250, 250)).save(victims[3], format="PNG")
    return sorted(str(p.relative_to(tree)) for p in victims)


@pytest.fixture
def damaged(tree_copy: Path) -> tuple[Path, list[str]]:
    return tree_copy, damage(tree_copy)


def test_the_cli_error_names_its_flag_and_the_flag_skips_and_names_them(damaged: tuple[Path, list[str]],
                                                                        tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    tree, bad = damaged
    monkeypatch.setenv("LFW_CACHE", str(tmp_path / "cache"))  # the screen's cache, not the user's
    args = ["-path_to_folder", str(tree), "-batch_size", "8", "-get_timing", "-repetitions", "1"]
    assert cli_main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and err[0].startswith("error: cannot decode image") and "use -skip_bad_images" in err[0]
    assert cli_main([*args, "-skip_bad_images"]) == 0
    out = capsys.readouterr().out
    assert f"skipped 4 unreadable images of 40 in {tree}: " in out and all(name in out for name in bad)
    assert "36 images" in out and "truncated" in out and "PNG data, not a JPEG" in out


def test_a_screen_is_cached_and_its_view_holds_the_readable_images_only(damaged: tuple[Path, list[str]],
                                                                        tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    tree, bad = damaged
    view, screening = screen_tree(tree, cache_dir=tmp_path / "cache")
    assert [name for name, _ in screening.skipped] == bad and screening.checked == 40
    assert screening.facts() == {K.SKIPPED_IMAGES: 4, K.SKIPPED_IMAGE_FILES: bad}
    assert sorted(str(p.relative_to(view)) for p in view.glob("*/*.jpg")) == sorted(
        str(p.relative_to(tree)) for p in tree.glob("*/*.jpg") if str(p.relative_to(tree)) not in bad)
    for decoder in ("pil", "simplejpeg"):  # every dataset built from the view reads every item
        assert len(list(Pipeline(decoder).dataset(view))) == 36
    monkeypatch.setattr(screen, "pil_loader", lambda path: pytest.fail("a cached screen decodes nothing"))
    assert screen_tree(tree, cache_dir=tmp_path / "cache") == (view, screening)
    (tree / bad[0]).unlink()  # the tree changed: screened again, and its older view removed
    monkeypatch.undo()
    newer, again = screen_tree(tree, cache_dir=tmp_path / "cache")
    assert again.checked == 39 and len(again.skipped) == 3
    assert [p.parent for p in (tmp_path / "cache" / "screened").glob("*/screening.json")] == [newer.parent]


def test_without_the_option_every_decoder_names_the_entry_points_option(damaged: tuple[Path, list[str]],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    tree, bad = damaged
    dataset = LFWDataset(tree)
    position = next(i for i in range(len(dataset)) if path_at(dataset.paths, i).endswith(bad[0]))
    monkeypatch.setenv(SKIP_OPTION_ENV, SKIP_HINT)  # as the suite's plugin sets it
    with pytest.raises(CorruptImageError, match="use --bench-skip-bad-images \\(make: SKIP_BAD_IMAGES=1\\)"):
        dataset[position]
    with pytest.raises(CorruptImageError, match="use --bench-skip-bad-images"):
        list(Pipeline("simplejpeg").dataset(tree))
    monkeypatch.delenv(SKIP_OPTION_ENV)
    with pytest.raises(CorruptImageError, match="use on_error='skip'"):  # the dataset's own argument otherwise
        dataset[position]


def unreadable_to_pil(tree: Path, bad: list[str]) -> list[str]:
    """The damaged files a plain PIL loader (torchvision's ImageFolder) fails on: Pillow reads PNG data whatever
    the file is called, so a user's ImageFolder reads that one."""
    return [name for name in bad if not _reads(tree / name)]


def _reads(path: Path) -> bool:
    try:
        with Image.open(path) as image:
            image.convert("RGB")
    except OSError:
        return False
    return True


def test_a_user_dataset_is_read_through_its_readable_items(damaged: tuple[Path, list[str]],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tree, bad = damaged
    monkeypatch.setenv("LFW_ROOT", str(tree))
    readable = user_dataset("examples.imagefolder:faces", skip_unreadable=True)
    unreadable = unreadable_to_pil(tree, bad)
    assert isinstance(readable, ReadableItems) and len(readable) == 40 - len(unreadable) == 37
    assert [name for name, _ in readable.screening.skipped] == unreadable
    assert all(readable[i][0].shape == (3, 250, 250) for i in range(len(readable)))


def run_suite(tree: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", "-q",
                           "--bench-profile", "smoke", "-k", "bs16", "--bench-skip-bad-images",
                           f"--benchmark-json={out}", *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "LFW_ROOT": str(tree), "LFW_CACHE": str(out.parent / "cache")})


@pytest.mark.slow
@pytest.mark.parametrize("dataset", [[], ["--bench-dataset", "examples.imagefolder:faces"]], ids=["lfw", "user"])
def test_the_suite_skips_records_and_reports_them(damaged: tuple[Path, list[str]], tmp_path: Path,
                                                 dataset: list[str]) -> None:
    tree, bad = damaged
    skipped = unreadable_to_pil(tree, bad) if dataset else bad  # LFW's loader also refuses PNG data
    proc = run_suite(tree, tmp_path / "run.json", *dataset)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    run = load_run(tmp_path / "run.json")
    assert run.skipped_images == (len(skipped), tuple(skipped))
    assert run.machine["dataset_files"] == 40 - len(skipped)
    text = find(run).skipped_images or ""
    assert text.startswith(f"{len(skipped)} unreadable images (") and skipped[0] in text


def test_the_gate_refuses_a_run_that_skipped_images_against_one_that_did_not(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]
                                                                             ) -> None:
    doc = json.loads(FIXTURE.read_text())
    doc["machine_info"].update({K.SKIPPED_IMAGES: 50, K.SKIPPED_IMAGE_FILES: ["A/A_0001.jpg", "B/B_0003.jpg"]})
    skipped = tmp_path / "skipped.json"
    skipped.write_text(json.dumps(doc))
    out = ["--summary-md", str(tmp_path / "gate.md"), "--verdict-json", str(tmp_path / "verdict.json")]
    assert gate_main([str(FIXTURE), str(skipped), *out]) == EXIT_INCOMPLETE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: the current run skipped 50 unreadable images (A/A_0001.jpg, "
                                               "B/B_0003.jpg, ...) and the baseline 0: they read different images")
    assert json.loads((tmp_path / "verdict.json").read_text())["exit_code"] == EXIT_INCOMPLETE
    assert gate_main([str(skipped), str(FIXTURE), *out]) == EXIT_INCOMPLETE  # either way round
    assert gate_main([str(skipped), str(skipped), *out]) == 0  # as many skipped on both sides: compared
    report = Report(load_run(skipped), tmp_path / "report")
    said = "50 unreadable images (A/A_0001.jpg, B/B_0003.jpg, ...) were left out"
    assert f"SKIPPED IMAGES: {said}" in console(report) and f"**Skipped images:** {said}" in markdown_page(report)
