"""The case record: one summary rule, the same saved keys and values as before it had a type, a schema version
every writer saves, and readers that take the older form and refuse a newer one."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.helpers import record
from lfw.errors import LFWError
from lfw.measure.loader_config import LoaderConfig
from lfw.results import SCHEMA_VERSION, CaseRecord, case_record, load_run, summarize, write_run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import BY_KEY, KNOBS, NUM_WORKERS, TRANSFORM, saved_form
from lfw.results.record import section_of
from lfw.suite.matrix import GROUPS
from tests.record_inputs import all_records

ROOT = Path(__file__).resolve().parents[1]
BEFORE = ROOT / "tests" / "fixtures" / "records_v0.json"


def test_every_writer_saves_what_it_saved_before_each_knob_once_in_params() -> None:
    """Schema 1 kept a knob in extra_info under its key and again in the LoaderConfig dict (``config``, with
    ``workers`` a third copy of ``num_workers``); schema 2 keeps every knob once, in params, the rest as before (and
    any metric declared since)."""
    before = json.loads(BEFORE.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(all_records()))  # as saved: tuples become lists
    assert set(now) == set(before)
    for writer, (given, written) in now.items():
        params, extra = saved_form(given, written)  # the suite's records are split as the record helper saves
        assert extra.pop(K.SCHEMA_VERSION) == SCHEMA_VERSION == 2, writer
        old = dict(before[writer])
        config = old.pop(K.CONFIG, {})
        workers = old.pop(K.WORKERS, None)
        assert workers is None or workers == config[NUM_WORKERS.key], writer
        knobs = {**{k: v for k, v in config.items() if k in BY_KEY},
                 **{k: old.pop(k) for k in list(old) if k in BY_KEY}, **given}
        rest = {k: v for k, v in config.items() if k not in BY_KEY}
        added = set(extra) - set(old) - {K.CONFIG}  # metrics declared since (lfw.results.keys), each writer's own
        kept = {k: v for k, v in extra.items() if k not in added}
        assert kept == {**old, **({K.CONFIG: rest} if rest else {})}, writer
        assert all(K.facts(k) is not None and K.facts(k).section == "metrics" for k in added), (writer, added)
        assert params == {**dict.fromkeys(BY_KEY), **knobs} and not set(extra) & set(BY_KEY), writer
        assert (workers is None) == (config.get(NUM_WORKERS.key) is None), writer  # no knob lost on the way


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
    case = CaseRecord().add({KN.TRANSFORM.key: "none", K.USABLE_CORES: 2, K.STEADY_ABSENT: "too short"})
    case.measure(K.IMAGES_PER_S, [10.0, 20.0, 30.0])
    assert case.section("knobs") == {KN.TRANSFORM.key: "none"} and case.section("machine") == {K.USABLE_CORES: 2}
    assert case.section("metrics")[K.IMAGES_PER_S] == 20.0 and K.STEADY_ABSENT in case
    assert section_of(K.DEVICE) == "machine" and section_of(K.rounds(K.PARALLEL_CAPACITY)) == "machine"
    extra = case.as_extra_info()
    assert extra[K.SCHEMA_VERSION] == SCHEMA_VERSION
    assert CaseRecord.from_extra_info(extra) == case
    case.drop(K.STEADY_ABSENT)
    assert K.STEADY_ABSENT not in case.as_extra_info()
    older = CaseRecord.from_extra_info({KN.TRANSFORM.key: "none"})
    assert older.schema_version == 0 and older.section("knobs") == {KN.TRANSFORM.key: "none"}


def test_the_benchmarks_record_helper_saves_the_schema_version_and_the_knobs_once_in_params() -> None:
    callspec = {"num_workers": 2, "layout": "list"}  # pytest's own dict: rebound, never changed
    benchmark = SimpleNamespace(extra_info={"kept": 1}, params=callspec)
    record(benchmark, {KN.TRANSFORM.key: "none", K.CONFIG: LoaderConfig(batch_size=8, num_workers=2).as_dict(),
                       K.USABLE_CORES: 2})
    assert benchmark.extra_info == {"kept": 1, K.USABLE_CORES: 2, K.SCHEMA_VERSION: SCHEMA_VERSION}
    assert set(benchmark.params) == set(BY_KEY) and callspec == {"num_workers": 2, "layout": "list"}
    assert benchmark.params | {} == {**dict.fromkeys(BY_KEY), **LoaderConfig(batch_size=8).as_dict(),
                                     "num_workers": 2, "layout": "list", KN.TRANSFORM.key: "none"}
    record(benchmark, {KN.TRANSFORM.key: "index-only"})  # what the case measured replaces what its params assumed
    assert benchmark.params[KN.TRANSFORM.key] == "index-only" and KN.TRANSFORM.key not in benchmark.extra_info
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


def _run_file(tmp_path: Path, extra: dict[str, object], params: dict[str, object] | None = None) -> Path:
    """A one-case run saved as written here (not through :func:`case_record`'s split: any version's layout)."""
    case = {**case_record(name="test_x[a]", fullname="b/test_x.py::test_x[a]", group="g", params={},
                          seconds=[0.1, 0.2], extra={}), "params": params or {}, "extra_info": extra}
    doc = {"machine_info": {"node": "x"}, "commit_info": {}, "datetime": "2026-01-01T00:00:00", "benchmarks": [case]}
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

    records = [r for name, (_, r) in all_records().items() if name.startswith("distributed")]
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
def test_committed_runs_load_and_read_each_knob_where_their_version_kept_it(path: Path) -> None:
    """Versions 0 and 1 kept a knob under its key in extra_info, in params (version 0 only where the case's group
    varied it) or in the LoaderConfig dict (``config``): :meth:`Case.knob` reads it there, in that order. From
    version 2 (the gpu baseline) a knob is in params alone."""
    run = load_run(path)
    assert run.cases and {c.schema_version for c in run.cases} <= {0, 1, SCHEMA_VERSION}
    from_config = 0
    for case in run.cases:
        if case.schema_version == SCHEMA_VERSION:
            assert all(case.knob(knob) == case.params.get(knob.key) for knob in KNOBS), case.name
            assert all(knob.key in case.params for knob in KNOBS), case.name
            continue
        config = case.extra.get(K.CONFIG) or {}
        for knob in KNOBS:
            saved = [v for v in (case.extra.get(knob.key), case.params.get(knob.key), config.get(knob.key))
                     if v is not None]
            assert case.knob(knob) == (saved[0] if saved else None), (case.name, knob.key)
        if config.get(NUM_WORKERS.key) is not None and case.params.get(NUM_WORKERS.key) is None:
            from_config += 1
        if K.WORKERS in case.extra and not config:
            assert case.knob(NUM_WORKERS) == case.extra[K.WORKERS], case.name
    if path.parent.name == "baselines" and SCHEMA_VERSION not in {c.schema_version for c in run.cases}:
        # saved before every case's params carried every knob
        assert from_config, "a case whose params lack num_workers reads it from its config"


def test_a_case_of_schema_2_reads_its_knobs_from_params_alone(tmp_path: Path) -> None:
    older = load_run(_run_file(tmp_path, {K.SCHEMA_VERSION: 1, K.CONFIG: {"num_workers": 4},
                                          KN.TRANSFORM.key: "heavy"}))
    assert older.cases[0].knob(NUM_WORKERS) == 4 and older.cases[0].knob(KN.TRANSFORM) == "heavy"
    now = load_run(_run_file(tmp_path, {K.SCHEMA_VERSION: SCHEMA_VERSION, K.CONFIG: {"num_workers": 4}},
                             params={"num_workers": 2, "transform": None}))
    case = now.cases[0]
    assert case.knob(NUM_WORKERS) == 2 and case.knob(TRANSFORM) is None and case.knob(TRANSFORM, "none") == "none"
    assert case.params[NUM_WORKERS.key] == 2 and K.CONFIG in case.extra  # saved as it was written, read from params
    # None in params is the case's answer: never a config or an older record's key beside it
    none = load_run(_run_file(tmp_path, {K.SCHEMA_VERSION: SCHEMA_VERSION, K.WORKERS: 3,
                                         K.CONFIG: {"num_workers": 4, "batch_size": 32}},
                              params={"num_workers": None, "batch_size": None})).cases[0]
    assert none.knob(NUM_WORKERS) is None and none.knob(KN.BATCH_SIZE) is None


def test_a_memory_index_case_saved_in_schema_1_reads_the_transform_it_measured() -> None:
    """Schema 1 saved the case's params as its loader's arguments (``none``) beside the record's ``index-only``."""
    run = load_run(ROOT / "benchmarks" / "gate_rates" / "cross_cpu" / "2026-11-26-amd-6ab8ca1.json")
    case = run.by_key()["memory-index/list-workers2"]
    assert case.params[KN.TRANSFORM.key] == "none" and case.knob(TRANSFORM) == case.knob(KN.TRANSFORM) == "index-only"


def test_every_knob_a_benchmark_varies_is_in_the_registry() -> None:
    """A benchmark's parametrized names are saved in its params (pytest-benchmark's own): each must be a knob of
    :data:`lfw.results.knobs.KNOBS` (the smoke run of tests/test_pytest_benchmark_tools.py checks saved runs)."""
    names: dict[str, str] = {a: f"group {g.name}" for g in GROUPS.values() for a in g.argnames}
    for path in sorted((ROOT / "benchmarks").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "parametrize" and node.args:
                first = node.args[0]
                literal = [first] if isinstance(first, ast.Constant) else getattr(first, "elts", [])
                for arg in (a for c in literal if isinstance(c, ast.Constant) for a in str(c.value).split(",")):
                    names[arg.strip()] = path.name
    unknown = set(names) - set(BY_KEY)
    assert len(names) > 10 and not unknown, {k: names[k] for k in unknown}
