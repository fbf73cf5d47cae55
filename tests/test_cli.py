"""``python -m lfw``: the exercise's flags, its fixed bugs, and one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from lfw.__main__ import main
from tests.trees import first_image


def test_timing_passes_exactly_the_batches_asked_for(tiny_tree: Path, capsys) -> None:
    code = main(["-path_to_folder", str(tiny_tree), "-batch_size", "8", "-get_timing", "-batches_to_check", "3",
                 "-repetitions", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Timing over 3 batches (24 images), 2 repetitions" in out
    assert "images/s" in out and "+-" in out


def test_timing_caps_at_the_dataset_and_says_so(tiny_tree: Path, capsys) -> None:
    assert main(["--path_to_folder", str(tiny_tree), "--batch_size", "16", "--get_timing", "--repetitions", "1"]) == 0
    out = capsys.readouterr().out
    assert "only 3 batches of 16; timing 3 instead of 100" in out
    assert "Timing over 3 batches (40 images)" in out


def test_workers_default_to_zero_and_run(tiny_tree: Path, capsys) -> None:
    assert main(["-path_to_folder", str(tiny_tree), "-batch_size", "4", "-num_workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 workers" in out and "First batch: images (4, 3, 250, 250)" in out


def test_visualize_batch_writes_a_png(tiny_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "grid.png"
    assert main(["-path_to_folder", str(tiny_tree), "-visualize_batch", "-batch_size", "6", "-out", str(out)]) == 0
    with Image.open(out) as img:
        assert img.format == "PNG" and img.width > 200


@pytest.mark.parametrize(("args", "message"), [
    (["-batch_size", "0"], "batch size must be a positive integer"),
    (["-num_workers", "-2"], "num_workers must be 0"),
    (["-transform", "sepia"], "invalid choice: 'sepia'"),
    (["-batches_to_check", "0", "-get_timing"], "-batches_to_check must be a positive integer"),
    (["-no_such_flag"], "unrecognized arguments"),
])
def test_bad_flags_give_one_line_and_exit_2(tiny_tree: Path, capsys, args: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        code = main(["-path_to_folder", str(tiny_tree), *args])
        raise SystemExit(code)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_folders_give_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["-path_to_folder", str(tmp_path / "missing")]) == 2
    assert "LFW folder not found" in capsys.readouterr().err
    assert main(["-path_to_folder", str(tmp_path)]) == 2
    assert "empty" in capsys.readouterr().err


def test_corrupt_jpeg_in_a_worker_is_one_line(tree_copy: Path) -> None:
    first_image(tree_copy).write_bytes(b"\xff\xd8 truncated")
    proc = subprocess.run([sys.executable, "-m", "lfw", "-path_to_folder", str(tree_copy), "-num_workers", "1",
                           "-batch_size", "8", "-get_timing", "-repetitions", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    err_lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(err_lines) == 1 and "cannot decode image" in err_lines[0] and "Traceback" not in proc.stderr


def test_threads_default_to_one_as_the_benchmarks_pin_them(tiny_tree: Path, capsys) -> None:
    assert main(["-path_to_folder", str(tiny_tree), "-batch_size", "4"]) == 0
    assert "1 intra-op thread" in capsys.readouterr().out
    assert main(["-path_to_folder", str(tiny_tree), "-batch_size", "4", "-threads", "2"]) == 0
    assert "2 intra-op threads" in capsys.readouterr().out
    assert main(["-path_to_folder", str(tiny_tree), "-threads", "0"]) == 2
    assert "-threads must be 1 or more" in capsys.readouterr().err


def test_an_unwritable_image_format_is_refused_before_loading(tiny_tree: Path, tmp_path: Path, capsys) -> None:
    assert main(["-path_to_folder", str(tiny_tree), "-visualize_batch", "-out", str(tmp_path / "x.xyz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write a batch grid as 'x.xyz'") and ".png" in err and err.count("\n") == 1
    assert not (tmp_path / "x.xyz").exists()


@pytest.mark.needs_shm(64)
def test_mprof_records_the_timing_with_memory_profiler_for_mprof_plot(tiny_tree: Path, tmp_path: Path,
                                                                      capsys) -> None:
    import mprof  # memory-profiler's reader, the one `mprof plot` uses

    out = tmp_path / "timing.dat"
    code = main(["-path_to_folder", str(tiny_tree), "-batch_size", "8", "-num_workers", "2", "-get_timing",
                 "-batches_to_check", "4", "-repetitions", "2", "-mprof", str(out)])
    assert code == 0 and f"mprof plot {out}" in capsys.readouterr().out
    profile = mprof.read_mprofile_file(str(out))
    assert len(profile["mem_usage"]) >= 2 and min(profile["mem_usage"]) > 50  # MiB: a process that imported torch
    assert list(profile["timestamp"]) == sorted(profile["timestamp"])


@pytest.mark.parametrize(("flags", "message"), [
    (["-mprof", "x.dat"], "-mprof records the timing passes: use it with -get_timing"),
    (["-get_timing", "-mprof", "/nonexistent/x.dat"], "the folder /nonexistent does not exist"),
])
def test_mprof_misuse_is_one_line(tiny_tree: Path, capsys, flags: list[str], message: str) -> None:
    assert main(["-path_to_folder", str(tiny_tree), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
