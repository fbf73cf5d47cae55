"""The summary page, ``reports/README.md``: findings first, then every chart, then the details.

A reader opening the folder (or the CI artifact) should learn in ten seconds which configuration to use,
how many workers, whether memory grows, whether anything regressed and how far to trust the numbers.
This module owns the page's words: each section is a public function returning Markdown lines, and the HTML
page (:mod:`lfw.report.html_page`) shows the same sections converted, so the two pages cannot disagree.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from lfw.cli.saving import write_atomic
from lfw.gate.metrics import reference_group
from lfw.report.chart_compare import NOT_JUDGED
from lfw.report.findings import CV_WARN, Findings, case_cells
from lfw.report.legend import describe
from lfw.report.peers import peers_table, verdict_lines
from lfw.report.render import MAIN_CHART, Report
from lfw.results import Case, Run, short_name
from lfw.results import keys as K

MACHINE_KEYS = ("runner_class", "cpu", "usable_cores", "logical_cpus", "total_memory_gib", "python", "torch",
                "torchvision", "pillow", "numpy", "jpeg_library", "torch_num_threads", "cuda_available",
                "cuda_device", "shm_total_mib", "open_files_limit", "memory_limit_mib", "bench_profile", "cache_mode",
                "dataset_kind", "dataset_files", "worker_cap")
CONFIG_KEYS = ("batch_size", "num_workers", K.TRANSFORM, "index")
OPTIONAL_KEYS = ("pin_memory", "persistent_workers", "prefetch_factor", "start_method")
FOOTER = "Made by `python -m lfw.report`; error bars are the standard deviation over rounds."


def knobs(case: Case) -> str:
    """The configuration of a case in words: the main knobs, and the optional ones only when set."""
    keys = [k for k in CONFIG_KEYS if case.value(k) is not None] + [k for k in OPTIONAL_KEYS if case.value(k)]
    return describe(case, keys)


def run_line(run: Run) -> str:
    """The run in one line: its path, date, commit, profile, cache mode and number of cases."""
    facts = [run.datetime or "", f"commit {str(run.commit.get('id') or '?')[:10]}",
             f"profile {run.machine.get('bench_profile', '?')}", f"cache {run.machine.get('cache_mode', '?')}"]
    return f"`{run.path}` ({', '.join(f for f in facts if f)}; {len(run.cases)} cases)"


def findings_section(report: Report) -> list[str]:
    """``## Findings``: best configuration, recommendation with its evidence, pipeline, remote, memory, noise."""
    f = report.findings
    lines = ["## Findings", ""]
    if f.skipped_images:
        lines.append(f"- **Skipped images:** {f.skipped_images}.")
    if f.best is not None:
        eff = f.best.number(K.EFFICIENCY)
        eff_text = (f"efficiency {eff:.0%} of its ceiling {f.best.number('ceiling_images_per_s') or 0:,.0f} "
                    "images/s" if eff is not None else "no ceiling measured")
        lines.append(f"- **Best configuration:** `{f.best.name}` ({knobs(f.best)}): "
                     f"**{f.best.number('images_per_s') or 0:,.0f} images/s** (median), {eff_text}.")
    if f.knees:
        confidence = min((c.ratio.confidence for k in f.knees for c in k.candidates if c.ratio), default=None)
        level = f"{confidence:.1%} signed-rank interval" if confidence is not None else "interval"
        lines.append("- **Recommended num_workers** (the knee: the fewest workers within 5% of the best, decided on "
                     f"paired ratios of the interleaved rounds; each worker count's ratio to the best with its "
                     f"{level}):")
        lines += ["", "  | transform | recommended workers | best (images/s) | ratio to the best per worker count |",
                  "  |---|---:|---:|---|"]
        for k in f.knees:
            rate = k.best.case.number(K.IMAGES_PER_S) or 0.0
            paired = "" if k.paired else " (unpaired rounds: by medians)"
            lines.append(f"  | {k.transform} | **{k.verdict()}**{paired} | {k.best.workers} ({rate:,.0f}) "
                         f"| {k.evidence()} |")
        lines.append("")
    if f.one_count:
        lines.append(f"- **No num_workers recommendation** for {', '.join(f.one_count)}: one worker count was "
                     "measured (see [Left out on this machine](#left-out-on-this-machine)).")
    if f.pipeline is not None:
        lines.append(f"- **Fastest decode pipeline:** {f.pipeline.sentence()}")
    lines += report.accelerators
    if f.remote is not None:
        lines.append(f"- **Remote storage:** {f.remote.sentence()}")
    names = {K.PSS_GROWTH_MIB: "tree PSS", K.WORKER_USS_MAX_GROWTH_MIB: "USS of one worker"}
    for g in f.growth:
        lines.append(f"- **Largest memory growth, {names[g.metric]}:** {g.mib:+,.1f} MiB over one pass in "
                     f"`{g.case.name}` ({knobs(g.case)}).")
    for case, slopes in f.slopes:
        lines.append(f"- **Leak check** `{case.name}`: {slopes}.")
    if f.cv is not None:
        med, worst, case = f.cv
        warn = f" (above {CV_WARN:.0%}: treat differences smaller than that as noise)" if worst > CV_WARN else ""
        paired = (f"; of the paired ratio to the group's reference case, median {f.paired_cv:.1%}"
                  if f.paired_cv is not None else "")
        lines.append(f"- **Noise:** coefficient of variation of images/s over rounds: median {med:.1%}, "
                     f"worst {worst:.1%} in `{case.name}`{warn}{paired}.")
    if report.base is not None:
        names_reg = (f"{NOT_JUDGED} ({report.not_judged})" if report.not_judged
                     else ", ".join(f"`{short_name(v.case)}`" for v in f.regressions) or "none")
        lines.append(f"- **Regressions against the baseline** `{report.base.path}`: {names_reg} "
                     "(see [Against the baseline](#against-the-baseline)).")
    return [*lines, ""]


def format_links(files: list[Path], folder: str = "") -> str:
    """``[PNG](workers.png) · [SVG](workers.svg)``: a link per file, its URL ``folder + name`` relative to the page."""
    return " · ".join(f"[{p.suffix.lstrip('.').upper()}]({quote(folder + p.name)})" for p in files)


def _charts(report: Report) -> list[str]:
    lines = ["## Charts", ""]
    for spec, files in report.charts:
        lines.append(f"- **{spec.title}** ({format_links(files)}): {spec.shows}.")
    return [*lines, *chart_notes(report), ""]


def chart_notes(report: Report) -> list[str]:
    """List items after the drawn charts: each skipped chart and why, and the memory timelines for mprof."""
    lines = []
    for spec in report.skipped:
        lines.append(f"- *{spec.title}*: skipped, this run has no {spec.needs}.")
    if report.mprofiles:
        names = ", ".join(f"[{p.name}](mprof/{p.name})" for p in report.mprofiles)
        example = report.mprofiles[0]
        lines.append(f"- **Memory timelines for memory-profiler** ({names}): tree PSS and mean worker USS over the "
                     f"pass in mprof's format; draw one with `mprof plot {example}`.")
    return lines


def verdicts_section(report: Report) -> list[str]:
    """``## Against the baseline``: the gate's verdict per case; no lines without a baseline."""
    if report.base is None:
        return []
    verdict = report.judged_by or f"{NOT_JUDGED} ({report.not_judged})"
    lines = ["## Against the baseline", "", f"Baseline {run_line(report.base)}; verdict: {verdict}.",
             "", "| case | verdict | detail |", "|---|---|---|"]
    lines += [f"| `{short_name(v.case)}` | {'**regressed**' if v.label == 'regressed' else v.label} | {v.detail} |"
              for v in report.verdicts]
    return [*lines, ""]


def peers_section(run: Run) -> list[str]:
    """``## Peers``: each loader users switch to at its best, beside DataLoader's best of the same rotation, the
    verdict per peer and every case of the group (:mod:`lfw.report.peers`); nothing without the group."""
    table = peers_table(run)
    if not table:
        return []
    return ["## Peers", "", "The loaders users switch to, measured in one interleaved rotation with DataLoader's "
            "best pipelines: the same images, clock, ceilings and memory accounting (docs/peers.md). Bold rows: "
            "DataLoader's best and each peer at its best setting. Images/s: median of the rounds (their range); "
            "CPU of the whole process tree; the cold first epoch apart; PSS of the tree measured alone at the end "
            "of a warm epoch, and what the loader added to it; share of its own decoder's single-core rate x usable "
            "cores; pixels: the largest per-image mean and single difference from the reference decoder (Pillow), "
            f"in levels of 255. {reference_group('peers')}.", "", *table, "",
            *(f"- {line}" for line in verdict_lines(run)), ""]


def cases_section(run: Run) -> list[str]:
    """``## All cases``: the console's per-case table (images/s, CV, efficiency, first batch, PSS growth)."""
    lines = ["## All cases", "", "| case | group | images/s | CV | efficiency | first batch, ms | PSS growth, MiB |",
             "|---|---|---:|---:|---:|---:|---:|"]
    lines += [f"| `{c.label}` | {c.group} | {' | '.join(case_cells(c, '–'))} |" for c in run.cases]
    return [*lines, ""]


def incomplete_section(f: Findings) -> list[str]:
    """``## Incomplete run``, first on the page, when the run stopped early or a case failed."""
    if not f.incomplete:
        return []
    return ["## Incomplete run", "", f"**{f.incomplete}.** Its figures cover the cases that ended; no "
            "recommendation is drawn from a group that did not finish.", ""]


def left_out_section(f: Findings) -> list[str]:
    """``## Left out on this machine``: each case beyond the machine's /dev/shm, open files or memory, and what it
    needs (what your own configuration would need too)."""
    if not f.left_out:
        return []
    return ["## Left out on this machine", "",
            f"{len(f.left_out)} cases do not fit this machine's limits and were not run; each line says what the "
            "configuration needs and what to change. Nothing here is recommended.", "",
            *(f"- `{key}`: {reason}" for key, reason in f.left_out), ""]


def machine_section(run: Run) -> list[str]:
    """``## Machine``: the machine facts of the run and its single-core ceilings."""
    info = dict(run.machine)
    if isinstance(info.get("cpu"), dict):
        info["cpu"] = info["cpu"].get("brand_raw", "?")
    lines = ["## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {info[k]} |" for k in MACHINE_KEYS if k in info]
    ceilings = [f"{k.removeprefix(K.PER_CORE_MACHINE_PREFIX)} {v:,.0f}" for k, v in info.items()
                if k.startswith(K.PER_CORE_MACHINE_PREFIX) and isinstance(v, int | float)]
    if ceilings:
        lines.append(f"| single-core images/s | {', '.join(ceilings)} |")
    return [*lines, ""]


def markdown(report: Report) -> str:
    """The whole page as markdown."""
    run = report.run
    lines = ["# lfw-bench report", "", f"Run {run_line(run)}.", ""]
    lines += incomplete_section(report.findings)
    if any(spec.stem == MAIN_CHART for spec, _ in report.charts):
        lines += [f"![Seconds per pass and images/s against num_workers]({MAIN_CHART}.png)", ""]
    lines += findings_section(report)
    lines += peers_section(run) + _charts(report) + verdicts_section(report) + cases_section(run)
    lines += left_out_section(report.findings)
    lines += machine_section(run)
    lines.append(FOOTER)
    return "\n".join(lines) + "\n"


def write_summary(report: Report) -> Path:
    return write_atomic(report.readme, markdown(report))
