"""The report: charts hold the measured series, the summary says the right things, bad input fails in one line.

Fixtures: ``run_workers.json`` is a real quick-profile run (workers-transform only); ``run_all_groups.json``
and ``run_all_slower.json`` are constructed with every planned group (see ``fixtures/make_fixtures.py``), the
second with the heavy transform 30% slower, one case dropped and one added.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from statistics import mean, median, stdev

import pytest
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from PIL import Image

from lfw.report import Report, build_report, load_run, write_summary
from lfw.report.__main__ import main
from lfw.report.chart_compare import VERDICT_COLOURS, compare_chart
from lfw.report.chart_memory import leak_chart, timeline, timeline_chart
from lfw.report.chart_workers import knees, workers_chart
from lfw.report.console import console
from lfw.report.figures import save_figure
from lfw.report.load import Case, Run
from lfw.report.stats import recommended_workers
from lfw.report.verdict import heuristic_judge

FIXTURES = Path(__file__).parent / "fixtures"
WORKERS_RUN = FIXTURES / "run_workers.json"
ALL_RUN = FIXTURES / "run_all_groups.json"
SLOWER_RUN = FIXTURES / "run_all_slower.json"
Capture = pytest.CaptureFixture[str]


@pytest.fixture(scope="module")
def full_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """Baseline + current with every group, rendered once (PNG only, to keep the suite fast)."""
    out = tmp_path_factory.mktemp("report")
    report = build_report(load_run(SLOWER_RUN), out, load_run(ALL_RUN), heuristic_judge, formats=("png",))
    write_summary(report)
    return report


def errorbar_series(ax: Axes) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """label -> (x, y, half error-bar length) of every errorbar container on ``ax``."""
    series = {}
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            data_line, _, bar_collections = container.lines
            halves = [abs(seg[1][1] - seg[0][1]) / 2 for seg in bar_collections[0].get_segments()]
            transform = container.get_label().split(" (")[0]  # the label may add "(N img/pass)"
            series[transform] = (list(data_line.get_xdata()), list(data_line.get_ydata()), halves)
    return series


def test_workers_chart_draws_one_line_per_transform_with_sd_error_bars() -> None:
    run = load_run(WORKERS_RUN)
    fig = workers_chart(run)
    assert fig is not None
    ax_seconds, ax_rate = fig.axes
    raw = json.loads(WORKERS_RUN.read_text())["benchmarks"]
    for ax, values in ((ax_seconds, lambda b: b["stats"]["data"]),
                       (ax_rate, lambda b: b["extra_info"]["images_per_s_rounds"])):
        series = errorbar_series(ax)
        assert sorted(series) == ["heavy", "none", "simple", "uint8"]
        for transform, (xs, ys, halves) in series.items():
            cases = sorted((b for b in raw if b["params"]["transform"] == transform),
                           key=lambda b: b["params"]["num_workers"])
            assert xs == [b["params"]["num_workers"] for b in cases]
            assert ys == pytest.approx([mean(values(b)) for b in cases])
            assert halves == pytest.approx([stdev(values(b)) for b in cases])
    assert "num_workers" in ax_rate.get_xlabel() and "images/s" in ax_rate.get_ylabel()
    assert "seconds per pass" in ax_seconds.get_ylabel()


def test_recommended_workers_is_the_knee_not_the_maximum() -> None:
    curve = {0: 500.0, 1: 900.0, 2: 1900.0, 4: 1950.0, 8: 1990.0}
    assert recommended_workers(curve) == 2  # 1900 is within 5% of 1990 (>= 1890.5)
    assert recommended_workers(curve, tolerance=0.01) == 8
    assert recommended_workers({0: 1000.0, 2: 990.0}) == 0
    assert recommended_workers({}) is None


def test_knees_per_transform_from_the_run() -> None:
    found = knees(load_run(WORKERS_RUN))
    assert {t: k for t, (k, _, _) in found.items()} == {"none": 0, "simple": 2, "heavy": 2, "uint8": 2}


def test_full_report_writes_valid_images_for_every_group(full_report: Report) -> None:
    stems = {spec.stem for spec, _ in full_report.charts}
    assert {"workers", "batch-size", "pin-memory", "prefetch", "start-method", "efficiency", "memory-timeline",
            "memory-growth", "leak", "compare", "group-index", "group-persistent-workers",
            "group-data-wait"} <= stems
    assert full_report.skipped == []
    for _, files in full_report.charts:
        for path in files:
            with Image.open(path) as image:
                image.verify()
            with Image.open(path) as image:
                width, height = image.size
            assert image.format == "PNG" and width >= 800 and 300 <= height <= 4000, path


def test_summary_page_names_findings_and_links_every_chart(full_report: Report) -> None:
    page = full_report.readme.read_text()
    for _, files in full_report.charts:
        assert f"]({files[0].name})" in page
    assert "![Seconds per pass and images/s against num_workers](workers.png)" in page
    assert "**Best configuration:** `test_workers_transform[workers2-uint8]`" in page
    assert "| heavy | **2** |" in page
    assert "+499.8 MiB over one pass in `test_memory_index[list-workers2]`" in page
    assert "`test_leak[control-workers2]`: slope_uss_mib_per_epoch +18.00" in page
    assert "(threshold 4 MiB/epoch): **leak**" in page
    cvs = [b["extra_info"]["images_per_s_cv"] for b in json.loads(SLOWER_RUN.read_text())["benchmarks"]]
    assert f"median {median(cvs):.1%}, worst {max(cvs):.1%}" in page
    regressions = next(line for line in page.splitlines() if "Regressions against the baseline" in line)
    assert all(f"workers{w}-heavy" in regressions for w in (0, 1, 2, 4)) and "none]" not in regressions
    assert "| `test_workers_transform[workers8-none]` | new |" in page
    assert "| `test_data_wait[step50ms]` | missing |" in page
    assert "| jpeg_library | libjpeg-turbo 3.2.0 |" in page


def test_console_table_ends_with_the_report_path(full_report: Report) -> None:
    text = console(full_report)
    assert text.splitlines()[0].split() == ["case", "group", "img/s", "CV", "eff", "TTFB", "ms", "PSS+", "MiB"]
    assert "recommended num_workers: none 2, simple 2, heavy 2, uint8 2" in text
    assert "4 regressed" in text
    assert text.splitlines()[-1].startswith(f"report: {full_report.readme}")


def test_compare_chart_colours_regressed_cases() -> None:
    base, current = load_run(ALL_RUN), load_run(SLOWER_RUN)
    verdicts = heuristic_judge(base, current)
    labels = {v.case.rpartition("[")[2].rstrip("]"): v.label for v in verdicts}
    assert labels["workers2-heavy"] == "regressed" and labels["workers2-none"] == "unchanged"
    assert labels["workers8-none"] == "new" and labels["step50ms"] == "missing"
    fig = compare_chart(base, current, verdicts)
    ticks = {t.get_text(): t.get_color() for t in fig.axes[0].get_yticklabels()}
    assert ticks["workers2-heavy: regressed -30%"] == VERDICT_COLOURS["regressed"]
    assert ticks["workers2-none +0%"] == "black"
    assert len(ticks) == len(current.cases) - 1  # the new case has no baseline to pair with


def test_gate_judge_agrees_on_the_slowed_cases() -> None:
    pytest.importorskip("lfw.gate")
    from lfw.report.verdict import gate_judge

    verdicts = gate_judge(load_run(ALL_RUN), load_run(SLOWER_RUN))
    regressed = sorted(v.case.rpartition("[")[2] for v in verdicts if v.label == "regressed")
    assert regressed == ["workers0-heavy]", "workers1-heavy]", "workers2-heavy]", "workers4-heavy]"]


def test_timeline_drops_the_absolute_clock_stamp_and_prefers_worker_uss() -> None:
    run = load_run(ALL_RUN)
    case = run.group("memory-index")[0]
    assert max(timeline(case)["t"]) < 10  # the 512 s "before" stamp is gone
    fig = timeline_chart(run)
    assert len(fig.axes[0].get_lines()) == 4 and fig.axes[1].get_title().startswith("Tree USS")
    with_workers = [Case(c.name, c.fullname, c.group, c.params, c.seconds,
                         {**c.extra, "timeline": {**c.extra["timeline"],
                                                  "worker_uss": [20.0] * len(c.extra["timeline"]["t"])}})
                    for c in run.group("memory-index")]
    fig = timeline_chart(Run(run.path, run.machine, with_workers))
    assert fig.axes[1].get_title() == "USS per worker"
    assert list(fig.axes[1].get_lines()[0].get_ydata()) == [20.0] * 8


def test_leak_chart_draws_every_epoch_series_with_its_slope() -> None:
    fig = leak_chart(load_run(ALL_RUN))
    series = {line.get_label(): line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")}
    assert len(series) == 6  # 2 cases x (tree USS, tree PSS, worker USS)
    control = series["case=control: worker_uss_mib_epochs (slope +9.00)"]
    assert list(control.get_xdata()) == [1, 2, 3, 4, 5]
    assert list(control.get_ydata()) == [0.0, 9.0, 18.0, 27.0, 36.0]  # growth since the first epoch


def test_svg_is_written_beside_png(tmp_path: Path) -> None:
    paths = save_figure(workers_chart(load_run(WORKERS_RUN)), tmp_path, "workers")
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert "<svg" in paths[1].read_text()[:2000]


def test_cli_reads_the_newest_autosave_and_leaves_inputs_untouched(tmp_path: Path, capsys: Capture) -> None:
    storage = tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit"
    storage.mkdir(parents=True)
    older, newer = storage / "0001_aaa_20261122.json", storage / "0002_bbb_20261122.json"
    shutil.copy(ALL_RUN, older)
    shutil.copy(WORKERS_RUN, newer)
    os.utime(older, (1, 1))
    before = newer.read_bytes()
    out = tmp_path / "reports" / "nested"
    assert main(["--storage", str(tmp_path / ".benchmarks"), "--out", str(out), "--format", "png"]) == 0
    assert newer.read_bytes() == before
    page = (out / "README.md").read_text()
    assert "0002_bbb" in page and "skipped, this run has no group 'batch-size'" in page
    stdout = capsys.readouterr().out
    assert "recommended num_workers: none 0, simple 2, heavy 2, uint8 2" in stdout
    assert stdout.rstrip().endswith("(3 charts)") and str(out / "README.md") in stdout


def write(path: Path, content: object) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def no_data_run(tmp_path: Path) -> Path:
    doc = json.loads(WORKERS_RUN.read_text())
    del doc["benchmarks"][3]["stats"]["data"]
    return write(tmp_path / "no_data.json", doc)


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: write(tmp / "bad.json", "{not json"), "is not JSON"),
    (lambda tmp: write(tmp / "list.json", [1, 2]), "not pytest-benchmark JSON: no 'benchmarks' list"),
    (lambda tmp: write(tmp / "nomachine.json", {"benchmarks": [{}]}), "no 'machine_info'"),
    (lambda tmp: write(tmp / "empty.json", {"benchmarks": [], "machine_info": {}}), "holds no benchmark results"),
    (no_data_run, "rerun with --benchmark-save-data"),
    (lambda tmp: tmp / "missing.json", "no such file"),
], ids=["not-json", "not-pytest-benchmark", "no-machine-info", "no-cases", "no-round-data", "missing-file"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: Capture, make: Callable[[Path], Path],
                                          message: str) -> None:
    assert main([str(make(tmp_path)), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_no_saved_runs_and_too_many_runs_are_one_line_errors(tmp_path: Path, capsys: Capture) -> None:
    assert main(["--storage", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 2
    assert "no saved runs under" in capsys.readouterr().err
    assert main([str(WORKERS_RUN)] * 3) == 2
    assert "give one run, or a baseline and a current run" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main([str(WORKERS_RUN), "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_usage_errors_are_one_line(capsys: Capture) -> None:
    assert main(["--format", "gif"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --format") and err.endswith("--help)\n") and err.count("\n") == 1
