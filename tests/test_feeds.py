"""Accelerators fed (lfw.diagnose.feeds): the closed form against the simulator, the table from a run, the report's
item, and ``python -m lfw.diagnose --pipeline`` (bad input in one line, a tiny measured run).

Everything but the measured runs is arithmetic and simulation (milliseconds); the measured ones read the 40-image
synthetic tree of ``tests/conftest.py`` in batches of 8.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lfw.cli.sections import Bullets, Table, markdown
from lfw.diagnose.__main__ import main
from lfw.diagnose.feeds import (
    AU_TARGET,
    Feed,
    closed_form_fed,
    fed,
    feed_of,
    feeds_table,
    simulated_au,
    throughput_bound,
)
from lfw.diagnose.predict import COMPUTE_BOUND_AU
from lfw.diagnose.training import measure_pipeline, pipeline_setup, sleep_step, spec_of
from lfw.errors import LFWError
from lfw.report.accelerators import TITLE, accelerators_section
from lfw.report.html_page import html_page
from lfw.report.page import findings_section, markdown_page
from lfw.report.render import Report
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN


def _near_whole(x: float, margin: float = 0.05) -> bool:
    """A bound this close to a whole number sits on the threshold, where a simulated start-up may tip it."""
    return abs(x - round(x)) < margin


def test_the_threshold_is_diagnose_s() -> None:
    assert AU_TARGET == COMPUTE_BOUND_AU


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("rate", [900.0, 2000.0, 3700.0, 12_000.0])
@pytest.mark.parametrize("step_ms", [10.0, 25.0, 50.0, 100.0])
def test_closed_form_and_simulator_agree_on_constant_loads(workers: int, rate: float, step_ms: float) -> None:
    """No variance, no hand-over: the simulated N is the rate alone's floor(R x step / (64 x 0.9))."""
    step = step_ms / 1e3
    assert not _near_whole(rate * step / (64 * AU_TARGET))  # the grid keeps off the threshold
    expected = math.floor(rate * step / (64 * AU_TARGET))
    assert throughput_bound(rate, step) == expected
    assert closed_form_fed(Feed(rate, workers), step) == expected
    assert fed(Feed(rate, workers), step) == expected


@pytest.mark.parametrize(("workers", "handover_ms"), [(0, 0.0), (2, 2.0), (2, 5.0)])
def test_hand_over_and_main_loop_loads_bound_n_as_the_closed_form_says(workers: int, handover_ms: float) -> None:
    """With workers the hand-over caps AU at step / (step + hand-over); without, load and step take turns."""
    for rate in (1500.0, 3500.0, 8000.0):
        for step_ms in (25.0, 50.0, 100.0, 200.0):
            feed = Feed(rate, workers, handover_s=handover_ms / 1e3)
            step = step_ms / 1e3
            serial = feed.load_s if workers == 0 else feed.handover_s
            bounds = [step * (1 - AU_TARGET) / (AU_TARGET * serial)]
            if workers:
                bounds.append(rate * step / (64 * AU_TARGET))
            if _near_whole(min(bounds)):
                continue
            assert fed(feed, step) == closed_form_fed(feed, step) == math.floor(min(bounds))


def test_n_grows_with_step_time_and_rate() -> None:
    steps = [0.01, 0.025, 0.05, 0.1, 0.2]
    rates = [800.0, 1600.0, 3200.0, 6400.0]
    for rate in rates:
        by_step = [fed(Feed(rate, 2, handover_s=0.002, load_cv=0.15), s) for s in steps]
        assert by_step == sorted(by_step) and by_step[-1] > by_step[0]
    for step in steps[2:]:
        by_rate = [fed(Feed(r, 2, load_cv=0.15), step) for r in rates]
        assert by_rate == sorted(by_rate) and by_rate[-1] > by_rate[0]


def test_variance_and_a_short_run_move_the_simulated_au() -> None:
    """What the closed form leaves out: uneven loads cost AU near balance; the simulated AU stays in [0, 1]."""
    feed = Feed(3600.0, 2)
    steady = simulated_au(feed, 0.05, 3)
    uneven = simulated_au(Feed(3600.0, 2, load_cv=0.4), 0.05, 3)
    assert 0.0 < uneven < steady <= 1.0
    assert 0.0 < simulated_au(feed, 0.05, 3, batches=30) <= 1.0


@pytest.mark.parametrize("bad", [
    lambda: fed(Feed(0.0, 2), 0.05),
    lambda: fed(Feed(math.nan, 2), 0.05),
    lambda: fed(Feed(1000.0, -1), 0.05),
    lambda: fed(Feed(1000.0, 2), 0.0),
    lambda: fed(Feed(1000.0, 2, batch=0), 0.05),
    lambda: fed(Feed(1000.0, 2, load_cv=-0.1), 0.05),
    lambda: fed(Feed(1000.0, 2), 0.05, target=1.0),
    lambda: simulated_au(Feed(1000.0, 2), 0.05, 0),
], ids=["rate0", "rate-nan", "workers", "step0", "batch0", "cv", "target", "n0"])
def test_impossible_figures_are_one_line_errors(bad: object) -> None:
    with pytest.raises(LFWError) as err:
        bad()  # type: ignore[operator]
    assert "\n" not in str(err.value)


def _decoder(label: str, workers: int, rate: float, *, storage: str = "files", main_share: float = 0.05,
             cpu_ms: float = 0.9, cv: float = 0.05) -> Case:
    info = {K.IMAGES_PER_S: rate, K.IMAGES_PER_S_CV: cv, K.MAIN_CPU_SHARE: 1.0 if workers == 0 else main_share,
            K.CPU_MS_PER_IMAGE: cpu_ms, KN.DECODER.key: "simplejpeg", K.STORAGE: storage, K.THREADS: 0,
            K.OUTPUT: "uint8", K.PIL_CEILING_SHARE: rate / 2500,
            K.CONFIG: {"batch_size": 64, "num_workers": workers, "prefetch_factor": None}}
    return Case(f"test_decoders[{label}]", f"b::test_decoders[{label}]", "decoders", {"pipeline": label}, (0.4,),
                info)


def _run(*cases: Case) -> Run:
    other = Case("test_workers[workers2-none]", "b::test_workers[workers2-none]", "workers-transform",
                 {"num_workers": 2, "transform": "none"}, (0.5,), {K.IMAGES_PER_S: 1200.0})
    return Run(Path("synthetic.json"), {"usable_cores": 2}, (other, *cases))


SYNTHETIC = _run(_decoder("pil-w2", 2, 2300.0), _decoder("simplejpeg-w2", 2, 3600.0),
                 _decoder("simplejpeg-w0", 0, 2700.0), _decoder("memmap-w0", 0, 60_000.0, storage="memmap"))


def test_the_table_reads_each_decoders_case_of_a_run() -> None:
    table = feeds_table(SYNTHETIC)
    assert table is not None
    assert [r.label for r in table.rows] == ["memmap-w0", "simplejpeg-w2", "simplejpeg-w0", "pil-w2"]  # by rate
    by = {r.label: r for r in table.rows}
    sj = by["simplejpeg-w2"]
    assert sj.feed.workers == 2 and sj.feed.prefetch_factor == 2 and sj.feed.load_cv == pytest.approx(0.05)
    assert sj.feed.handover_s == pytest.approx(0.05 * 0.9 * 64 / 1e3)  # main CPU per image x batch
    assert by["simplejpeg-w0"].feed.handover_s == 0.0  # without workers the load holds the main loop's work
    assert not by["memmap-w0"].decodes and all(r.decodes for r in table.rows if r.label != "memmap-w0")
    for row in table.rows:
        assert list(row.fed) == sorted(row.fed)  # more time per step, more accelerators
        assert all(f <= t for f, t in zip(row.fed, row.throughput, strict=True))
    # 3600 images/s at 50 ms: the rate alone feeds 3; the 2.9 ms hand-over holds it to 1
    assert table.steps_ms[2] == 50.0 and sj.throughput[2] == 3 and sj.fed[2] == 1
    assert table.best(50.0) is sj  # the memmap reference is never the answer
    assert by["simplejpeg-w0"].fed[:3] == (0, 0, 0)
    assert feeds_table(_run()) is None
    with pytest.raises(LFWError):
        table.column(33.0)


def test_feed_of_a_case_without_a_rate_is_none() -> None:
    case = _decoder("pil-w2", 2, 2300.0)
    assert feed_of(Case(case.name, case.fullname, case.group, case.params, case.seconds, {})) is None


def test_the_report_puts_the_table_right_after_the_decoders_verdict(tmp_path: Path) -> None:
    [item] = accelerators_section(SYNTHETIC)
    assert item.text.startswith(f"**{TITLE}:** at 50 ms per step, `simplejpeg-w2` feeds **1 accelerator**")
    [table] = item.blocks
    assert isinstance(table, Table) and table.header == ("pipeline", "images/s", "10 ms", "25 ms", "50 ms", "100 ms")
    assert any(row[0] == "`memmap-w0` (decode-free reference)" for row in table.rows)
    [found] = findings_section(Report(SYNTHETIC, tmp_path)).blocks
    assert isinstance(found, Bullets)
    fastest = next(i for i, line in enumerate(found.items) if str(line).startswith("**Fastest decode pipeline:**"))
    assert found.items[fastest + 1] == item
    assert "\n  | pipeline | images/s | 10 ms | 25 ms | 50 ms | 100 ms |\n" in markdown([found])
    assert accelerators_section(_run()) == []


def test_both_pages_show_one_simulation_of_the_accelerators_fed(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is simulated (hundreds of simulated loops) once per report, not once per page."""
    import lfw.diagnose.feeds as feeds

    calls: list[object] = []
    monkeypatch.setattr(feeds, "feeds_table", lambda run: calls.append(run) or feeds_table(run))
    report = Report(SYNTHETIC, tmp_path)
    assert markdown_page(report).count(TITLE) == 1 and html_page(report).count("Accelerators fed at AU") == 1
    assert len(calls) == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--pipeline", "no-such-pipeline"], "unknown pipeline 'no-such-pipeline'"),
    (["--pipeline", "workers2-none"], "is a workers-transform case, not a decode pipeline"),
    (["--pipeline", "decoder=nope"], "unknown decoder 'nope'"),
    (["--pipeline", "decoder=pil,threads=two"], "threads must be a whole number"),
    (["--pipeline", "colour=red"], "is not one of decoder=..."),
    (["--pipeline", "simplejpeg-w2", "--workers", "4"], "contradicts case simplejpeg-w2"),
    (["--pipeline", "pil-w0", "--transform", "uint8"], "not both"),
    (["--pipeline", "pil-w0", "--simulate", "--load-ms", "50"], "--pipeline is measured"),
], ids=["unknown", "other-group", "decoder", "threads", "key", "workers", "transform", "simulate"])
def test_bad_pipeline_is_one_line_and_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith("error: ") and "\n" not in err and message in err


def test_a_case_s_spec_names_the_same_pipeline() -> None:
    setup = pipeline_setup("simplejpeg-w2t2")
    assert spec_of(setup.pipeline) == "decoder=simplejpeg,threads=2"
    again = pipeline_setup(spec_of(setup.pipeline), workers=2)
    assert again.pipeline == setup.pipeline and again.config.num_workers == 2 and again.label == "simplejpeg-t2-w2"


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tar shards and memmaps go to a temporary cache, never the benchmarks' one."""
    monkeypatch.setenv("LFW_CACHE", str(tmp_path / "cache"))


def test_diagnose_measures_a_decoders_case(tiny_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--path", str(tiny_tree), "--pipeline", "simplejpeg-t2", "--batch-size", "8", "--batches", "4",
               "--step-ms", "2", "--no-chart", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "pipeline simplejpeg-t2, 0 workers" in out and "accelerator utilization" in out


@pytest.mark.parametrize("name", ["pil-tar-w2", "decoder=pil,storage=memmap"], ids=["tar", "memmap-spec"])
def test_every_storage_is_stamped_by_the_worker_that_loaded_it(tiny_tree: Path, private_cache: None,
                                                               name: str) -> None:
    """Tar shards are iterable (a batch starts at its first item; 32 images make one shard, so one worker
    reads); a memmap keeps its own batched read."""
    setup = pipeline_setup(name, workers=None if "=" not in name else 1, batch_size=8)
    m = measure_pipeline(setup, tiny_tree, 4, sleep_step(0.002), progress=False)
    assert m.result.images == 32 and m.extra["pipeline"] == setup.label
    workers = setup.config.num_workers
    for r in m.records:
        assert 0 <= r.worker < workers and r.load > 0 and r.load_end <= r.got + 2e-3
    assert {r.worker for r in m.records} == ({0} if "tar" in name else set(range(workers)))
    assert 0.0 < m.accelerator_utilization <= 1.0


@pytest.mark.parametrize("argv", [["--pipeline", "nope"], ["--step-ms", "0"], ["--batches", "1"],
                                  ["--passes", "0"], ["--step-ms", "fast"]],
                         ids=["pipeline", "step", "batches", "passes", "not-a-number"])
def test_the_check_s_bad_input_is_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from tools.feeds_check import main as check_main

    rc = check_main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error: ") and "\n" not in err
