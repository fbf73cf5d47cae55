"""The gate's verdict as Markdown: what a reviewer reads where they work, in the pull request and the job's page.

Every gate run writes one page (``reports/gate.md``; A/B ``reports/gate-ab.md``; ``--summary-md`` moves it), also
when the gate fails, appended to ``$GITHUB_STEP_SUMMARY`` when set. It is rendered from the run's
:class:`~lfw.gate.verdict.Verdict` alone, never judged again, so it cannot disagree with ``verdict.json``; what it
shows: docs/gating.md, "Where the verdict is read". Its first line is :data:`MARKER`, a hidden HTML comment:
CI's pull-request comment finds its own comment by it and updates that one instead of adding another on every
push (``.github/workflows/ci.yml``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lfw.gate.table import AB_HEADER, TWO_FILE_HEADER, ab_rows, comparison_rows
from lfw.gate.verdict import AB, TWO_FILE, Verdict
from lfw.results import short_name

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


MODE_NAMES = {TWO_FILE: "two files", AB: "A/B"}
def case_table(v: Verdict) -> list[str]:
    """Every case's label with its detail (folded), after a line counting the labels."""
    if not v.cases:
        return []
    counts = ", ".join(f"{n} {label}" for label, n in v.label_counts().items())
    rows = [(f"`{short_name(c.case)}`", c.label, c.detail) for c in v.cases]
    return ["#### Verdict per case", "", f"{counts}  ", "", "<details><summary>every case</summary>", "",
            *md_table(("case", "verdict", "detail"), rows), "", "</details>", ""]


def recommendation(v: Verdict) -> list[str]:
    """The recommended num_workers per preset (the report's rule), when the run holds a worker sweep."""
    if not v.recommendation:
        return []
    rows = [(r.transform, r.num_workers, r.evidence) for r in v.recommendation]
    return [f"#### Recommended num_workers (this run's `{v.recommendation_group}` group)", "",
            *md_table(("transform", "num_workers", "each count's paired ratio to the best [interval]"), rows), ""]


def sides_line(v: Verdict) -> list[str]:
    """``baseline `a.json` (N cases); current `b.json` (M cases, commit ...)``, for the runs the verdict names."""
    parts = []
    for name, ident in (("baseline", v.baseline), ("current", v.current)):
        if ident is None:
            continue
        at = f", commit {ident.commit[:10]}{', dirty' if ident.dirty else ''}" if ident.commit else ""
        parts.append(f"{name} `{ident.path}` ({ident.cases} cases{at if name == 'current' else ''})")
    return [f"{'; '.join(parts)}  "] if parts else []


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


def verdict_markdown(v: Verdict, summary: Path) -> str:
    """The page of a verdict, two files or A/B, rendered from the :class:`Verdict` alone; a verdict without layers
    is a run that ended without one (:func:`~lfw.gate.verdict_build.failure_verdict`) and says only that."""
    lines = headline(MODE_NAMES.get(v.mode, v.mode), v.exit_code, v.headline, v.error)
    if not v.layers:
        return "\n".join([*lines, v.setup]).rstrip() + "\n"
    lines += [*sides_line(v), v.setup, ""]
    lines += ["#### Layers", "", *md_table(("layer", "judged", "comparisons", "why not"),
                                           [(r.layer, r.judged, r.comparisons, r.why_not) for r in v.layers]), ""]
    lines += comparison_sections(v)
    if v.mode == TWO_FILE:
        lines += two_file_sections(v)
    else:
        lines += case_list(f"new cases, not in the base revision (not compared): {len(v.new_cases)}",
                           [f"`{c}`" for c in v.new_cases])
    lines += case_table(v)
    lines += recommendation(v)
    current = Path(v.current.path) if v.current is not None else None
    since = current.stat().st_mtime if current is not None and current.is_file() else float("inf")
    if v.mode == TWO_FILE:
        run = v.current.path if v.current else "CURRENT.json"
        hint = f"`python -m lfw.report {run} --out {summary.parent}` draws them"
    else:
        sides = " ".join(i.path for i in (v.baseline, v.current) if i is not None) or "BASE.json CURRENT.json"
        hint = f"`python -m lfw.report {sides} --out {summary.parent}` draws both sides"
    lines += chart_links(charts_beside(summary, since), summary, hint)
    return "\n".join(lines).rstrip() + "\n"


def comparison_sections(v: Verdict) -> list[str]:
    """Regressions, inconclusive comparisons (A/B only) and notable improvements, a table each; A/B rows hold the
    wall-clock pairs and the exact counts together."""
    header, render = (AB_HEADER, ab_rows) if v.mode == AB else (TWO_FILE_HEADER, comparison_rows)
    sections = {"Regressions": (v.regressions, False), "Inconclusive (noisy: rerun)": (v.inconclusive, False),
                "Notable improvements": (v.improvements, True)}
    lines = []
    for title, (rows, better) in sections.items():
        if rows:
            shown = (*header[:5], "the rule the other way", *header[6:]) if better else header
            note = "; reported, not part of the verdict" if better else ""
            lines += [f"#### {title} ({len(rows)}{note})", "", *md_table(shown, render(rows, better)), ""]
    return lines


def two_file_sections(v: Verdict) -> list[str]:
    """What was not judged, and the cases missing, left out or new."""
    lines = ["#### Not judged, missing, left out", ""]
    lines += [f"- not judged: {layer}: {why}" for layer, why in v.unjudged.items()]
    lines += [f"- note: {n}" for n in v.notes]
    lines += [f"- machine info differs: {v.machine_diffs}"] if v.machine_diffs else []
    lines.append("")
    lines += case_list(f"**MISSING: {len(v.gaps)} baseline cases this run should have held**",
                       [f"`{short_name(m.case)}`: {m.why}" for m in v.gaps], fold=False)  # the failure
    lines += case_list(f"left out on purpose, not compared: {len(v.narrowed)}",
                       [f"`{short_name(m.case)}`: {m.why}" for m in v.narrowed])
    lines += case_list(f"new cases, in the current run only (not gated): {len(v.new_cases)}",
                       [f"`{short_name(n)}`" for n in v.new_cases])
    return lines


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
