"""The gate's verdict as Markdown: what a reviewer reads where they work, in the pull request and the job's page.

Every gate run writes one page (``reports/gate.md``; A/B ``reports/gate-ab.md``; ``--summary-md`` moves it), also
when the gate fails, appended to ``$GITHUB_STEP_SUMMARY`` when set, rendered from the run's
:class:`~lfw.gate.verdict.Verdict` alone (docs/gating.md, "Where the verdict is read"). Its first line is
:data:`MARKER`, the hidden comment by which CI's pull-request comment finds and updates itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lfw.cli.saving import write_atomic
from lfw.cli.sections import Block, Bullets, Fold, Heading, Para, Table, markdown
from lfw.gate.table import AB_HEADER, TWO_FILE_HEADER, comparison_rows
from lfw.gate.verdict import AB, TWO_FILE, Verdict, file_sha256
from lfw.results import short_name

MARKER = "<!-- lfw-bench-gate -->"
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
TWO_FILE_PATH = Path("reports") / "gate.md"
AB_PATH = Path("reports") / "gate-ab.md"
FOLD_AFTER = 8  # longer lists of cases fold into <details>
CHARTS_JSON = "charts.json"  # beside the report's charts: the ones it drew, and for which run (by SHA-256)

STATUS = {0: "no regression", 1: "REGRESSED", 2: "unusable input", 3: "noisy: rerun", 4: "measurement failed",
          5: "INCOMPLETE"}
EXIT_MEANING = {
    0: "no regression",
    1: "regression: each row below names the case, the metric, both sides, the change and the rule",
    2: "unusable input: the gate could not judge what it was asked to",
    3: "A/B inconclusive (noisy: rerun): the pairs could neither show nor rule out a regression; never a silent pass",
    4: "measurement failed: a side crashed or timed out, or valgrind failed",
    5: "incomplete: a baseline case is missing, nothing was compared, or the runs read different images; never a pass",
}


def case_list(title: str, items: Sequence[str], *, alarm: bool = False) -> list[Block]:
    """A titled list of cases, folded when long; an ``alarm`` (the failure) is bold and never folded."""
    if not items:
        return []
    if alarm or len(items) <= FOLD_AFTER:
        return [Para(f"**{title}**:" if alarm else f"{title}:"), Bullets(items)]
    return [Fold(title, [Bullets(items)])]


MODE_NAMES = {TWO_FILE: "two files", AB: "A/B"}


def sides_text(v: Verdict) -> str:
    """``baseline `a.json` (N cases, commit ...); current `b.json` (M cases, commit ..., dirty)``."""
    parts = []
    for name, ident in (("baseline", v.baseline), ("current", v.current)):
        if ident is not None:
            at = f", commit {ident.commit[:10]}{', dirty' if ident.dirty else ''}" if ident.commit else ""
            parts.append(f"{name} `{ident.path}` ({ident.cases} cases{at})")
    return "; ".join(parts)


def verdict_blocks(v: Verdict) -> list[Block]:
    """The verdict: its title (mode, status, exit code), the verdict line in bold and what the exit code means, the
    runs judged, then the parts (:func:`verdict_sections`); a verdict without layers is a run that ended without
    one (:func:`~lfw.gate.verdict_build.failure_verdict`) and says only that."""
    status = f"{STATUS.get(v.exit_code, 'error')} (exit {v.exit_code})"
    facts = [line for line in (sides_text(v) if v.layers else "", v.setup) if line]
    return [Heading(f"lfw-bench gate, {MODE_NAMES.get(v.mode, v.mode)}: {status}", 3),
            Para(f"**{v.headline}**", *([f"error: {v.error}"] if v.error else []),
                 f"exit {v.exit_code}: {EXIT_MEANING.get(v.exit_code, 'error')}"),
            *([Para(*facts)] if facts else []), *verdict_sections(v)]


def verdict_sections(v: Verdict) -> list[Block]:
    """The verdict's parts below the headline and the runs: the layer table, the comparisons, what was not judged
    and the cases missing, left out or new, every case's label and the recommendation."""
    if not v.layers:
        return []
    blocks: list[Block] = [Heading("Layers"), Table(("layer", "judged", "comparisons", "why not"),
                                                    [(r.layer, r.judged, r.comparisons, r.why_not) for r in v.layers])]
    blocks += comparison_sections(v)
    if v.mode == TWO_FILE:
        blocks += two_file_sections(v)
    else:
        blocks += case_list(f"new cases, not in the base revision (not compared): {len(v.new_cases)}",
                            [f"`{short_name(c)}`" for c in v.new_cases])
    if v.cases:
        counts = ", ".join(f"{n} {label}" for label, n in v.label_counts().items())
        rows = [(f"`{short_name(c.case)}`", c.label, c.detail) for c in v.cases]
        blocks += [Heading("Verdict per case"), Para(counts),
                   Fold("every case", [Table(("case", "verdict", "detail"), rows)])]
    if v.recommendation:
        rows = [(r.transform, r.num_workers, r.evidence) for r in v.recommendation]
        blocks += [Heading(f"Recommended num_workers (this run's `{v.recommendation_group}` group)"),
                   Table(("transform", "num_workers", "each count's paired ratio to the best [interval]"), rows)]
    return blocks


def write_chart_list(out: Path, run: Path, charts: Sequence[Path]) -> Path:
    """Record, in ``out/charts.json``, the charts a report drew into ``out`` and the run they show (its path and
    the SHA-256 of its bytes): what the verdict's page links (:func:`charts_drawn`)."""
    doc = {"run": str(run), "sha256": file_sha256(run), "charts": [p.name for p in charts]}
    return write_atomic(out / CHARTS_JSON, json.dumps(doc, indent=1) + "\n")


def charts_drawn(folder: Path, sha256: str | None) -> list[Path]:
    """The PNG charts the report drew into ``folder`` for the run whose bytes have this SHA-256 (the verdict's
    current run), in the report's order, from ``charts.json``; none when it drew none for that run, whatever
    other charts the folder holds or their file times."""
    try:
        doc = json.loads((folder / CHARTS_JSON).read_text())
        drawn = doc["charts"] if sha256 is not None and doc["sha256"] == sha256 else []
    except (OSError, ValueError, KeyError, TypeError):  # no report drew here, or its list is unreadable
        return []
    return [folder / name for name in drawn if str(name).endswith(".png") and (folder / name).is_file()]


def chart_links(charts: Sequence[Path], summary: Path, hint: str) -> list[Block]:
    """Links to the run's charts, relative to the page. In GitHub Actions the page is read as the job summary and
    a pull-request comment, where a relative link leads nowhere: the charts are named, in the uploaded artifact."""
    if not charts:
        return [Heading("Charts"), Para(f"no chart of this run in {summary.parent}/ ({hint})")]
    if os.environ.get("GITHUB_ACTIONS") == "true":
        names = ", ".join(f"`{p.name}`" for p in charts)
        return [Heading("Charts"), Para(f"in this job's uploaded `{summary.parent.name}` artifact: {names}")]
    return [Heading("Charts"), Bullets([f"[{p.as_posix()}]({os.path.relpath(p, summary.parent)})" for p in charts])]


def verdict_markdown(v: Verdict, summary: Path) -> str:
    """The page of a verdict, two files or A/B, rendered from the :class:`Verdict` alone: :data:`MARKER`,
    :func:`verdict_blocks` and links to the run's charts (``charts.json`` beside the page)."""
    blocks = verdict_blocks(v)
    if v.layers:
        if v.mode == TWO_FILE:
            hint = f"`python -m lfw.report {v.current.path if v.current else 'CURRENT.json'} --out {summary.parent}` " \
                   "draws them"
        else:
            sides = " ".join(i.path for i in (v.baseline, v.current) if i is not None) or "BASE.json CURRENT.json"
            hint = f"`python -m lfw.report {sides} --out {summary.parent}` draws both sides"
        blocks += chart_links(charts_drawn(summary.parent, v.current.sha256 if v.current else None), summary, hint)
    return f"{MARKER}\n{markdown(blocks)}"


def comparison_sections(v: Verdict) -> list[Block]:
    """Regressions, inconclusive comparisons (A/B only) and notable improvements, a table each; A/B rows hold the
    wall-clock pairs and the exact counts together."""
    header = AB_HEADER if v.mode == AB else TWO_FILE_HEADER
    sections = {"Regressions": (v.regressions, False), "Inconclusive (noisy: rerun)": (v.inconclusive, False),
                "Notable improvements": (v.improvements, True)}
    blocks: list[Block] = []
    for title, (rows, better) in sections.items():
        if rows:
            shown = (*header[:5], "the rule the other way", *header[6:]) if better else header
            note = "; reported, not part of the verdict" if better else ""
            blocks += [Heading(f"{title} ({len(rows)}{note})"),
                       Table(shown, comparison_rows(rows, better, ab=v.mode == AB))]
    return blocks


def two_file_sections(v: Verdict) -> list[Block]:
    """What was not judged, and the cases missing, left out or new."""
    notes = [*(f"not judged: {layer}: {why}" for layer, why in v.unjudged.items()), *(f"note: {n}" for n in v.notes),
             *([f"machine info differs: {v.machine_diffs}"] if v.machine_diffs else [])]
    blocks: list[Block] = [Heading("Not judged, missing, left out"), *([Bullets(notes)] if notes else [])]
    blocks += case_list(f"MISSING: {len(v.gaps)} baseline cases this run should have held",
                        [f"`{short_name(m.case)}`: {m.why}" for m in v.gaps], alarm=True)
    blocks += case_list(f"left out on purpose, not compared: {len(v.narrowed)}",
                        [f"`{short_name(m.case)}`: {m.why}" for m in v.narrowed])
    blocks += case_list(f"new cases, in the current run only (not gated): {len(v.new_cases)}",
                        [f"`{short_name(n)}`" for n in v.new_cases])
    return blocks


def write_verdict_page(text: str, path: Path, environ: Mapping[str, str] = os.environ) -> list[Path]:
    """Write the page to ``path`` and append it to ``$GITHUB_STEP_SUMMARY`` when set; the paths written."""
    written = [write_atomic(path, text)]
    step = environ.get(STEP_SUMMARY_ENV)
    if step:
        with open(step, "a") as out:
            out.write(text + "\n")
        written.append(Path(step))
    return written
