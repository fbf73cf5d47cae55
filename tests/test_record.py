"""The case record: one summary rule, the same saved keys and values as before it had a type, a schema version
every writer saves, and readers that take the older form and refuse a newer one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.helpers import record
from lfw.errors import LFWError
from lfw.results import SCHEMA_VERSION, CaseRecord, case_record, load_run, summarize, write_run
from lfw.results import keys as K
from lfw.results.record import section_of
from tests.record_inputs import all_records

ROOT = Path(__file__).resolve().parents[1]
BEFORE = ROOT / "tests" / "fixtures" / "records_v0.json"


def test_every_writer_saves_the_keys_and_values_it_saved_before_plus_the_schema_version() -> None:
    before = json.loads(BEFORE.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(all_records()))  # as saved: tuples become lists
    assert set(now) == set(before)
    for writer, extra in now.items():
        assert extra.pop(K.SCHEMA_VERSION) == SCHEMA_VERSION == 1, writer
        assert extra == before[writer], writer


def test_summarize_takes_the_median_the_maximum_of_a_peak_and_the_cv_where_asked() -> None:
    assert summarize(K.IMAGES_PER_S, [100.004, 300.0, 200.0]) == {
        K.IMAGES_PER_S: 200.0, K.rounds(K.IMAGES_PER_S): [100.0, 300.0, 200.0]}
    assert summarize(K.PSS_PEAK_MIB, [1.0, 5.0, 2.0], kept="summary") == {K.PSS_PEAK_MIB: 5.0}
    assert summarize(K.TTFB_S, [0.1234567, 0.2], kept="rounds") == {K.rounds(K.TTFB_S): [0.123457, 0.2]}
    with_cv = summarize(K.IMAGES_PER_S, [90.0, 110.0], cv=True)
    assert with_cv[K.IMAGES_PER_S_CV] == round((200**0.5) / 100, 4) and with_cv[K.IMAGES_PER_S] == 100.0
    assert summarize(K.EFFICIENCY, [0.123456])[K.EFFICIENCY] == 0.1235  # 4 places: a share
    assert summarize("any_figure", [1.23456789], digits=2)["any_figure"] == 1.23
    with pytest.raises(ValueError, match="no rounds"):
        summarize(K.IMAGES_PER_S, [])


def test_a_record_keeps_knobs_metrics_and_machine_apart_and_reads_back_what_it_wrote() -> None:
    case = CaseRecord().add({K.TRANSFORM: "none", K.USABLE_CORES: 2, K.STEADY_ABSENT: "too short"})
    case.measure(K.IMAGES_PER_S, [10.0, 20.0, 30.0])
    assert case.knobs == {K.TRANSFORM: "none"} and case.machine == {K.USABLE_CORES: 2}
    assert case.metrics[K.IMAGES_PER_S] == 20.0 and K.STEADY_ABSENT in case
    assert section_of(K.DEVICE) == "machine" and section_of("a_new_figure") == "metrics"
    extra = case.as_extra_info()
    assert extra[K.SCHEMA_VERSION] == SCHEMA_VERSION
    assert CaseRecord.from_extra_info(extra) == case
    case.drop(K.STEADY_ABSENT)
    assert K.STEADY_ABSENT not in case.as_extra_info()
    older = CaseRecord.from_extra_info({K.TRANSFORM: "none"})
    assert older.schema_version == 0 and older.knobs == {K.TRANSFORM: "none"}


def test_the_benchmarks_record_helper_saves_the_schema_version_and_refuses_a_newer_one() -> None:
    benchmark = SimpleNamespace(extra_info={"kept": 1})
    record(benchmark, {K.TRANSFORM: "none"})
    assert benchmark.extra_info == {"kept": 1, K.TRANSFORM: "none", K.SCHEMA_VERSION: SCHEMA_VERSION}
    record(benchmark, CaseRecord().measure(K.TTFB_S, [0.5]))
    assert benchmark.extra_info[K.TTFB_S] == 0.5 and benchmark.extra_info[K.SCHEMA_VERSION] == SCHEMA_VERSION
    with pytest.raises(LFWError, match="schema 7"):
        record(benchmark, {K.SCHEMA_VERSION: 7})


def test_no_benchmark_writes_extra_info_but_through_the_record_helper() -> None:
    """Every saved case carries ``schema_version`` because every write goes through ``benchmarks.helpers.record``."""
    write = re.compile(r"\.extra_info\s*(\[[^\]]*\]\s*=[^=]|\.(update|setdefault)\(|=[^=])")
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name == "helpers.py":
            text = text.replace("        benchmark.extra_info[key] = value\n", "", 1)  # record() itself
        assert not write.search(text), f"{path.name} writes extra_info directly: use benchmarks.helpers.record"


def _run_file(tmp_path: Path, extra: dict[str, object]) -> Path:
    doc = {"machine_info": {"node": "x"}, "commit_info": {}, "datetime": "2026-01-01T00:00:00",
           "benchmarks": [case_record(name="test_x[a]", fullname="b/test_x.py::test_x[a]", group="g", params={},
                                      seconds=[0.1, 0.2], extra=extra)]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_case_without_a_version_loads_as_version_0_and_a_newer_one_is_refused_in_one_line(tmp_path: Path) -> None:
    older = load_run(_run_file(tmp_path, {K.IMAGES_PER_S: 5.0}))
    assert older.cases[0].schema_version == 0 and older.cases[0].number(K.IMAGES_PER_S) == 5.0
    current = load_run(_run_file(tmp_path, {K.IMAGES_PER_S: 5.0, K.SCHEMA_VERSION: SCHEMA_VERSION}))
    assert current.cases[0].schema_version == SCHEMA_VERSION
    newer = SCHEMA_VERSION + 1
    with pytest.raises(LFWError) as refused:
        load_run(_run_file(tmp_path, {K.SCHEMA_VERSION: newer}))
    message = str(refused.value)
    assert "\n" not in message and f"schema {newer}" in message and "test_x[a]" in message
    with pytest.raises(LFWError, match="not a case record version"):
        load_run(_run_file(tmp_path, {K.SCHEMA_VERSION: "1"}))


def test_a_saved_distributed_run_loads_with_the_schema_version(tmp_path: Path) -> None:
    from lfw.results.model import parse_run

    records = [r for name, r in all_records().items() if name.startswith("distributed")]
    path = write_run(tmp_path / "0001_d.json", [case_record(name=f"d[{i}]", fullname=f"d::d[{i}]", group="d",
                                                            params={}, seconds=[0.1], extra=r)
                                                for i, r in enumerate(records)],
                     machine={}, commit={}, datetime="2026-01-01T00:00:00")
    run = load_run(path)
    assert [c.schema_version for c in run.cases] == [SCHEMA_VERSION] * 3
    assert parse_run(json.loads(path.read_text()), "again").cases == run.cases


COMMITTED = sorted([*(ROOT / "benchmarks" / "baselines").glob("*.json"),
                    *(ROOT / "benchmarks" / "gate_rates").rglob("*.json"),
                    ROOT / "tests" / "fixtures" / "quick_run.json"])


@pytest.mark.parametrize("path", [p for p in COMMITTED if "benchmarks" in json.loads(p.read_text(encoding="utf-8"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_runs_load_as_the_older_form(path: Path) -> None:
    run = load_run(path)
    assert run.cases and {c.schema_version for c in run.cases} <= {0, SCHEMA_VERSION}
