"""The gate's Markdown verdict (``reports/gate.md``, ``$GITHUB_STEP_SUMMARY``, the pull-request comment's body).

Two-file pages come from the committed runs: the 2-core baseline against the unchanged run after the engine move
(exit 0), against the cross-CPU run (a decode pipeline's share at -40.2%: exit 1), against the run with another
torchvision (the cost layer not judged), against the 2x slower decode (17 regressions), and synthetic copies for
a gap, nothing compared and a required layer. A/B pages come from the fake pass servers of ``tests/test_ab.py``.
Each page must name every regression and every layer not judged, carry the comment marker, and never say "no
regression" where nothing was compared.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from lfw.gate import compare_runs
from lfw.gate.__main__ import main
from lfw.gate.metrics import IMAGES_PER_S, SAME_MACHINE, TTFB
from lfw.gate.paired_rule import PairedInput, decide
from lfw.gate.summary import MARKER, STEP_SUMMARY_ENV, write_chart_list
from lfw.gate.table import verdict_line
from lfw.gate.verdict_build import TWO_FILE_LAYERS
from lfw.results import case_key, load_run, short_name
from tests.test_ab import fake_repo, pairs

ROOT = Path(__file__).resolve().parents[1]
# the Xeon baseline the committed cross-CPU runs were gated against (the runner's baseline was recorded again since)
BASELINE = ROOT / "benchmarks" / "gate_rates" / "cross_cpu" / "baseline-xeon-2026-11-23.json"
RATES = ROOT / "benchmarks" / "gate_rates"
UNCHANGED = RATES / "unchanged-engine-2026-11-23.json"
CROSS_CPU = RATES / "cross_cpu" / "2026-11-23-gate-run.json"
OTHER_STACK = RATES / "cross_cpu" / "2026-11-23-gate-run-torchvision-0.29.2.json"
SLOW_DECODE = RATES / "slow_decode_2x" / "gate-run.json"
Capture = pytest.CaptureFixture[str]


@pytest.fixture
def step_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$GITHUB_STEP_SUMMARY`` as GitHub Actions sets it: a file the job appends its pages to."""
    path = tmp_path / "step_summary.md"
    path.write_text("earlier step\n")
    monkeypatch.setenv(STEP_SUMMARY_ENV, str(path))
    monkeypatch.chdir(tmp_path)
    return path


def rows(page: str) -> list[str]:
    return [line for line in page.splitlines() if line.startswith("| `")]


@pytest.mark.parametrize(("current", "code"), [(UNCHANGED, 0), (CROSS_CPU, 1), (OTHER_STACK, 0), (SLOW_DECODE, 1)],
                         ids=["unchanged", "cross-cpu", "other-stack", "slow-decode"])
def test_a_committed_run_gets_a_page_naming_every_regression_and_layer_not_judged(
        tmp_path: Path, step_summary: Path, current: Path, code: int) -> None:
    page_path = tmp_path / "gate.md"
    assert main([str(BASELINE), str(current), "--summary-md", str(page_path)]) == code
    page = page_path.read_text()
    assert page.startswith(MARKER + "\n")
    assert step_summary.read_text() == f"earlier step\n{page}\n"  # appended, not overwritten
    report = compare_runs(load_run(BASELINE), load_run(current))
    assert f"**{verdict_line(report)}**" in page and f"(exit {code})" in page.splitlines()[1]
    assert ("no regression" in page.lower()) == (code == 0)
    for c in report.regressions:  # one row each: case, metric, both sides, change and the rule
        assert any(f"`{short_name(c.case)}` | {c.metric.label} |" in row and f"| {c.rule} |" in row
                   for row in rows(page)), (c.case, c.metric.key)
    regression_rows = page.split("#### Regressions")[1].split("####")[0] if report.regressions else ""
    assert len(rows(regression_rows)) == len(report.regressions)
    for layer, why in report.unjudged.items():
        assert f"| {layer} | no | - | {why} |" in page and f"- not judged: {layer}: {why}" in page
    for note in report.notes:
        assert f"- note: {note}" in page
    for missing in report.missing:
        assert f"`{short_name(missing.case)}`: {missing.why}" in page
    assert "wall clock, A/B" in page and "`make gate-ab`" in page  # the layer a two-file run does not judge


def test_the_cost_layer_not_judged_is_a_layer_row_with_its_reason(tmp_path: Path, step_summary: Path) -> None:
    assert main([str(BASELINE), str(OTHER_STACK), "--summary-md", str(tmp_path / "gate.md")]) == 0
    page = (tmp_path / "gate.md").read_text()
    assert "| cost layer | no | - | the counted stack differs (torchvision 0.29.1+cu130 -> 0.29.2+cu132)" in page


def test_every_two_file_metric_belongs_to_one_layer() -> None:
    named = [m for metrics in TWO_FILE_LAYERS.values() for m in metrics]
    assert sorted(m.key for m in named) == sorted(m.key for m in SAME_MACHINE)


def test_the_recommendation_is_the_reports(tmp_path: Path, step_summary: Path) -> None:
    from lfw.results.recommend import recommendations

    main([str(BASELINE), str(UNCHANGED), "--summary-md", str(tmp_path / "gate.md")])
    page = (tmp_path / "gate.md").read_text()
    found = recommendations(load_run(UNCHANGED))
    assert found and "#### Recommended num_workers" in page
    for r in found:
        assert f"| {r.transform} | {r.verdict()} | {r.evidence()} |" in page


def copy_run(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def write(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return str(out)


def test_a_gap_says_incomplete_and_names_each_missing_case(tmp_path: Path, step_summary: Path) -> None:
    """The cost layer's four cases failed (valgrind crashed): four gaps, a line each, and exit 5."""
    doc = copy_run(UNCHANGED)
    gone = [b for b in doc["benchmarks"] if b["group"] == "cost"]
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["group"] != "cost"]
    for b in gone:
        doc["lfw_selection"]["cases"][case_key(b["group"], b["name"])] = {"outcome": "failed",
                                                                         "reason": "call: valgrind crashed"}
    assert main([str(BASELINE), write(tmp_path, "cur.json", doc), "--summary-md", str(tmp_path / "gate.md")]) == 5
    page = (tmp_path / "gate.md").read_text()
    assert "INCOMPLETE (exit 5)" in page and "**MISSING: 4 baseline cases this run should have held**" in page
    assert "exit 5: incomplete" in page and "| cost layer | no | - | the current run has no instruction counts" in page
    for b in gone:
        assert f"- `{b['name']}`: failed: call: valgrind crashed" in page


def test_nothing_compared_never_says_no_regression(tmp_path: Path, step_summary: Path) -> None:
    doc = copy_run(UNCHANGED)
    for case in doc["benchmarks"]:
        case["name"] = case["name"].replace("[", "[renamed-")
    args = [str(BASELINE), write(tmp_path, "cur.json", doc), "--accept-missing", "*"]
    assert main([*args, "--summary-md", str(tmp_path / "gate.md")]) == 5
    page = (tmp_path / "gate.md").read_text()
    assert "INCOMPLETE: nothing compared" in page and "no regression" not in page.lower()
    assert "| cost layer | no | 0 |" in page


def test_a_regression_in_a_synthetic_copy_is_a_row(tmp_path: Path, step_summary: Path) -> None:
    doc = copy.deepcopy(copy_run(UNCHANGED))
    case = next(b for b in doc["benchmarks"] if b["name"] == "test_cost[uint8]")
    case["extra_info"]["instructions_per_image"] *= 1.05
    assert main([str(BASELINE), write(tmp_path, "cur.json", doc), "--summary-md", str(tmp_path / "gate.md")]) == 1
    [row] = rows((tmp_path / "gate.md").read_text().split("#### Regressions")[1].split("####")[0])
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "`test_cost[uint8]`" and cells[1] == "instructions/image" and cells[4:] == ["+5.0%", "+3%"]


def test_the_default_page_is_reports_gate_md(tmp_path: Path, step_summary: Path) -> None:
    assert main([str(BASELINE), str(UNCHANGED)]) == 0
    assert (tmp_path / "reports" / "gate.md").read_text().startswith(MARKER)


@pytest.mark.parametrize("flags", [["--alpha", "0"], ["--no-such-flag"]])
def test_a_usage_error_writes_nothing(tmp_path: Path, step_summary: Path, capsys: Capture, flags: list[str]) -> None:
    assert main([str(BASELINE), str(UNCHANGED), *flags, "--summary-md", str(tmp_path / "gate.md")]) == 2
    assert not (tmp_path / "gate.md").exists() and step_summary.read_text() == "earlier step\n"
    assert capsys.readouterr().err.count("\n") == 1
    assert main([str(BASELINE), str(tmp_path / "missing.json"), "--summary-md", str(tmp_path / "gate.md")]) == 2
    assert not (tmp_path / "gate.md").exists()


def test_a_required_layer_not_judged_is_exit_2_on_the_page_too(tmp_path: Path, step_summary: Path,
                                                               capsys: Capture) -> None:
    args = [str(BASELINE), str(OTHER_STACK), "--require-cost-layer", "--summary-md", str(tmp_path / "gate.md")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --require-cost-layer") and err.count("\n") == 1
    page = (tmp_path / "gate.md").read_text()
    assert "unusable input (exit 2)" in page and "error: --require-cost-layer: the cost layer was not judged" in page


def drawn_run(tmp_path: Path, *charts: str) -> Path:
    """``reports/gate-run.json`` with ``charts`` drawn beside it, listed as the report lists what it drew."""
    run = tmp_path / "reports" / "gate-run.json"
    run.parent.mkdir()
    run.write_bytes(UNCHANGED.read_bytes())
    for name in charts:
        (run.parent / name).write_bytes(b"png")
    write_chart_list(run.parent, run, [run.parent / name for name in charts])
    return run


def test_the_charts_the_report_drew_for_this_run_are_linked_whatever_their_file_times(
        tmp_path: Path, step_summary: Path) -> None:
    """A chart drawn for the run is linked though its file is older than the run's; a chart the report did not
    draw for it (left from another run) is not, though its file is newer."""
    run = drawn_run(tmp_path, "workers.png", "workers.svg")
    drawn, stale = run.parent / "workers.png", run.parent / "leak.png"
    stale.write_bytes(b"png")
    os.utime(drawn, (run.stat().st_mtime - 3600,) * 2)
    os.utime(stale, (run.stat().st_mtime + 3600,) * 2)
    assert main([str(BASELINE), "reports/gate-run.json"]) == 0
    page = (tmp_path / "reports" / "gate.md").read_text()
    assert "- [reports/workers.png](workers.png)" in page and "leak.png" not in page and ".svg" not in page


def test_charts_drawn_for_another_run_are_not_linked(tmp_path: Path, step_summary: Path) -> None:
    run = drawn_run(tmp_path, "workers.png")
    run.write_bytes(CROSS_CPU.read_bytes())  # the charts show the bytes the report read, not this run's
    assert main([str(BASELINE), "reports/gate-run.json"]) == 1
    page = (tmp_path / "reports" / "gate.md").read_text()
    assert "workers.png" not in page and "no chart of this run in reports/" in page


def test_in_github_actions_the_charts_are_named_not_linked(tmp_path: Path, step_summary: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative link leads nowhere in a job summary or a pull-request comment: the artifact's files are named."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    drawn_run(tmp_path, "workers.png")
    assert main([str(BASELINE), "reports/gate-run.json"]) == 0
    page = step_summary.read_text()
    assert "uploaded `reports` artifact: `workers.png`" in page and "](workers.png)" not in page


def test_a_paired_improvement_needs_the_threshold_the_other_way_and_the_whole_interval() -> None:
    faster, about_same = pairs(1.10, 0.01, 10, seed=1), pairs(1.02, 0.01, 10, seed=2)
    later = pairs(1.5, 0.01, 10, seed=3)
    verdicts = decide([PairedInput("a", IMAGES_PER_S, faster, (100.0,), (110.0,)),
                       PairedInput("b", IMAGES_PER_S, about_same, (100.0,), (102.0,)),
                       PairedInput("c", TTFB, later, (0.1,), (0.15,))], {"throughput": 0.05, "ttfb": 0.25},
                      alpha_look=0.05)
    assert [v.improved for v in verdicts] == [True, False, False]
    assert verdicts[0].improvement_bound == pytest.approx(1 / 0.95)


def ab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_tree: Path, repo: Path, *extra: str) -> int:
    monkeypatch.chdir(repo)
    monkeypatch.setenv("LFW_ROOT", str(tiny_tree))
    return main(["--ab", "HEAD", "-k", "workers2-none", "--min-pairs", "8", "--max-pairs", "8", "--look-every", "4",
                 "--seed", "1", "--ab-out", str(tmp_path / "out"), *extra])


def test_an_ab_page_names_the_regression_the_improved_count_and_the_layers_it_does_not_judge(
        tmp_path: Path, step_summary: Path, monkeypatch: pytest.MonkeyPatch, tiny_tree: Path) -> None:
    """The working tree 20% slower and 10% fewer instructions per image: one regression row with its interval,
    the counts as notable improvements, and the layers only the two-file gate judges named as not judged."""
    repo = fake_repo(tmp_path, 1000.0, 800.0, base_count=1e6, current_count=0.9e6)
    assert ab(tmp_path, monkeypatch, tiny_tree, repo) == 1
    page = (repo / "reports" / "gate-ab.md").read_text()
    assert page.startswith(MARKER) and "A/B: REGRESSED (exit 1)" in page
    assert step_summary.read_text().endswith(page + "\n")
    regressions = rows(page.split("#### Regressions")[1].split("####")[0])
    assert len(regressions) == 1 and regressions[0].startswith("| `workers-transform[workers2-none]` | images/s |")
    assert "| -5% | 8 |" in regressions[0]  # the minimum effect and the pairs beside the interval
    improved = rows(page.split("#### Notable improvements")[1].split("####")[0])
    assert len(improved) == 4 and all("-10.0% (exact count)" in r and "| -3% |" in r for r in improved)
    assert "| cost layer (both revisions counted in this job) | yes | 4 |" in page
    assert "| memory, data wait, gross wall clock | no | - | not part of an A/B run" in page


def test_an_ab_run_whose_side_cannot_count_names_the_cost_layer_and_why(
        tmp_path: Path, step_summary: Path, monkeypatch: pytest.MonkeyPatch, tiny_tree: Path) -> None:
    repo = fake_repo(tmp_path, 1000.0, 1000.0, current_count=None)
    page_path = tmp_path / "ab.md"
    assert ab(tmp_path, monkeypatch, tiny_tree, repo, "--summary-md", str(page_path)) == 0
    page = page_path.read_text()
    assert "A/B: no regression (exit 0)" in page and "**no regression: 2 comparisons" in page
    assert ("| cost layer (both revisions counted in this job) | no | - | the current side could not count: "
            "cannot count instructions: valgrind is not installed |") in page


def test_an_ab_side_that_crashes_leaves_a_page_without_a_verdict(
        tmp_path: Path, step_summary: Path, monkeypatch: pytest.MonkeyPatch, tiny_tree: Path) -> None:
    repo = fake_repo(tmp_path, 1000.0, 1000.0, crash=2)
    assert ab(tmp_path, monkeypatch, tiny_tree, repo, "--summary-md", str(tmp_path / "ab.md")) == 4
    page = (tmp_path / "ab.md").read_text()
    assert page.startswith(MARKER) and "measurement failed (exit 4)" in page and "no verdict:" in page
    assert "no regression" not in page.lower()
