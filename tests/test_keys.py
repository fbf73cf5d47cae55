"""The record's keys, each declared once (lfw.results.keys): a writer cannot save a key no declaration knows, every
key the benchmarks write is declared, the committed runs hold none but declared or retired ones, and the gate and
the report write a value as its declaration says."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.helpers import record
from lfw.gate.metrics import JUDGED, MEMORY, SHM_ADDED, TTFB
from lfw.gate.table import fmt_value
from lfw.results import CaseRecord, load_run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import BY_KEY
from tests.test_record import COMMITTED

ROOT = Path(__file__).resolve().parents[1]
WRITES = ("record", "add", "CaseRecord", "measure")  # the calls a key reaches a case's record through


def test_a_record_refuses_a_key_no_declaration_knows_in_one_line() -> None:
    for write in (lambda: CaseRecord().add({"a_new_figure": 1.0}), lambda: CaseRecord().measure("a_new_figure", [1.0]),
                  lambda: record(SimpleNamespace(extra_info={}, params={}), {"a_new_figure": 1.0})):
        with pytest.raises(KeyError, match=r"'a_new_figure' is not declared: declare it in lfw/results/keys.py"):
            write()
    # A per-round list and a CV are their metric's; reading an absent key is no write.
    case = CaseRecord().measure(K.IMAGES_PER_S, [1.0, 2.0], cv=True)
    assert set(case.section("metrics")) == {K.IMAGES_PER_S, K.rounds(K.IMAGES_PER_S), K.IMAGES_PER_S_CV}
    assert "a_new_figure" not in case and case.get("a_new_figure") is None


def written_keys(path: Path) -> dict[str, str]:
    """Each key ``path`` puts in a dict literal handed to a record write (:data:`WRITES`), as a constant of
    :mod:`lfw.results.keys` (``K.NAME``: its value), a knob of :mod:`lfw.results.knobs` (``KN.NAME.key``) or spelled
    by hand (the string), with where it is."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = getattr(getattr(node, "func", None), "attr", None) or getattr(getattr(node, "func", None), "id", None)
        if not isinstance(node, ast.Call) or name not in WRITES:
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        for key in (k for a in args if isinstance(a, ast.Dict) for k in a.keys):
            where = f"{path.name}:{getattr(key, 'lineno', '?')}"
            if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id == "K":
                found[getattr(K, key.attr)] = where
            elif (isinstance(key, ast.Attribute) and key.attr == "key" and isinstance(key.value, ast.Attribute)
                  and isinstance(key.value.value, ast.Name) and key.value.value.id == "KN"):
                found[getattr(KN, key.value.attr).key] = where
            elif isinstance(key, ast.Constant):
                found[f"by hand: {key.value}"] = where
    return found


def test_every_key_the_benchmarks_and_the_record_builders_write_is_declared() -> None:
    paths = [*sorted((ROOT / "benchmarks").glob("*.py")), *sorted((ROOT / "lfw").rglob("*record.py"))]
    found = {k: w for p in paths for k, w in written_keys(p).items()}
    assert len(found) > 40, found  # the scan sees the writes
    undeclared = {k: w for k, w in found.items() if k not in BY_KEY and K.facts(k) is None}
    assert not undeclared, f"declare these in lfw/results/keys.py, spelled as constants: {undeclared}"


@pytest.mark.parametrize("path", [p for p in COMMITTED if "benchmarks" in json.loads(p.read_text(encoding="utf-8"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_runs_hold_only_declared_or_retired_keys_and_format_through_them(path: Path) -> None:
    run = load_run(path)
    for case in run.cases:
        unknown = [k for k in case.extra if k not in BY_KEY and k not in K.RETIRED and k != K.SCHEMA_VERSION
                   and K.facts(k) is None]
        assert not unknown, (case.name, unknown)
        for metric in JUDGED:
            value = case.number(metric.key)
            if value is not None:
                assert fmt_value(metric.key, metric.unit, value).lstrip("+-")[:1].isdigit(), (case.name, metric.key)


def test_each_judged_metric_reads_its_label_unit_and_direction_from_its_declaration() -> None:
    for metric in (*JUDGED, SHM_ADDED):
        facts = K.facts(metric.key)
        assert facts is not None and facts.better is not None and metric.label == facts.label, metric.key
        assert (metric.sign < 0) == (facts.better == "higher"), metric.key
    assert all(m.unit == " MiB" for m in MEMORY[:4]) and TTFB.unit == " s" and TTFB.sign == 1


def test_a_value_is_written_as_its_declaration_says() -> None:
    assert fmt_value(K.INSTRUCTIONS_PER_IMAGE, "", 12_345_678) == "12.346 M"
    assert fmt_value(K.TTFB_S, " s", 0.1234) == "123.4 ms" and K.FACTS[K.TTFB_S].cell(0.1234) == "123.4"
    assert fmt_value(K.PSS_GROWTH_MIB, " MiB", 12.34) == "+12.3 MiB"
    assert fmt_value(K.IMAGES_PER_S, "", 1234.5) == "1,234 img/s" and K.FACTS[K.EFFICIENCY].cell(0.8512) == "85.1%"
    assert fmt_value("not_declared", " u", 1.0) == "1.000 u"
    with pytest.raises(ValueError, match="declared twice"):
        K.metric(K.IMAGES_PER_S)
