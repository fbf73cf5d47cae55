"""Which charts exist (:func:`dedicated_charts`, each naming the group or records it needs), and drawing them: a run
that lacks a chart's data gets it skipped and named on the summary page; a group no dedicated chart covers still gets
an overview chart, so nothing measured goes undrawn.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from lfw.cli.figures import FORMATS, ChartSpec, save_figure
from lfw.cli.sections import Item
from lfw.errors import LFWError
from lfw.gate.summary import CHARTS_JSON, write_chart_list
from lfw.gate.verdict import CaseVerdict, Verdict
from lfw.report.accelerators import accelerators_section
from lfw.report.chart_bars import decoders_chart, distributed_chart, efficiency_chart, peers_chart
from lfw.report.chart_compare import compare_chart
from lfw.report.chart_knobs import (
    batch_size_chart,
    group_overview,
    pin_memory_chart,
    prefetch_chart,
    start_method_chart,
    workers_chart,
)
from lfw.report.chart_memory import growth_chart, leak_chart, timeline_chart
from lfw.report.chart_remote import remote_chart
from lfw.report.chart_startup import startup_chart
from lfw.report.findings import Findings, find
from lfw.report.mprofile import write_mprofiles
from lfw.results import Run

README = "README.md"
INDEX = "index.html"  # the HTML page beside README.md (lfw.report.html_page)
MAIN_CHART = "workers"
DRAWN_GROUPS = {"workers-transform", "batch-size", "pin-memory", "prefetch", "start-method", "memory-index",
                "leak", "distributed", "decoders", "remote", "startup", "peers"}
COMPARE_STEM = "compare"


def dedicated_charts(found: Findings) -> tuple[ChartSpec, ...]:
    """The charts each drawn from a group or records a run may lack; those that show a decision show ``found``'s."""
    return (
        ChartSpec(MAIN_CHART, "Seconds per pass and images/s against num_workers",
                  "the exercise's errorbar chart, one line per transform; the ring marks the recommended workers",
                  "group 'workers-transform'", functools.partial(workers_chart, knees=found.knees)),
        ChartSpec("batch-size", "Images/s against batch size",
                  "throughput and time to first batch per batch size", "group 'batch-size'", batch_size_chart),
        ChartSpec("pin-memory", "pin_memory on and off",
                  "throughput and time to first batch with and without pinned memory", "group 'pin-memory'",
                  pin_memory_chart),
        ChartSpec("prefetch", "Images/s against prefetch_factor",
                  "what deeper prefetching buys in throughput and costs in first-batch time", "group 'prefetch'",
                  prefetch_chart),
        ChartSpec("start-method", "Time to first batch per start method",
                  "worker start-up cost of fork, forkserver and spawn", "group 'start-method'", start_method_chart),
        ChartSpec("startup", "Time to first batch against the pickled dataset size",
                  "start-up cost of the dataset object handed to each worker, per start method and workers: fork "
                  "shares it, spawn and forkserver pickle it to every worker",
                  "group 'startup' (the full profile runs it)", startup_chart),
        ChartSpec("efficiency", "Efficiency against the ceiling per configuration",
                  "how much of the single-core ceiling times usable cores each configuration reaches",
                  "cases with a measured ceiling (extra_info 'efficiency')", efficiency_chart),
        ChartSpec("memory-timeline", "Tree PSS and worker USS over time, list vs numpy index",
                  "copy-on-access: memory climbing during a pass with a list index, flat with numpy",
                  "group 'memory-index' (or 'index') with a sampled timeline", timeline_chart),
        ChartSpec("memory-growth", "Memory growth per case (RSS, PSS, USS)",
                  "growth over one pass per case of the memory groups (all cases if the run has none); "
                  "RSS stays flat where PSS/USS grow",
                  "cases with memory sampled (extra_info 'pss_growth_mib')", growth_chart),
        ChartSpec("distributed", "Images/s per rank of a distributed run",
                  "each rank's throughput and wait at the collective; the straggler in red",
                  "group 'distributed' (python -m lfw.distributed)", distributed_chart),
        ChartSpec("decoders", "Decode pipelines against the machine's ceilings",
                  "images/s per decoder, storage format and parallelism, with the PIL-path and decode-free "
                  "ceilings; CPU utilization and CPU per image beside them (what stops each pipeline)",
                  "group 'decoders'", decoders_chart),
        ChartSpec("remote", "LFW from S3: images/s against injected latency",
                  "one line per concurrency strategy (its best worker count) with the Little's-law rate and the "
                  "endpoint's zero-latency ceiling; requests in flight beside it",
                  "group 'remote' (--bench-remote)", remote_chart),
        ChartSpec("peers", "The loaders users switch to, beside DataLoader's best",
                  "images/s (error bars: sd over the interleaved rounds) and CPU per image of each peer at its "
                  "best setting, labelled with its paired ratio to DataLoader's best pipeline of the same rotation",
                  "group 'peers' (make peers)", functools.partial(peers_chart, peers=found.peers)),
        ChartSpec("leak", "Memory across epochs", "per-epoch memory of the leak check; a steady climb is a leak",
                  "group 'leak' with per-epoch series in extra_info", leak_chart),
    )


@dataclass
class Report:
    """What one report run produced: the charts written, the ones skipped, the verdicts and the page."""

    run: Run
    out: Path
    base: Run | None = None
    charts: list[tuple[ChartSpec, list[Path]]] = field(default_factory=list)
    skipped: list[ChartSpec] = field(default_factory=list)
    verdicts: list[CaseVerdict] = field(default_factory=list)
    judged_by: str = ""
    not_judged: str = ""  # with a baseline and no verdict judging both runs: why (nothing is said of regressions)
    mprofiles: list[Path] = field(default_factory=list)  # memory timelines for ``mprof plot``

    @functools.cached_property
    def findings(self) -> Findings:
        """The run's :func:`~lfw.report.findings.find`, once for both pages and the console; read after the verdicts."""
        return find(self.run, self.verdicts)

    @functools.cached_property
    def accelerators(self) -> list[Item]:
        """The findings' accelerators-fed item: simulated once per pipeline and step time, shown on both pages."""
        return accelerators_section(self.run)

    @property
    def readme(self) -> Path:
        return self.out / README

    @property
    def index(self) -> Path:
        return self.out / INDEX


def chart_specs(report: Report) -> list[ChartSpec]:
    """The dedicated charts (:func:`dedicated_charts`), one overview per group that none of them draws, and with a
    baseline the comparison, coloured by the report's verdicts."""
    run, base = report.run, report.base
    specs = list(dedicated_charts(report.findings))
    for group in [g for g in run.groups if g not in DRAWN_GROUPS]:
        name = f"group '{group}'" if group is not None else "cases without a group"
        specs.append(ChartSpec(f"group-{re.sub(r'[^A-Za-z0-9_.-]+', '-', group or 'none')}",
                               f"{name[0].upper()}{name[1:]}: each case",
                               f"images/s and time to first batch of every case in {name}", name,
                               functools.partial(group_overview, group=group)))
    if base is not None:
        specs.append(ChartSpec(COMPARE_STEM, "Baseline vs current per case, with the gate's verdicts",
                               f"efficiency (images/s where none) of {base.path.name} and {run.path.name} side by side",
                               "two runs with cases in common",
                               lambda r: compare_chart(base, r, report.verdicts, report.judged_by, report.not_judged)))
    return specs


def check_report_folder(out: Path, inputs: list[Path]) -> None:
    """Refuse an output folder that is a file, or that would overwrite an input (inputs are never touched)."""
    if out.exists() and not out.is_dir():
        raise LFWError(f"--out {out} is a file; give a folder for the report")
    resolved_out = out.resolve()
    for path in inputs:
        written = path.name in (README, INDEX, CHARTS_JSON) or path.suffix.lstrip(".") in FORMATS
        if path.resolve().parent == resolved_out and written:
            raise LFWError(f"the report would overwrite its input {path}; choose another --out")


def build_report(run: Run, out: Path, base: Run | None = None, formats: tuple[str, ...] = FORMATS,
                 verdict: Verdict | None = None) -> Report:
    """Draw every chart the run supports into ``out`` (created), and with ``base`` the comparison, coloured by
    ``verdict``'s labels (the gate's, matched to these runs); list them in ``out/charts.json`` for the gate's page."""
    check_report_folder(out, [run.path, *([base.path] if base else [])])
    out.mkdir(parents=True, exist_ok=True)
    report = Report(run, out, base)
    if base is not None:
        if verdict is not None and verdict.judged_by:
            report.verdicts, report.judged_by = list(verdict.cases), verdict.judged_by
        else:  # none matched, or the gate's own "no verdict" (an incomplete run): it judged nothing
            report.not_judged = verdict.headline if verdict is not None else "no gate verdict of these runs"
    for spec in chart_specs(report):  # after the verdicts: the findings count the regressions
        fig = spec.draw(run)
        if fig is None:
            report.skipped.append(spec)
            _remove_stale(out, spec.stem, formats)
            continue
        report.charts.append((spec, save_figure(fig, out, spec.stem, formats)))
    if base is None:
        _remove_stale(out, COMPARE_STEM, formats)
    report.mprofiles = write_mprofiles(run, out)
    write_chart_list(out, run.path, [p for _, paths in report.charts for p in paths])
    return report


def _remove_stale(out: Path, stem: str, formats: tuple[str, ...]) -> None:
    """Delete a chart a previous report left under one of our own names, so no old chart is mistaken for new."""
    for fmt in formats:
        (out / f"{stem}.{fmt}").unlink(missing_ok=True)
