"""The report: charts hold the measured series, recommendations follow the paired evidence, bad input fails
in one line.

Fixture: ``quick_run.json``, a real quick-profile run with every group (see ``fixtures/make_fixtures.py``);
"slower" runs are copies with the heavy transform's efficiency halved. Recommendation rules are checked on
small constructed cases whose per-round rates say exactly what the evidence is.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from statistics import mean, stdev
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from PIL import Image

from lfw.cli.figures import save_figure
from lfw.gate import Thresholds, compare_runs
from lfw.gate.summary import charts_drawn
from lfw.gate.verdict import Verdict, file_sha256
from lfw.gate.verdict_build import two_file_verdict
from lfw.report import Report, build_report, findings, load_run, write_summary
from lfw.report.__main__ import main
from lfw.report.accelerators import accelerators_section
from lfw.report.chart_compare import VERDICT_COLOURS, compare_chart
from lfw.report.chart_knobs import batch_size_chart, workers_chart
from lfw.report.chart_memory import leak_chart, timeline_chart
from lfw.report.chart_remote import remote_chart
from lfw.report.console import console
from lfw.report.peers import peer_rows
from lfw.report.pipelines import PipelineVerdict, pipeline_verdict, reference_for
from lfw.report.remote import remote_verdict
from lfw.results import Case, Run, model
from lfw.results.recommend import recommend, recommendations

FIXTURE = Path(__file__).parent / "fixtures" / "quick_run.json"
Capture = pytest.CaptureFixture[str]


def slower_heavy(doc: dict[str, Any]) -> dict[str, Any]:
    """The run with the heavy transform at half its efficiency, one case dropped and one renamed (new)."""
    out = copy.deepcopy(doc)
    for b in out["benchmarks"]:
        if b["name"].endswith("-heavy]"):
            info = b["extra_info"]
            info["efficiency"] /= 2
            info["efficiency_rounds"] = [v / 2 for v in info["efficiency_rounds"]]
    out["benchmarks"] = [b for b in out["benchmarks"] if b["name"] != "test_data_wait[step50ms]"]
    moved = next(b for b in out["benchmarks"] if b["name"] == "test_prefetch[prefetch8]")
    moved["name"] = moved["name"].replace("prefetch8", "prefetch16")
    moved["fullname"] = moved["fullname"].replace("prefetch8", "prefetch16")
    return out


def gate_verdict(base: Run, current: Run) -> Verdict:
    """The verdict the gate writes for ``current`` against ``base`` (as ``python -m lfw.gate`` builds it)."""
    report = compare_runs(base, current)
    return two_file_verdict(report, base, current, Thresholds(), exit_code=report.exit_code)


@pytest.fixture(scope="module")
def full_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """Baseline + a slower current run, rendered once (PNG only, to keep the suite fast)."""
    tmp = tmp_path_factory.mktemp("report")
    current = tmp / "current.json"
    current.write_text(json.dumps(slower_heavy(json.loads(FIXTURE.read_text()))))
    base, run = load_run(FIXTURE), load_run(current)
    report = build_report(run, tmp / "out", base, formats=("png",), verdict=gate_verdict(base, run))
    write_summary(report)
    return report


def errorbar_series(ax: Axes) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """label -> (x, y, half error-bar length) of every errorbar container on ``ax``."""
    series = {}
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            data_line, _, bar_collections = container.lines
            halves = [abs(seg[1][1] - seg[0][1]) / 2 for seg in bar_collections[0].get_segments()]
            series[container.get_label().split(" (")[0]] = (list(data_line.get_xdata()),
                                                             list(data_line.get_ydata()), halves)
    return series


def test_workers_chart_draws_one_line_per_transform_with_sd_error_bars() -> None:
    run = load_run(FIXTURE)
    fig = workers_chart(run, recommendations(run))
    assert fig is not None
    ax_seconds, ax_rate = fig.axes
    raw = [b for b in json.loads(FIXTURE.read_text())["benchmarks"] if b["group"] == "workers-transform"]
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


def rotated(workers: int, rates: list[float], rotation: str = "r1") -> Case:
    """A workers-transform case of one rotation with the given per-round images/s."""
    info = {"images_per_s": sorted(rates)[len(rates) // 2], "images_per_s_rounds": rates, "transform": "none",
            "efficiency": 0.5, "rotation": {"group": "workers-transform", "seed": rotation, "rounds": len(rates),
                                             "members": ["a"]}}
    return Case(f"test_workers_transform[workers{workers}-none]", f"x::test_workers_transform[workers{workers}-none]",
                "workers-transform", {"num_workers": workers, "transform": "none"}, (1.0,) * len(rates), info)


BEST = [1000.0, 1100.0, 900.0, 1050.0, 950.0]


def test_the_fewest_workers_within_five_percent_with_evidence() -> None:
    """Two workers are clearly faster than none; four are no faster than two: recommend two."""
    rec = recommend("none", [rotated(0, [v * 0.70 for v in BEST]), rotated(2, BEST),
                             rotated(4, [v * f for v, f in zip(BEST, (0.99, 1.0, 0.98, 0.99, 1.0), strict=True)])])
    assert rec is not None and rec.workers == 2 and rec.paired
    assert [c.standing for c in rec.candidates] == ["worse", "best", "within"]
    assert rec.candidates[0].ratio is not None and rec.candidates[0].ratio.estimate == pytest.approx(0.70)
    assert rec.verdict() == "2" and "0: 0.70 [0.70, 0.70]" in rec.evidence()


def test_no_clear_winner_names_the_configurations_the_evidence_does_not_separate() -> None:
    straddling = [v * f for v, f in zip(BEST, (0.90, 1.01, 0.93, 0.99, 0.96), strict=True)]
    rec = recommend("none", [rotated(0, straddling), rotated(2, BEST)])
    assert rec is not None and rec.workers is None and rec.tied == [0, 2]
    assert rec.verdict() == "no clear winner (0, 2)"


def test_unpaired_cases_fall_back_to_medians_and_say_so() -> None:
    rec = recommend("none", [rotated(0, [990.0] * 5, "r1"), rotated(2, [1000.0] * 5, "r2")])
    assert rec is not None and rec.workers == 0 and not rec.paired


def test_every_transform_of_the_real_run_gets_a_verdict_with_its_interval(full_report: Report) -> None:
    text = console(full_report)
    lines = text.splitlines()
    start = lines.index("recommended num_workers (paired ratio to the best per worker count):")
    block = lines[start + 1:start + 5]
    assert [line.split(":")[0].strip() for line in block] == ["none", "simple", "heavy", "uint8"]
    assert all("best" in line and "[" in line for line in block)
    assert lines[-1].startswith(f"report: {full_report.readme}")


def test_knob_chart_draws_paired_ratios_beside_the_rates() -> None:
    fig = batch_size_chart(load_run(FIXTURE))
    assert fig is not None and len(fig.axes) == 3
    ratio_axis = fig.axes[2]
    assert "ratio to 64" in ratio_axis.get_ylabel() and "87.5% interval" in ratio_axis.get_ylabel()
    [(xs, ys, _)] = errorbar_series(ratio_axis).values()
    assert xs == [16, 64, 256] and ys[1] == pytest.approx(1.0)


def test_gate_verdicts_flag_the_slowed_transform(tmp_path: Path) -> None:
    base = load_run(FIXTURE)
    current_path = tmp_path / "current.json"
    current_path.write_text(json.dumps(slower_heavy(json.loads(FIXTURE.read_text()))))
    current = load_run(current_path)
    verdict = gate_verdict(base, current)
    labels = {v.case.rpartition("[")[2].rstrip("]"): v.label for v in verdict.cases}
    assert labels["workers0-heavy"] == labels["workers2-heavy"] == "regressed"
    assert labels["workers2-none"] == "unchanged" and labels["prefetch16"] == "new"
    assert labels["step50ms"] == "missing" and verdict.exit_code == 1
    fig = compare_chart(base, current, list(verdict.cases))
    ticks = {t.get_text(): t.get_color() for t in fig.axes[0].get_yticklabels()}
    assert ticks["workers2-heavy: regressed -50%"] == VERDICT_COLOURS["regressed"]
    assert "efficiency" in fig.axes[0].get_xlabel()


def test_full_report_writes_valid_images_for_every_group(full_report: Report) -> None:
    stems = {spec.stem for spec, _ in full_report.charts}
    assert {"workers", "batch-size", "prefetch", "start-method", "efficiency", "memory-timeline", "memory-growth",
            "leak", "compare", "group-index", "group-persistent-workers", "group-data-wait", "group-cost"} <= stems
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
    assert "**Recommended num_workers** (the knee" in page and "87.5% signed-rank interval" in page
    assert "of the paired ratio to the group's reference case, median" in page
    assert "**Leak check** `test_leak[control-workers2]`" in page and ": **leak**" in page
    regressions = next(line for line in page.splitlines() if "Regressions against the baseline" in line)
    assert "workers2-heavy" in regressions and "workers2-none]" not in regressions
    assert "| `test_prefetch[prefetch16]` | new |" in page
    assert "| `test_data_wait[step50ms]` | missing |" in page


def test_the_report_lists_the_charts_it_drew_for_the_gates_page(full_report: Report) -> None:
    """``charts.json`` names every chart drawn, for the run's bytes: what the gate's page links, and only for it."""
    drawn = [files[0] for _, files in full_report.charts]
    assert charts_drawn(full_report.out, file_sha256(full_report.run.path)) == drawn
    assert charts_drawn(full_report.out, file_sha256(FIXTURE)) == []  # the baseline's charts were not drawn


def test_a_run_saved_as_the_chart_list_is_never_overwritten(tmp_path: Path, capsys: Capture) -> None:
    run = tmp_path / "charts.json"
    shutil.copy(FIXTURE, run)
    assert main([str(run), "--out", str(tmp_path)]) == 2
    assert "would overwrite its input" in capsys.readouterr().err and run.read_bytes() == FIXTURE.read_bytes()


def test_memory_charts_draw_the_index_timelines_and_the_leak_epochs() -> None:
    run = load_run(FIXTURE)
    fig = timeline_chart(run)
    assert fig is not None and len(fig.axes[0].get_lines()) == 8  # 4 index cases x (PSS, RSS)
    leak = leak_chart(run)
    assert leak is not None and any("control" in line.get_label() for line in leak.axes[0].get_lines())


def test_svg_is_written_beside_png(tmp_path: Path) -> None:
    paths = save_figure(workers_chart(load_run(FIXTURE), ()), tmp_path, "workers")
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert "<svg" in paths[1].read_text()[:2000]


def test_cli_reads_the_newest_autosave_and_leaves_inputs_untouched(tmp_path: Path, capsys: Capture) -> None:
    storage = tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit"
    storage.mkdir(parents=True)
    older, newer = storage / "0001_aaa_20261122.json", storage / "0002_bbb_20261122.json"
    shutil.copy(FIXTURE, older)
    doc = json.loads(FIXTURE.read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["group"] == "workers-transform"]
    newer.write_text(json.dumps(doc))
    os.utime(older, (1, 1))
    before = newer.read_bytes()
    out = tmp_path / "reports" / "nested"
    assert main(["--storage", str(tmp_path / ".benchmarks"), "--out", str(out), "--format", "png"]) == 0
    assert newer.read_bytes() == before
    page = (out / "README.md").read_text()
    assert "0002_bbb" in page and "skipped, this run has no group 'batch-size'" in page
    assert str(out / "README.md") in capsys.readouterr().out


def counted(monkeypatch: pytest.MonkeyPatch, *originals: Callable[..., Any]) -> dict[str, int]:
    """Calls of each of ``originals`` by name, counted from now on: every module of the report and the results that
    holds one gets a counting one in its place."""
    by_name = {f.__name__: f for f in originals}
    calls = dict.fromkeys(by_name, 0)

    def counting(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return by_name[name](*args, **kwargs)
        return call

    for module in [m for n, m in sys.modules.items() if n.startswith(("lfw.report", "lfw.results"))]:
        for name, original in by_name.items():
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, counting(name))
    return calls


def report_of_workers_group(tmp_path: Path) -> Path:
    """``main`` on the fixture's workers group alone (PNG only); the output folder."""
    run = tmp_path / "run.json"
    doc = json.loads(FIXTURE.read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["group"] == "workers-transform"]
    run.write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert main([str(run), "--out", str(out), "--format", "png"]) == 0
    assert (out / "README.md").is_file() and (out / "index.html").is_file()
    return out


def test_a_report_finds_its_headline_numbers_and_parses_its_run_once(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary page, the HTML page and the console show one :class:`~lfw.report.findings.Findings`, found
    once, of the run parsed once: every module of the report and the results that holds ``find`` or
    ``parse_run`` gets a counting one."""
    calls = counted(monkeypatch, findings.find, model.parse_run)
    report_of_workers_group(tmp_path)
    assert calls == {"find": 1, "parse_run": 1}


def test_a_report_derives_its_rows_once_for_every_page_and_chart(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The recommendations (the workers chart's rings, both pages, the console), the peers' rows (their chart, both
    pages, the console), the pipeline, remote and accelerators findings are each derived once per report."""
    calls = counted(monkeypatch, recommendations, peer_rows, pipeline_verdict, remote_verdict, accelerators_section)
    report_of_workers_group(tmp_path)
    assert calls == dict.fromkeys(calls, 1)


def write(path: Path, content: object) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def no_data_run(tmp_path: Path) -> Path:
    doc = json.loads(FIXTURE.read_text())
    del doc["benchmarks"][3]["stats"]["data"]
    return write(tmp_path / "no_data.json", doc)


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: write(tmp / "bad.json", "{not json"), "invalid JSON"),
    (lambda tmp: write(tmp / "list.json", [1, 2]), "no 'benchmarks' list"),
    (lambda tmp: write(tmp / "nomachine.json", {"benchmarks": [{}]}), "no 'machine_info'"),
    (lambda tmp: write(tmp / "empty.json", {"benchmarks": [], "machine_info": {}}), "no benchmark cases"),
    (no_data_run, "--benchmark-save-data"),
    (lambda tmp: tmp / "missing.json", "not found"),
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
    assert main([str(FIXTURE)] * 3) == 2
    assert "give one run, or a baseline and a current run" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main([str(FIXTURE), "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_usage_errors_are_one_line(capsys: Capture) -> None:
    assert main(["--format", "gif"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --format") and err.endswith("--help)\n") and err.count("\n") == 1


def test_memory_timelines_are_written_for_mprof_and_read_back_by_it(full_report: Report) -> None:
    import mprof  # memory-profiler's own reader, the one `mprof plot` uses

    names = sorted(p.name for p in full_report.mprofiles)
    assert "test_memory_index-list-workers2.dat" in names
    path = next(p for p in full_report.mprofiles if p.name == "test_memory_index-list-workers2.dat")
    content = mprof.read_mprofile_file(str(path))
    case = next(c for c in load_run(FIXTURE).cases if c.short_name == "test_memory_index[list-workers2]")
    timeline = case.extra["timeline"]
    assert content["mem_usage"] == pytest.approx(timeline["pss"], abs=1e-3)
    assert content["timestamp"] == pytest.approx(timeline["t"], abs=1e-4)
    assert [m for m, _ in content["children"]["1"]] == pytest.approx([w for w in timeline["worker_uss"] if w > 0],
                                                                      abs=1e-3)
    assert "process-tree PSS" in content["cmd_line"]
    assert "mprof plot" in full_report.readme.read_text()


def pipeline(label: str, workers: int, threads: int, rate: float, cpu_ms: float, utilization: float,
             decoder: str = "simplejpeg") -> Case:
    info = {"images_per_s": rate, "cpu_ms_per_image": cpu_ms, "cpu_utilization": utilization, "usable_cores": 2,
            "decoder": decoder, "storage": "files", "threads": threads, "output": "uint8", "output_size": None,
            "pil_ceiling_share": rate / 2000, "pil_ceiling_images_per_s": 2000.0, "memmap_ceiling_share": 0.05,
            "memmap_ceiling_images_per_s": rate / 0.05}
    return Case(f"test_decoders[{label}]", f"x::test_decoders[{label}]", "decoders", {"pipeline": label},
                (1.0,), {**info, "config": {"num_workers": workers}})


@pytest.mark.parametrize(("best", "limit"), [
    (pipeline("simplejpeg-w2", 2, 0, 2300, 0.85, 0.95),  # the cores busy, and IPC costs CPU
     "the machine: 1.90 of the 2.00 cores the machine gave busy; +42% CPU per image over the same work alone (the "
     "hand-over"),
    (pipeline("simplejpeg-t2", 0, 2, 2300, 0.62, 0.70),
     "idle cores: 1.40 of the 2.00 cores the machine gave busy (the GIL between the decode threads)"),
    (pipeline("simplejpeg-w2", 2, 0, 3200, 0.61, 0.97), "the machine: 1.94 of the 2.00 cores the machine gave busy"),
    (pipeline("simplejpeg-w1", 1, 0, 1500, 0.62, 0.48), "the decoder: its 1 loading process busy (0.96 of the 2.00"),
])
def test_what_stops_the_fastest_pipeline_is_read_off_its_measurements(best: Case, limit: str) -> None:
    """Against the same decoder alone (0.60 ms of CPU per image, one core): the machine, idle cores or the decoder,
    with the extra CPU per image."""
    alone = pipeline("simplejpeg-w0", 0, 0, 1650, 0.60, 0.50)
    verdict = PipelineVerdict(best, 2, reference_for(best, [alone, best]))
    assert verdict.reference is alone and verdict.limit().startswith(limit)
    assert "memory bandwidth is not the limit" in verdict.sentence()


def test_the_decoders_and_remote_groups_get_their_charts_and_findings(full_report: Report) -> None:
    stems = {spec.stem for spec, _ in full_report.charts}
    assert {"decoders", "remote"} <= stems
    page = full_report.readme.read_text()
    assert "- **Fastest decode pipeline:** `" in page and "What stops it:" in page
    assert "- **Remote storage:** at 100 ms, `" in page and "of the best at 0 ms" in page
    assert "time to first batch" in page
    rates = full_report.run.group("remote")
    fig = remote_chart(full_report.run)
    assert fig is not None and len(fig.axes) == len({c.value("num_workers") for c in rates})


def test_mprof_timestamps_are_real_when_the_pass_recorded_its_start() -> None:
    """A pass's wall-clock start makes the .dat file's stamps real, so mprof plot's legend shows the run's date."""
    import dataclasses

    from lfw.report.mprofile import mprofile_text

    case = next(c for c in load_run(FIXTURE).cases if c.short_name == "test_memory_index[list-workers2]")
    start = 1_795_000_000.0  # a date in 2026
    timeline = {**case.extra["timeline"], "start_unix": start}
    text = mprofile_text(dataclasses.replace(case, extra={**case.extra, "timeline": timeline})) or ""
    stamps = [float(line.split()[2]) for line in text.splitlines() if line.startswith("MEM ")]
    assert stamps == pytest.approx([start + t for t in timeline["t"]], abs=1e-3)
    assert "unix time" in text.splitlines()[0]
