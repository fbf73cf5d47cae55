"""The compact table ``make bench`` prints last: a line per case, the headline findings, and the report's path."""

from __future__ import annotations

from collections import Counter

from lfw.cli.table import table
from lfw.gate.verdict import LABELS
from lfw.report.chart_compare import NOT_JUDGED
from lfw.report.findings import case_cells
from lfw.report.peers import verdict_lines
from lfw.report.render import Report
from lfw.results import keys as K
from lfw.results import short_name

COLUMNS = ("case", "group", "img/s", "CV", "eff", "TTFB ms", "PSS+ MiB")


def _dataset_label(report: Report, transform: str) -> str:
    """A preset's name, or the user's dataset (``--bench-dataset``), whose items run as they are."""
    machine = report.run.machine
    user = machine.get("dataset_kind") == "user" and transform == "none"
    return f"{machine.get('dataset_path')} (your dataset)" if user else transform


def console(report: Report) -> str:
    """The table, the headline lines, the verdicts that are not 'unchanged', and the report path."""
    rows = [(c.label, str(c.group), *case_cells(c, "-")) for c in report.run.cases]
    f = report.findings
    out = [f"INCOMPLETE RUN: {f.incomplete}", ""] if f.incomplete else []
    out += [f"SKIPPED IMAGES: {f.skipped_images}", ""] if f.skipped_images else []
    out += [table(COLUMNS, rows, right=range(2, len(COLUMNS))), ""]
    if f.machine is not None:
        out.append(f"CPUs: {f.machine}")
    if f.best is not None:
        out.append(f"best: {f.best.label} ({f.best.group}) {f.best.number(K.IMAGES_PER_S) or 0:,.0f} img/s"
                   + (f", efficiency {f.best.number(K.EFFICIENCY):.0%}" if f.best.number(K.EFFICIENCY) else ""))
    if f.pipeline is not None:
        out.append(f"fastest decode pipeline: {f.pipeline.sentence().replace('`', '')}")
    if f.remote is not None:
        out.append(f"remote storage: {f.remote.sentence().replace('`', '')}")
    if peers := verdict_lines(f.peers):
        out.append("peers (the loaders users switch to; reference rows, never judged by the gate):")
        out += [f"  {line.replace('`', '').replace('**', '')}" for line in peers]
    if f.knees:
        out.append("recommended num_workers (paired ratio to the best per worker count):")
        out += [f"  {_dataset_label(report, k.transform)}: {k.verdict()}  [{k.evidence()}]" for k in f.knees]
    if f.worker_limits:
        out.append("what limits each worker count (cores busy / given):")
        out += [f"  {_dataset_label(report, t)}: " + "; ".join(f"{w} {limit.short()}" for w, _, limit in counts)
                for t, counts in f.worker_limits.items()]
    if f.one_count:
        out.append(f"no num_workers recommendation for {', '.join(f.one_count)}: one worker count measured")
    if f.unfinished:
        out.append(f"no recommendation from groups that did not finish: {', '.join(f.unfinished)}")
    if f.left_out:
        out.append(f"left out, beyond this machine's limits: {len(f.left_out)} cases, e.g. "
                   f"{short_name(f.left_out[0][0])}: {f.left_out[0][1]} (all: {report.readme})")
    if f.cv is not None:
        paired = f"; paired-ratio CV median {f.paired_cv:.1%}" if f.paired_cv is not None else ""
        out.append(f"CV of images/s: median {f.cv[0]:.1%}, worst {f.cv[1]:.1%} ({f.cv[2].label}){paired}")
    if report.base is not None and report.not_judged:
        out.append(f"against {report.base.path.name}: {NOT_JUDGED} ({report.not_judged})")
    elif report.base is not None:
        counts = Counter(v.label for v in report.verdicts)
        tally = ", ".join(f"{counts[label]} {label}" for label in LABELS if counts[label])
        out.append(f"against {report.base.path.name}: {tally or 'no cases in common'}")
        out.append(f"  verdict by {report.judged_by}")
        out += [f"  {v.label}: {short_name(v.case)}: {v.detail}" for v in report.verdicts if v.label != "unchanged"]
    if report.skipped:
        out.append("skipped charts (group not in this run): " + ", ".join(s.stem for s in report.skipped))
    out.append(f"report: {report.readme} ({len(report.charts)} charts); in a browser: {report.index}")
    return "\n".join(out)
