"""The gate's verdict as data (``verdict.json``): written by the gate, read back whole, refused in one line when of
another schema version, shown by the report only for the runs it judged (by SHA-256), and rendered with the same
labels in the gate's Markdown page and the report's HTML page. The report judges nothing itself."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lfw.cli.sections import html as html_fragment
from lfw.errors import LFWError
from lfw.gate import Thresholds, compare_runs
from lfw.gate.__main__ import main as gate_main
from lfw.gate.summary import verdict_blocks, verdict_markdown
from lfw.gate.verdict import SCHEMA_VERSION, TWO_FILE, CaseVerdict, Row, RunIdentity, Verdict, load_verdict
from lfw.gate.verdict_build import two_file_verdict
from lfw.report.__main__ import main as report_main
from lfw.results import load_run, short_name

ROOT = Path(__file__).resolve().parents[1]
# the Xeon baseline the committed cross-CPU runs were gated against (the runner's baseline was recorded again since)
BASELINE = ROOT / "benchmarks" / "gate_rates" / "cross_cpu" / "baseline-xeon-2026-11-23.json"
CROSS_CPU = ROOT / "benchmarks" / "gate_rates" / "cross_cpu" / "2026-11-23-gate-run.json"
UNCHANGED = ROOT / "benchmarks" / "gate_rates" / "unchanged-engine-2026-11-23.json"
FIXTURE = Path(__file__).parent / "fixtures" / "quick_run.json"
Capture = pytest.CaptureFixture[str]


def trimmed(run: Path, folder: Path, groups: tuple[str, ...] = ("data-wait",)) -> Path:
    """A copy of ``run`` in ``folder`` holding only the cases of ``groups``: a report of it draws two charts, not 16."""
    doc = json.loads(run.read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["group"] in groups]
    path = folder / f"{run.stem}-{'-'.join(groups)}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def gated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The gate run on the cross-CPU run (one regression): the folder holding its verdict.json and gate.md."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    assert gate_main([str(BASELINE), str(CROSS_CPU), "--summary-md", str(tmp_path / "gate.md")]) == 1
    return tmp_path


def test_the_verdict_json_round_trips_to_the_verdict_the_gate_built(gated: Path) -> None:
    baseline, current = load_run(BASELINE), load_run(CROSS_CPU)
    report = compare_runs(baseline, current)
    built = two_file_verdict(report, baseline, current, Thresholds(), exit_code=report.exit_code)
    loaded = load_verdict(gated / "verdict.json")
    assert loaded == built and loaded.schema_version == SCHEMA_VERSION and loaded.mode == TWO_FILE
    assert len(loaded.regressions) == 1 and loaded.regressions[0].metric_key == "pil_ceiling_share"
    assert loaded.matches(CROSS_CPU, BASELINE) and not loaded.matches(UNCHANGED, BASELINE)
    assert loaded.current is not None and loaded.current.sha256 == json.loads(
        (gated / "verdict.json").read_text())["current"]["sha256"]


def test_the_gate_page_is_rendered_from_the_verdict(gated: Path) -> None:
    verdict = load_verdict(gated / "verdict.json")
    assert verdict_markdown(verdict, gated / "gate.md") == (gated / "gate.md").read_text()


@pytest.mark.parametrize("version", [2, 0, None])
def test_another_schema_version_is_a_one_line_error(gated: Path, version: int | None, capsys: Capture) -> None:
    doc = json.loads((gated / "verdict.json").read_text())
    doc["schema_version"] = version
    path = gated / "other.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(LFWError, match=r"schema_version 1") as raised:
        load_verdict(path)
    assert "\n" not in str(raised.value) and f"schema_version {version!r}" in str(raised.value)
    assert report_main([str(CROSS_CPU), "--out", str(gated / "out"), "--verdict", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reads schema_version 1" in err


def test_a_stale_verdict_is_not_shown_as_this_runs(gated: Path, capsys: Capture) -> None:
    """A verdict of another run (other bytes, however new the file) is named as not matching, never shown."""
    out = gated / "out"
    out.mkdir()
    (out / "verdict.json").write_bytes((gated / "verdict.json").read_bytes())
    run = trimmed(FIXTURE, gated)
    assert report_main([str(run), "--out", str(out), "--format", "svg"]) == 0
    printed = capsys.readouterr().out
    assert f"no verdict matches these runs: {out / 'verdict.json'} judges {CROSS_CPU}" in printed
    assert "python -m lfw.gate BASE.json CURRENT.json" in printed
    page = (out / "index.html").read_text()
    assert "no verdict matches these runs" in page and "REGRESSED" not in page


def test_a_matching_verdict_is_shown_for_its_current_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: Capture) -> None:
    """The gate's verdict of the cross-CPU run's decoders (its one regression), shown with the report of that run."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base, current = (trimmed(run, tmp_path, ("decoders",)) for run in (BASELINE, CROSS_CPU))
    verdict = tmp_path / "verdict.json"
    assert gate_main([str(base), str(current), "--summary-md", str(tmp_path / "gate.md"), "--verdict-json",
                      str(verdict)]) == 1
    out = tmp_path / "out"
    assert report_main([str(current), "--out", str(out), "--format", "svg", "--verdict", str(verdict)]) == 0
    assert "no verdict matches" not in capsys.readouterr().out
    page = (out / "index.html").read_text()
    assert "<strong>REGRESSED: 1 of 6 comparisons in 6 cases</strong>" in page  # ttfb: no own-decoder rate there


def labels_in_table(text: str, start: str) -> dict[str, str]:
    """case -> label of the per-case verdict table after ``start`` (Markdown or HTML rows)."""
    body = text.split(start, 1)[1].split("</table>", 1)[0].split("</details>", 1)[0]
    md = re.findall(r"^\| `([^`]+)` \| ([a-z ]+) \|", body, re.M)
    cells = re.findall(r"<tr><td><code>([^<]+)</code></td><td>([a-z ]+)</td>", body)
    return {html.unescape(case): label for case, label in (md or cells)}


def test_gate_page_and_html_show_the_labels_of_verdict_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs and no gate run before: the report runs the gate, and every page shows the labels it wrote."""
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "job-summary.md"))
    base, current = trimmed(FIXTURE, tmp_path, ("data-wait", "batch-size")), tmp_path / "current.json"
    doc = json.loads(base.read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["name"] != "test_data_wait[step50ms]"]
    current.write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert report_main([str(base), str(current), "--out", str(out), "--format", "svg"]) == 0
    assert not (tmp_path / "job-summary.md").exists()  # the report's gate never appends to a job's page
    verdict = load_verdict(out / "verdict.json")
    assert verdict.matches(current, base) and verdict.exit_code == 5  # a case missing: a gap
    expected = {short_name(c.case): c.label for c in verdict.cases}
    assert expected["test_data_wait[step50ms]"] == "missing" and "unchanged" in expected.values()
    assert labels_in_table((out / "gate.md").read_text(), "#### Verdict per case") == expected
    assert labels_in_table((out / "index.html").read_text(), "Verdict per case") == expected
    readme = (out / "README.md").read_text()
    assert all(f"| `{case}` | {'**regressed**' if label == 'regressed' else label} |" in readme
               for case, label in expected.items())


def test_the_html_verdict_escapes_every_text() -> None:
    hostile = "<script>alert(1)</script>"
    row = Row(f"x::{hostile}", "efficiency", "eff<b>", "", "relative", "throughput", 0.5, 0.2, -0.6, "-40%", True)
    verdict = Verdict(TWO_FILE, 1, f"REGRESSED {hostile}", None, RunIdentity(hostile, "0" * 64, 1), setup=hostile,
                      comparisons=(row,), cases=(CaseVerdict(row.case, "regressed", -0.6, hostile),),
                      notes=(hostile,))
    fragment = html_fragment(verdict_blocks(verdict))
    assert "<script>" not in fragment and "<b>" not in fragment and "&lt;script&gt;alert(1)&lt;/script&gt;" in fragment


def test_the_report_imports_no_comparison_code() -> None:
    """The report reads the gate's verdict; only the gate compares two runs."""
    sources = sorted((ROOT / "lfw" / "report").glob("*.py"))
    assert sources and not [p.name for p in sources if re.search(r"lfw\.gate\.compare|compare_runs", p.read_text())]


def test_the_pages_that_render_a_saved_verdict_do_not_load_the_comparison() -> None:
    """The report shows the gate's verdict and never judges again: its verdict modules leave lfw.gate.compare out."""
    code = ("import sys, lfw.report.verdict, lfw.report.html_page, lfw.gate.summary; "
            "print('lfw.gate.compare' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "False", proc.stderr


def test_runs_the_gate_does_not_judge_are_said_not_judged(tmp_path: Path, capsys: Capture) -> None:
    """An interrupted current run: the gate gives no verdict (exit 5), so no page says "Regressions: none" and the
    comparison chart draws no case as unchanged."""
    base = trimmed(FIXTURE, tmp_path)
    doc = json.loads(base.read_text())
    doc["lfw_selection"] = {"keyword": "", "markexpr": "", "profile": "smoke", "layers": [], "deselected": [],
                            "cases": {}, "not_run": ["data-wait/step50ms"], "stopped": "interrupted (SIGINT)"}
    current = tmp_path / "current.json"
    current.write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert report_main([str(base), str(current), "--out", str(out), "--format", "svg"]) == 0
    printed = capsys.readouterr().out
    assert f"against {base.name}: not judged (no verdict: " in printed and "no cases in common" not in printed
    readme = (out / "README.md").read_text()
    assert "Regressions against the baseline" in readme and "not judged (no verdict: " in readme
    assert "): none" not in readme and "verdict: not judged (no verdict: " in readme
    chart = (out / "compare.svg").read_text()
    assert "not judged" in chart and "unchanged" not in chart


def test_a_failed_gate_leaves_no_older_verdict_to_show(gated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report asks the gate, which crashes (exit 1): the verdict of other runs left in OUT is not shown."""
    import lfw.report.verdict as shown

    out = gated / "out"
    out.mkdir()
    (out / "verdict.json").write_bytes((gated / "verdict.json").read_bytes())  # judges CROSS_CPU
    crash = subprocess.CompletedProcess([], 1, "", "Traceback (most recent call last):\nRuntimeError: boom\n")
    monkeypatch.setattr(shown.subprocess, "run", lambda *a, **k: crash)
    with pytest.raises(LFWError, match=r"the gate gave no verdict of .*: RuntimeError: boom"):
        shown.shown_verdict(out, UNCHANGED, BASELINE)
    assert not (out / "verdict.json").exists()


def test_an_unreadable_verdict_in_out_is_passed_over(gated: Path, capsys: Capture) -> None:
    """An OUT/verdict.json of another schema version: with a baseline the gate is asked again, which replaces it;
    with one run the report says why it shows none. Given as --verdict, it is a one-line error (above)."""
    doc = json.loads((gated / "verdict.json").read_text())
    doc["schema_version"] = 0
    for name in ("two", "one"):
        (gated / name).mkdir()
        (gated / name / "verdict.json").write_text(json.dumps(doc))
    base, current = (trimmed(run, gated, ("decoders",)) for run in (BASELINE, CROSS_CPU))  # the regression's group
    assert report_main([str(base), str(current), "--out", str(gated / "two"), "--format", "svg"]) == 0
    verdict = load_verdict(gated / "two" / "verdict.json")
    assert verdict.matches(current, base) and len(verdict.regressions) == 1
    capsys.readouterr()
    assert report_main([str(current), "--out", str(gated / "one"), "--format", "svg"]) == 0
    assert "not shown: " in capsys.readouterr().out and "verdict schema_version 0" in (
        gated / "one" / "index.html").read_text()
