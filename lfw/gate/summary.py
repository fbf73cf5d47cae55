"""The gate's verdict as Markdown: what a reviewer reads where they work, in the pull request and the job's page.

Every gate run, two-file or A/B, writes one page (``reports/gate.md``; A/B ``reports/gate-ab.md``;
``--summary-md`` moves it), also when the gate fails, and appends it to the file ``$GITHUB_STEP_SUMMARY``
names when GitHub Actions sets it. A usage error writes nothing. The page is built from the objects the text
output renders (:class:`~lfw.gate.compare.GateReport`, :class:`~lfw.gate.ab.ABRun`) and from the same verdict
lines (:mod:`lfw.gate.table`), never judged again: the layers judged and not judged with the gate's own reasons,
its notes, the cases missing or left out, a row per regression and per notable improvement, the verdict line and
what its exit code means, the recommended ``num_workers`` per preset when the current run holds the workers
group, and links to the charts drawn from the current run.

Its first line is :data:`MARKER`, a hidden HTML comment: CI's pull-request comment finds its own comment by it
and updates that one instead of adding another on every push (``.github/workflows/ci.yml``).

The recommendation is :mod:`lfw.report.recommend`'s (the report's own rule, not a second one), imported only
when a page is written, so ``import lfw.gate`` and ``--help`` stay light.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lfw.gate.ab import ABRun
from lfw.gate.compare import COST_LAYER, Comparison, GateReport
from lfw.gate.metrics import BOUND_SHARE, COUNTED, DATA_WAIT, EFFICIENCY, MEMORY, PIL_SHARE, REQUESTS, TTFB, Metric
from lfw.gate.paired_rule import INCONCLUSIVE, PairedComparison
from lfw.gate.table import (
    fmt_change,
    fmt_ratio,
    fmt_threshold,
    fmt_value,
    machine_diff_text,
    paired_verdict_line,
    verdict_line,
)
from lfw.results import Run, short_name

MARKER = "<!-- lfw-bench-gate -->"
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
TWO_FILE_PATH = Path("reports") / "gate.md"
AB_PATH = Path("reports") / "gate-ab.md"
FOLD_AFTER = 8  # longer lists of cases fold into <details>

STATUS = {0: "no regression", 1: "REGRESSED", 2: "unusable input", 3: "noisy: rerun", 4: "measurement failed",
          5: "INCOMPLETE"}
EXIT_MEANING = {
    0: "no regression",
    1: "regression: each row below names the case, the metric, both sides, the change and the rule",
    2: "unusable input: the gate could not judge what it was asked to",
    3: "A/B inconclusive (noisy: rerun): the pairs could neither show nor rule out a regression; never a silent pass",
    4: "measurement failed: a side crashed or timed out, or valgrind failed",
    5: "incomplete: a baseline case is missing, or nothing was compared; never a pass",
}

# The two-file layers (docs/gating.md) and the metrics each judges; COST_LAYER is GateReport.unjudged's key.
TWO_FILE_LAYERS: dict[str, tuple[Metric, ...]] = {
    COST_LAYER: COUNTED,
    "requests per image (remote)": (REQUESTS,),
    "memory": MEMORY,
    "wall clock, gross (efficiency, time to first batch)": (EFFICIENCY, PIL_SHARE, BOUND_SHARE, TTFB),
    "data wait": (DATA_WAIT,),
}
AB_LAYER = "wall clock, A/B (images/s, time to first batch, paired over process pairs)"
# The layers the other mode judges, named as not judged with where they are.
NOT_IN_TWO_FILE = (AB_LAYER, "no", "-", "not part of a two-file run: `make gate-ab` measures both revisions in one job")
NOT_IN_AB = ("memory, data wait, gross wall clock", "no", "-",
             "not part of an A/B run: `make gate` judges them two-file against the committed baseline")


def cell(text: object) -> str:
    """A table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def md_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    out = [f"| {' | '.join(header)} |", f"|{'|'.join(' --- ' for _ in header)}|"]
    out += [f"| {' | '.join(cell(v) for v in row)} |" for row in rows]
    return out


def case_list(title: str, items: Sequence[str], *, fold: bool = True) -> list[str]:
    """A titled bullet list of cases, folded into ``<details>`` when long and ``fold``."""
    if not items:
        return []
    bullets = [f"- {item}" for item in items]
    if not fold or len(items) <= FOLD_AFTER:
        return [f"{title}:", "", *bullets, ""]
    return [f"<details><summary>{title}</summary>", "", *bullets, "", "</details>", ""]


def headline(mode: str, exit_code: int, line: str, error: str | None = None) -> list[str]:
    """The marker, the status and exit code, the verdict line in bold and what the exit code means."""
    return [MARKER, f"### lfw-bench gate, {mode}: {STATUS.get(exit_code, 'error')} (exit {exit_code})", "",
            f"**{line}**  ", *([f"error: {error}  "] if error else []),
            f"exit {exit_code}: {EXIT_MEANING.get(exit_code, 'error')}", ""]


def layer_table(rows: Sequence[tuple[str, str, str, str]]) -> list[str]:
    return ["#### Layers", "", *md_table(("layer", "judged", "comparisons", "why not"), rows), ""]


def comparison_rows(rows: Sequence[Comparison], improvements: bool = False) -> list[tuple[str, ...]]:
    return [(f"`{short_name(c.case)}`", c.metric.label, fmt_value(c.metric.key, c.metric.unit, c.baseline),
             fmt_value(c.metric.key, c.metric.unit, c.current), fmt_change(c),
             c.improvement_rule if improvements else c.rule) for c in rows]


def recommendation(current: Run | None) -> list[str]:
    """The recommended num_workers per preset, as the report decides it, when the run holds a worker sweep."""
    if current is None:
        return []
    from lfw.report.recommend import GROUP, recommendations  # imported when a page is written: see the docstring

    found = [r for r in recommendations(current) if len(r.candidates) > 1]  # one worker count is no sweep
    if not found:
        return []
    rows = [(r.transform, r.verdict(), r.evidence() if r.paired else f"{r.evidence()} (medians: rounds not paired)")
            for r in found]
    return [f"#### Recommended num_workers (this run's `{GROUP}` group)", "",
            *md_table(("transform", "num_workers", "each count's paired ratio to the best [interval]"), rows), ""]


def charts_beside(summary: Path, since: float) -> list[Path]:
    """PNG charts in the summary's folder written no earlier than ``since`` (the current run's save time), so a
    chart left from an older run is not passed off as this one's."""
    folder = summary.parent
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.png") if p.is_file() and p.stat().st_mtime >= since)


def chart_links(charts: Sequence[Path], summary: Path, hint: str) -> list[str]:
    """Links to the run's charts, relative to the page. In GitHub Actions the page is read as the job summary and
    a pull-request comment, where a relative link leads nowhere: the charts are named, in the uploaded artifact."""
    if not charts:
        return ["#### Charts", "", f"no chart of this run in {summary.parent}/ ({hint})", ""]
    if os.environ.get("GITHUB_ACTIONS") == "true":
        names = ", ".join(f"`{p.name}`" for p in charts)
        return ["#### Charts", "", f"in this job's uploaded `{summary.parent.name}` artifact: {names}", ""]
    links = [f"- [{p.as_posix()}]({os.path.relpath(p, summary.parent)})" for p in charts]
    return ["#### Charts", "", *links, ""]


def two_file_markdown(report: GateReport, baseline: Run, current: Run, summary: Path, *, exit_code: int,
                      error: str | None = None) -> str:
    """The page of a two-file run; ``exit_code`` and ``error`` are the command's (e.g. --require-cost-layer)."""
    lines = headline("two files", exit_code, verdict_line(report), error)
    commit = current.commit.get("id")
    at = f", commit {str(commit)[:10]}{', dirty' if current.commit.get('dirty') else ''}" if commit else ""
    lines += [f"baseline `{baseline.path}` ({len(baseline.cases)} cases); current `{current.path}` "
              f"({len(current.cases)} cases{at})  ", f"compared: {report.metrics_note}", ""]
    rows = []
    for layer, metrics in TWO_FILE_LAYERS.items():
        judged = sum(c.metric in metrics for c in report.comparisons)
        if layer in report.unjudged:
            rows.append((layer, "no", "-", report.unjudged[layer]))
        elif judged:
            rows.append((layer, "yes", str(judged), ""))
        else:
            rows.append((layer, "no", "0", "no case measured it in both runs (see the cases left out or missing)"))
    rows += [(layer, "no", "-", why) for layer, why in report.unjudged.items() if layer not in TWO_FILE_LAYERS]
    rows.append(NOT_IN_TWO_FILE)
    lines += layer_table(rows)
    header = ("case", "metric", "baseline", "current", "change", "minimum effect")
    if report.regressions:
        lines += [f"#### Regressions ({len(report.regressions)})", "",
                  *md_table(header, comparison_rows(report.regressions)), ""]
    improved = [c for c in report.comparisons if c.improved]
    if improved:
        lines += [f"#### Notable improvements ({len(improved)}; reported, not part of the verdict)", "",
                  *md_table((*header[:-1], "the rule the other way"), comparison_rows(improved, True)), ""]
    lines += ["#### Not judged, missing, left out", ""]
    lines += [f"- not judged: {layer}: {why}" for layer, why in report.unjudged.items()]
    lines += [f"- note: {n}" for n in report.notes]
    machine = machine_diff_text(report)
    lines += [f"- machine info differs: {machine}"] if machine else []
    lines.append("")
    lines += case_list(f"**MISSING: {len(report.gaps)} baseline cases this run should have held**",
                       [f"`{short_name(m.case)}`: {m.why}" for m in report.gaps], fold=False)  # the failure
    lines += case_list(f"left out on purpose, not compared: {len(report.narrowed)}",
                       [f"`{short_name(m.case)}`: {m.why}" for m in report.narrowed])
    lines += case_list(f"new cases, in the current run only (not gated): {len(report.new_cases)}",
                       [f"`{short_name(n)}`" for n in report.new_cases])
    lines += recommendation(current)
    lines += chart_links(charts_beside(summary, current.path.stat().st_mtime), summary,
                         f"`python -m lfw.report {current.path} --out {summary.parent}` draws them")
    return "\n".join(lines).rstrip() + "\n"


def paired_rows(rows: Sequence[PairedComparison], counts: Sequence[Comparison],
                improvements: bool = False) -> list[tuple[str, ...]]:
    """A/B rows: wall-clock pairs with their interval, then exact counts (no interval, pairs or p-value)."""
    out: list[tuple[str, ...]] = [
        (f"`{short_name(c.case)}`", c.metric.label, fmt_value(c.metric.key, c.metric.unit, c.base_median),
         fmt_value(c.metric.key, c.metric.unit, c.current_median), fmt_ratio(c),
         f"{c.improvement_bound - 1:+.0%}" if improvements else fmt_threshold(c), str(c.pairs), f"{c.p_holm:.4f}")
        for c in rows]
    out += [(f"`{c.case}`", c.metric.label, fmt_value(c.metric.key, c.metric.unit, c.baseline),
             fmt_value(c.metric.key, c.metric.unit, c.current), f"{fmt_change(c)} (exact count)",
             c.improvement_rule if improvements else c.rule, "-", "-") for c in counts]
    return out


def ab_markdown(run: ABRun, current: Run | None, summary: Path) -> str:
    """The page of an A/B run; ``current`` is its current side as written (for the recommendation)."""
    lines = headline("A/B", run.exit_code, paired_verdict_line(run.verdicts, run.counts))
    tree = "the working tree (uncommitted changes included)" if run.current_dirty else "the working tree"
    lines += [f"base `{run.plan.base_rev}` (`{run.sha[:10]}`) vs {tree}; {run.pairs} process pairs (looks at "
              f"{', '.join(map(str, run.looks))}), seed {run.seed}; runs and verdicts in `{run.out}`", ""]
    layer = f"{COST_LAYER} (both revisions counted in this job)"
    counted = ((layer, "yes", str(len(run.counts)), "") if run.counts else
               (layer, "no", "-", run.counts_unjudged or "no preset counted on both sides"))
    lines += layer_table([(AB_LAYER, "yes" if run.verdicts else "no", str(len(run.verdicts)), ""), counted,
                          NOT_IN_AB])
    confidence = min((c.confidence for c in run.verdicts), default=0.9)
    header = ("case", "metric", "base", "current", f"change [{confidence:.0%} interval]", "minimum effect",
              "pairs", "p (Holm)")
    sections: Mapping[str, tuple[list[PairedComparison], list[Comparison], bool]] = {
        "Regressions": ([c for c in run.verdicts if c.regressed], [c for c in run.counts if c.regressed], False),
        "Inconclusive (noisy: rerun)": ([c for c in run.verdicts if c.verdict == INCONCLUSIVE], [], False),
        "Notable improvements": ([c for c in run.verdicts if c.improved], [c for c in run.counts if c.improved],
                                 True)}
    for title, (paired, counts, better) in sections.items():
        if paired or counts:
            shown = (*header[:5], "the rule the other way", *header[6:]) if better else header
            note = "; reported, not part of the verdict" if better else ""
            lines += [f"#### {title} ({len(paired) + len(counts)}{note})", "",
                      *md_table(shown, paired_rows(paired, counts, better)), ""]
    lines += case_list(f"new cases, not in the base revision (not compared): {len(run.new_cases)}",
                       [f"`{c}`" for c in run.new_cases])
    lines += recommendation(current)
    since = current.path.stat().st_mtime if current is not None else float("inf")
    sides = f"{run.out}/base.json {run.out}/current.json" if run.out else "BASE.json CURRENT.json"
    lines += chart_links(charts_beside(summary, since), summary,
                         f"`python -m lfw.report {sides} --out {summary.parent}` draws both sides")
    return "\n".join(lines).rstrip() + "\n"


def failure_markdown(mode: str, exit_code: int, message: str) -> str:
    """The page of a run that ended without a verdict (a measurement failure): says so, judges nothing."""
    lines = headline(mode, exit_code, f"no verdict: {message}")
    return "\n".join([*lines, "Nothing was judged; the job's log has the details."]) + "\n"


def write_summary(text: str, path: Path, environ: Mapping[str, str] = os.environ) -> list[Path]:
    """Write the page to ``path`` and append it to ``$GITHUB_STEP_SUMMARY`` when set; the paths written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    written = [path]
    step = environ.get(STEP_SUMMARY_ENV)
    if step:
        with open(step, "a") as out:
            out.write(text + "\n")
        written.append(Path(step))
    return written
