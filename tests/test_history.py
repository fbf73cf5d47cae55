"""The history store and its change points, on synthetic histories made from the fixture run.

Each history is ten copies of ``tests/fixtures/quick_run.json`` (a real quick-profile run) on ten made-up
commits, every wall-clock and memory figure jittered as runs of one runner are (rates +-3%, memory +-2 MiB,
counts +-0.02%), with steps injected where a test says: the rules must name those commits and nothing else.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lfw.errors import LFWError
from lfw.gate.metrics import EFFICIENCY, INSTRUCTIONS, PSS_GROWTH
from lfw.history import history_report, load_history
from lfw.history.__main__ import main
from lfw.history.changepoints import exact_steps, noise_sigma, statistical_steps, welch_p
from lfw.history.store import JUDGED, history_record, read_store
from lfw.results import keys as K
from lfw.results import load_run

FIXTURE = Path(__file__).parent / "fixtures" / "quick_run.json"
RUNS = 10
START = datetime(2026, 11, 1, tzinfo=timezone.utc)
COST_CASE, EFFICIENCY_CASE = "cost/none", "workers-transform/workers2-none"


def sha(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def scale(extra: dict[str, Any], key: str, factor: float, add: float = 0.0) -> None:
    """Move a figure and its per-round values the same way (the history reads the median of the rounds)."""
    if isinstance(extra.get(key), int | float):
        extra[key] = extra[key] * factor + add
    if isinstance(extra.get(K.rounds(key)), list):
        extra[K.rounds(key)] = [v * factor + add for v in extra[K.rounds(key)]]


def make_runs(folder: Path, steps: dict[tuple[str, str], tuple[int, float]] | None = None, seed: int = 0) -> list[Path]:
    """Ten autosaved runs in ``folder`` (pytest-benchmark's names); ``steps`` maps (case key, metric key) to
    (first run on the new level, factor)."""
    base = json.loads(FIXTURE.read_text())
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(RUNS):
        doc = copy.deepcopy(base)
        when = START + timedelta(hours=i)
        doc["commit_info"] = {**doc["commit_info"], "id": sha(i), "time": when.isoformat(), "dirty": False}
        doc["datetime"] = (when + timedelta(minutes=30)).isoformat()
        for bench in doc["benchmarks"]:
            extra = bench["extra_info"]
            key = f"{bench['group']}/{bench['param']}"
            for metric in JUDGED:
                if metric.family == "cost":
                    scale(extra, metric.key, 1 + rng.uniform(-2e-4, 2e-4))
                elif metric.kind == "relative":
                    scale(extra, metric.key, 1 + rng.uniform(-0.03, 0.03))
                else:
                    scale(extra, metric.key, 1.0, rng.uniform(-2, 2))
                at, factor = (steps or {}).get((key, metric.key), (RUNS, 1.0))
                if i >= at:
                    scale(extra, metric.key, factor)
        path = folder / f"{i + 1:04d}_{sha(i)}_{when:%Y%m%d_%H%M%S}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


INJECTED = {(COST_CASE, INSTRUCTIONS.key): (6, 1.05), (EFFICIENCY_CASE, EFFICIENCY.key): (4, 0.6)}


def test_a_record_holds_the_gate_figures_the_commit_and_the_counted_stack(tmp_path: Path) -> None:
    doc = json.loads(FIXTURE.read_text())
    [control] = [b for b in doc["benchmarks"] if b["name"] == "test_leak[control-workers2]"]
    control["extra_info"][K.POSITIVE_CONTROL] = True  # as the suite marks it now
    (tmp_path / "run.json").write_text(json.dumps(doc))
    record = history_record(load_run(tmp_path / "run.json"))
    assert record.runner == "cpu-2core" and record.commit.startswith("2d0a354b69") and record.dirty
    assert record.cpu == "Intel(R) Xeon(R) Processor @ 2.80GHz" and record.usable_cores == 2
    assert list(record.stack) == list(K.COUNTED_STACK) and record.stack["torch"] == "2.14.1+cu130"
    assert record.cases[COST_CASE][INSTRUCTIONS.key] == pytest.approx(6002237.1)
    assert record.cases[EFFICIENCY_CASE][EFFICIENCY.key] == pytest.approx(0.5089)
    assert {m for figures in record.cases.values() for m in figures} <= {m.key for m in JUDGED}
    # what the gate does not judge is not recorded: remote time to first batch, the leak check's positive control
    assert all(K.TTFB_S not in f for c, f in record.cases.items() if c.startswith("remote/"))
    assert "leak/lfw-workers2" in record.cases and "leak/control-workers2" not in record.cases


def test_append_is_one_line_per_run_and_never_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_runs(tmp_path / "runs")
    store = tmp_path / "store"
    assert main(["append", *map(str, runs[:3]), "--store", str(store)]) == 0
    assert main(["append", str(runs[1]), "--store", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == [f"appended to {store / 'cpu-2core.jsonl'}"] * 3 + [
        f"already in {store / 'cpu-2core.jsonl'}, not appended again"]
    lines = (store / "cpu-2core.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(len(line) < 20_000 for line in lines)
    assert [r.commit for r in read_store(store / "cpu-2core.jsonl")] == [sha(0), sha(1), sha(2)]
    assert main(["append", str(runs[3]), "--store", str(store), "--runner", "cpu-8core"]) == 0
    assert [r.runner for r in read_store(store / "cpu-8core.jsonl")] == ["cpu-8core"]


def test_injected_steps_are_named_at_their_commits_and_nothing_else(tmp_path: Path) -> None:
    runs = make_runs(tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit", INJECTED)
    store = tmp_path / "store"
    for run in runs:
        assert main(["append", str(run), "--store", str(store)]) == 0
    for source in (store, tmp_path / ".benchmarks"):  # the store and the autosaves are the same history
        report = history_report(source, tmp_path / f"out-{source.name}")
        found = {(p.case, p.metric.key, p.commit.commit, p.previous.commit) for p in report.points}
        assert found == {(COST_CASE, INSTRUCTIONS.key, sha(6), sha(5)),
                         (EFFICIENCY_CASE, EFFICIENCY.key, sha(4), sha(3))}
        [cost] = [p for p in report.points if p.metric == INSTRUCTIONS]
        assert cost.step.change == pytest.approx(0.05, abs=0.001)
        [eff] = [p for p in report.points if p.metric == EFFICIENCY]
        assert eff.step.change == pytest.approx(-0.4, abs=0.03) and eff.step.p_value is not None
        assert (eff.step.runs_before, eff.step.runs_after) == (4, 6)
        text = report.summary
        assert f"  {COST_CASE}: at {sha(6)[:10]} (after {sha(5)[:10]}): +5.0%" in text
        assert f"  {EFFICIENCY_CASE}: at {sha(4)[:10]} (after {sha(3)[:10]}): -" in text
        assert "no change point (3 cases): cost/simple, cost/heavy, cost/uint8" in text
        assert text.endswith(f"2 change points in {report.series_count} series (1 exact steps, 1 by PELT + Welch)")
        names = sorted(p.name for p in report.charts)
        assert {"cpu-2core-cost.png", "cpu-2core-throughput.png", "cpu-2core-memory.png"} <= set(names)
        assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in report.charts)
        assert (report.out_dir / "summary.txt").read_text().strip() == text


def test_a_history_without_a_step_names_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_runs(tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit", seed=1)
    assert main(["show", str(tmp_path / ".benchmarks"), "--out", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    assert not re.search(r"^  \S+: at [0-9a-f]{10}", text, re.MULTILINE)
    assert text.rstrip().splitlines()[-1].startswith("no change point in ")
    assert (tmp_path / "out" / "history" / "cpu-2core-cost.png").is_file()


def test_exact_steps_follow_the_cost_threshold_both_ways() -> None:
    values = [100.0, 102.9, 100.0, 103.2, 103.2, 99.0]  # +2.9%: no; -2.8%: no; +3.2%: yes; -4.1%: yes
    assert [(s.at, round(s.change, 3)) for s in exact_steps(INSTRUCTIONS, values, 0.03)] == [(3, 0.032), (5, -0.041)]
    assert [s.at for s in exact_steps(INSTRUCTIONS, [0.0, 0.0, 2.0], 0.03)] == [2]  # from zero is a step


def test_pure_noise_gives_no_statistical_step_across_a_summary() -> None:
    """200 series of pure noise judged as one summary (one Bonferroni family): no step is named."""
    rng = np.random.default_rng(7)
    named = [s for _ in range(200) for s in statistical_steps(PSS_GROWTH, list(rng.normal(100, 5, 12)), 200)]
    assert named == []
    assert statistical_steps(PSS_GROWTH, [1.0, 1.0, 50.0], 1) == []  # too few runs to judge: never a step


def test_welch_and_the_noise_sigma_keep_their_edge_cases() -> None:
    """Constant segments are decided by their levels (scipy alone gives NaN or warns); no difference, no σ."""
    one, two = np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0])
    assert welch_p(one, two) == 0.0 and welch_p(one, one.copy()) == 1.0
    assert 0.0 < welch_p(np.array([5.0, 5.0, 5.0]), np.array([1.0, 1.0, 2.0])) < 0.05  # one constant side
    assert welch_p(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])) == pytest.approx(1.0)
    assert np.isnan(noise_sigma(np.array([4.0]))) and noise_sigma(np.array([4.0, 4.0, 4.0])) == 0.0
    zigzag = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 0.0])  # differences 1, -1, 1, -1, 0: median 0, MAD 1
    assert noise_sigma(zigzag) == pytest.approx(1.4826 / np.sqrt(2), rel=1e-4)


def test_bad_sources_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path / "missing")]) == 2
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "cpu-2core.jsonl").write_text('{"v": 1}\n')
    assert main(["show", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: history source not found: {tmp_path / 'missing'}",
                   f"error: {tmp_path / 'store' / 'cpu-2core.jsonl'}:1: not a history record (commit, date, run, "
                   "machine and cases expected); history lines are written by python -m lfw.history append"]
    with pytest.raises(LFWError, match=r"no commit_info\.id"):
        doc = json.loads(FIXTURE.read_text())
        doc["commit_info"] = {}
        (tmp_path / "nocommit.json").write_text(json.dumps(doc))
        history_record(load_run(tmp_path / "nocommit.json"))


def test_unusable_autosaves_are_left_out_and_named(tmp_path: Path) -> None:
    folder = tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit"
    make_runs(folder)
    (folder / "0011_deadbeef_20261102_000000.json").write_text('{"benchmarks": []}')
    history = load_history(tmp_path / ".benchmarks")
    assert len(history.runners["cpu-2core"]) == RUNS
    assert any(n.startswith(f"left out {folder / '0011_deadbeef_20261102_000000.json'}") for n in history.notes)


def test_export_is_bencher_metric_format_valid_against_the_published_schema(tmp_path: Path) -> None:
    """python -m lfw.history export: the gate's judged metrics per case, valid against docs/schema/bmf.schema.json."""
    import jsonschema

    from lfw.history.store import judged_figures

    out = tmp_path / "metrics.json"
    assert main(["export", str(FIXTURE), "--out", str(out)]) == 0
    metrics = json.loads(out.read_text())
    schema = json.loads((Path(__file__).parents[1] / "docs" / "schema" / "bmf.schema.json").read_text())
    jsonschema.validate(metrics, schema)
    medians = judged_figures(load_run(FIXTURE))
    assert set(metrics) == set(medians)  # the same cases and metrics the history keeps
    for key, measures in metrics.items():
        assert set(measures) == set(medians[key])
        for figure in measures.values():
            assert figure["lower_value"] <= figure["value"] <= figure["upper_value"]


def test_a_full_profile_run_files_a_series_of_its_own(tmp_path: Path) -> None:
    """Nightly full runs and the quick runs of every push do not share a series: their passes differ."""
    doc = json.loads(FIXTURE.read_text())
    doc["machine_info"]["bench_profile"] = "full"
    doc.pop("lfw_selection", None)
    full = tmp_path / "full.json"
    full.write_text(json.dumps(doc))
    assert history_record(load_run(full)).runner == "cpu-2core-full"
    assert history_record(load_run(FIXTURE)).runner == "cpu-2core"
