"""The report's pages as sections (:mod:`lfw.cli.sections`), so both say the same words: ``reports/README.md``
(findings, every chart, the details) and those of the HTML page (:mod:`lfw.report.html_page`). See docs/reports.md.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from lfw.cli.figures import ChartSpec
from lfw.cli.saving import write_atomic
from lfw.cli.sections import Block, Bullets, Figure, Heading, Item, Para, Section, Table, markdown, slug
from lfw.gate.metrics import reference_group
from lfw.gate.summary import verdict_blocks
from lfw.report.chart_compare import NOT_JUDGED
from lfw.report.chart_knobs import describe
from lfw.report.findings import CV_WARN, Findings, case_cells
from lfw.report.peers import peers_table, verdict_lines
from lfw.report.render import MAIN_CHART, Report
from lfw.report.verdict import ShownVerdict
from lfw.results import Case, Run, knobs, short_name
from lfw.results import keys as K

HISTORY = "history"  # <out>/history/*.png: trend charts across saved runs, drawn by the history command
IMAGE_PREFERENCE = (".png", ".svg")  # what an <img> shows when a chart was written in several (one is, always)
MACHINE_KEYS = ("runner_class", "cpu", "usable_cores", "logical_cpus", "cpu_limit", "affinity_cpus", "cpu_quota",
                "physical_cores", "threads_per_core", "numa_nodes", "cpu_governor", "cpu_fallbacks", "total_memory_gib",
                "python", "torch", "torchvision", "pillow", "numpy", "jpeg_library", "torch_num_threads",
                "cuda_available", "cuda_device", "shm_total_mib", "open_files_limit", "memory_limit_mib",
                "bench_profile", "cache_mode", "dataset_kind", "dataset_files", "worker_cap")
CONFIG_KNOBS = (knobs.BATCH_SIZE, knobs.NUM_WORKERS, knobs.TRANSFORM, knobs.INDEX)
OPTIONAL_KNOBS = (knobs.PIN_MEMORY, knobs.PERSISTENT_WORKERS, knobs.PREFETCH_FACTOR, knobs.START_METHOD)
FOOTER = "Made by `python -m lfw.report`; error bars are the standard deviation over rounds."


def config_text(case: Case) -> str:
    """The configuration of a case in words: the main knobs, and the optional ones only when set."""
    keys = [k.key for k in CONFIG_KNOBS if case.knob(k) is not None] + [k.key for k in OPTIONAL_KNOBS if case.knob(k)]
    return describe(case, keys)


def run_line(run: Run) -> str:
    """The run in one line: its path, date, commit, profile, cache mode and number of cases."""
    facts = [run.datetime or "", f"commit {str(run.commit.get('id') or '?')[:10]}",
             f"profile {run.machine.get('bench_profile', '?')}", f"cache {run.machine.get('cache_mode', '?')}"]
    return f"`{run.path}` ({', '.join(f for f in facts if f)}; {len(run.cases)} cases)"


def findings_section(report: Report) -> Section:
    """``## Findings``: best configuration, recommendation with its evidence, pipeline, remote, memory, noise."""
    f = report.findings
    items: list[str | Item] = []
    if f.skipped_images:
        items.append(f"**Skipped images:** {f.skipped_images}.")
    if f.machine is not None:
        items.append(f"**The machine's CPUs:** {f.machine}.")
    if f.best is not None:
        eff = f.best.number(K.EFFICIENCY)
        eff_text = (f"efficiency {eff:.0%} of its ceiling {f.best.number(K.CEILING_IMAGES_PER_S) or 0:,.0f} "
                    "images/s" if eff is not None else "no ceiling measured")
        items.append(f"**Best configuration:** `{f.best.name}` ({config_text(f.best)}): "
                     f"**{f.best.number(K.IMAGES_PER_S) or 0:,.0f} images/s** (median), {eff_text}.")
    if f.knees:
        confidence = min((c.ratio.confidence for k in f.knees for c in k.candidates if c.ratio), default=None)
        level = f"{confidence:.1%} signed-rank interval" if confidence is not None else "interval"
        rows = [(k.transform, f"**{k.verdict()}**" + ("" if k.paired else " (unpaired rounds: by medians)"),
                 f"{k.best.workers} ({k.best.case.number(K.IMAGES_PER_S) or 0.0:,.0f})", k.evidence())
                for k in f.knees]
        items.append(Item("**Recommended num_workers** (the knee: the fewest workers within 5% of the best, decided "
                          "on paired ratios of the interleaved rounds; each worker count's ratio to the best with "
                          f"its {level}):",
                          [Table(("transform", "recommended workers", "best (images/s)",
                                  "ratio to the best per worker count"), rows, right=(1, 2))]))
    if f.worker_limits:
        limit_rows = [(t, str(w), f"{case.number(K.IMAGES_PER_S) or 0:,.0f}" if case is not None else "-",
                       f"**{limit.kind}**", limit.text.partition(": ")[2] or limit.text)
                      for t, counts in f.worker_limits.items() for w, case, limit in counts]
        items.append(Item("**What limits each worker count** (cores busy from the tree's CPU time, cores given from "
                          "the parallel capacity measured in the same rounds; docs/methodology.md, \"One limit\"):",
                          [Table(("transform", "workers", "images/s", "limited by", "measured"), limit_rows,
                                 right=(1, 2))]))
    if f.one_count:
        items.append(f"**No num_workers recommendation** for {', '.join(f.one_count)}: one worker count was "
                     "measured (see [Left out on this machine](#left-out-on-this-machine)).")
    if f.pipeline is not None:
        items.append(f"**Fastest decode pipeline:** {f.pipeline.sentence()}")
    items += report.accelerators
    if f.remote is not None:
        items.append(f"**Remote storage:** {f.remote.sentence()}")
    names = {K.PSS_GROWTH_MIB: "tree PSS", K.WORKER_USS_MAX_GROWTH_MIB: "USS of one worker"}
    for g in f.growth:
        items.append(f"**Largest memory growth, {names[g.metric]}:** {g.mib:+,.1f} MiB over one pass in "
                     f"`{g.case.name}` ({config_text(g.case)}).")
    items += [f"**Leak check** `{case.name}`: {slopes}." for case, slopes in f.slopes]
    if f.cv is not None:
        med, worst, case = f.cv
        warn = f" (above {CV_WARN:.0%}: treat differences smaller than that as noise)" if worst > CV_WARN else ""
        paired = (f"; of the paired ratio to the group's reference case, median {f.paired_cv:.1%}"
                  if f.paired_cv is not None else "")
        items.append(f"**Noise:** coefficient of variation of images/s over rounds: median {med:.1%}, "
                     f"worst {worst:.1%} in `{case.name}`{warn}{paired}.")
    if report.base is not None:
        names_reg = (f"{NOT_JUDGED} ({report.not_judged})" if report.not_judged
                     else ", ".join(f"`{short_name(v.case)}`" for v in f.regressions) or "none")
        items.append(f"**Regressions against the baseline** `{report.base.path}`: {names_reg} "
                     "(see [Against the baseline](#against-the-baseline)).")
    return Section("Findings", [Bullets(items)] if items else [])


def format_links(files: list[Path], folder: str = "") -> str:
    """``[PNG](workers.png) · [SVG](workers.svg)``: a link per file, its URL ``folder + name`` relative to the page."""
    return " · ".join(f"[{p.suffix.lstrip('.').upper()}]({quote(folder + p.name)})" for p in files)


def charts_list(report: Report) -> Section:
    """``## Charts`` as a list of links, for the Markdown page (the HTML page shows the charts themselves)."""
    items = [f"**{spec.title}** ({format_links(files)}): {spec.shows}." for spec, files in report.charts]
    items += chart_notes(report)
    return Section("Charts", [Bullets(items)] if items else [])


def chart_notes(report: Report) -> list[str]:
    """List items after the drawn charts: each skipped chart and why, and the memory timelines for mprof."""
    items = [f"*{spec.title}*: skipped, this run has no {spec.needs}." for spec in report.skipped]
    if report.mprofiles:
        names = ", ".join(f"[{p.name}](mprof/{quote(p.name)})" for p in report.mprofiles)
        items.append(f"**Memory timelines for memory-profiler** ({names}): tree PSS and mean worker USS over the "
                     f"pass in mprof's format; draw one with `mprof plot {report.mprofiles[0]}`.")
    return items


def verdicts_section(report: Report) -> Section | None:
    """``## Against the baseline``: the gate's verdict per case; None without a baseline."""
    if report.base is None:
        return None
    verdict = report.judged_by or f"{NOT_JUDGED} ({report.not_judged})"
    rows = [(f"`{short_name(v.case)}`", "**regressed**" if v.label == "regressed" else v.label, v.detail)
            for v in report.verdicts]
    return Section("Against the baseline", [Para(f"Baseline {run_line(report.base)}; verdict: {verdict}."),
                                            Table(("case", "verdict", "detail"), rows)])


def peers_section(report: Report) -> Section | None:
    """``## Peers``: the peers group's table and a verdict per peer (:mod:`lfw.report.peers`); None without it."""
    peers = report.findings.peers
    table = peers_table(report.run, peers)
    if table is None:
        return None
    return Section("Peers", [
        Para("The loaders users switch to, measured in one interleaved rotation with DataLoader's best pipelines: "
             "the same images, clock, ceilings and memory accounting (docs/peers.md). Bold rows: DataLoader's best "
             "and each peer at its best setting. Images/s: median of the rounds (their range); CPU of the whole "
             "process tree; the cold first epoch apart; PSS of the tree measured alone at the end of a warm epoch, "
             "and what the loader added to it; share of its own decoder's single-core rate x usable cores; pixels: "
             "the largest per-image mean and single difference from the reference decoder (Pillow), in levels of "
             f"255. {reference_group('peers')}."), table, Bullets(verdict_lines(peers))])


def cases_section(run: Run) -> Section:
    """``## All cases``: the console's per-case table (images/s, CV, efficiency, first batch, PSS growth)."""
    header = ("case", "group", "images/s", "CV", "efficiency", "first batch, ms", "PSS growth, MiB")
    return Section("All cases", [Table(header, [(f"`{c.label}`", c.group, *case_cells(c, "–")) for c in run.cases],
                                       right=range(2, 7))])


def incomplete_section(f: Findings) -> Section | None:
    """``## Incomplete run``, first on the page, when the run stopped early or a case failed."""
    if not f.incomplete:
        return None
    return Section("Incomplete run", [Para(f"**{f.incomplete}.** Its figures cover the cases that ended; no "
                                           "recommendation is drawn from a group that did not finish.")])


def left_out_section(f: Findings) -> Section | None:
    """``## Left out on this machine``: each case beyond the machine's limits and what it needs; None without one."""
    if not f.left_out:
        return None
    return Section("Left out on this machine", [
        Para(f"{len(f.left_out)} cases do not fit this machine's limits and were not run; each line says what the "
             "configuration needs and what to change. Nothing here is recommended."),
        Bullets([f"`{key}`: {reason}" for key, reason in f.left_out])])


def machine_section(run: Run) -> Section:
    """``## Machine``: the machine facts of the run and its single-core ceilings."""
    info = dict(run.machine)
    if isinstance(info.get("cpu"), dict):
        info["cpu"] = info["cpu"].get("brand_raw", "?")
    rows = [(k, info[k]) for k in MACHINE_KEYS if k in info]
    ceilings = [f"{k.removeprefix(K.PER_CORE_MACHINE_PREFIX)} {v:,.0f}" for k, v in info.items()
                if k.startswith(K.PER_CORE_MACHINE_PREFIX) and isinstance(v, int | float)]
    if ceilings:
        rows.append(("single-core images/s", ", ".join(ceilings)))
    return Section("Machine", [Table(None, rows)])


def chart_figure(spec: ChartSpec, files: list[Path]) -> Figure:
    """One chart: the image, then its title, what to read off it, and a link to each format written."""
    shown = min(files, key=lambda p: IMAGE_PREFERENCE.index(p.suffix))
    caption = f"**{spec.title}**: {spec.shows}. ({format_links(files)})"
    return Figure(shown.name, spec.title, caption, f"chart-{spec.stem}")


def charts_section(report: Report) -> Section:
    """``## Charts`` for the HTML page: every chart drawn, with its caption, in drawing order; then the skipped ones."""
    blocks: list[Block] = [chart_figure(spec, files) for spec, files in report.charts]
    if notes := chart_notes(report):
        blocks.append(Bullets(notes))
    if not report.charts:
        blocks.insert(0, Para("No chart: this run has data for none of them."))
    return Section("Charts", blocks)


def history_section(out: Path) -> Section:
    """The charts found under ``<out>/history/*.png`` (sorted and captioned by name; an SVG beside one linked), or a
    sentence saying there are none; nothing is drawn here."""
    folder = out / HISTORY
    pngs = sorted(folder.glob("*.png")) if folder.is_dir() else []
    if not pngs:
        return Section("History", [Para(f"No history charts: `{HISTORY}/` beside this page holds no PNG. The "
                                        "report's `--history` option draws trends across saved runs there.")])
    figures: list[Block] = []
    for png in pngs:
        files = [png, *([svg] if (svg := png.with_suffix(".svg")).is_file() else [])]
        title = png.stem.replace("-", " ").replace("_", " ")
        caption = f"**{title[:1].upper()}{title[1:]}** ({format_links(files, HISTORY + '/')})"
        figures.append(Figure(f"{HISTORY}/{png.name}", title, caption, f"history-{slug(png.stem)}"))
    return Section("History", figures)


def gate_section(shown: ShownVerdict | None) -> Section | None:
    """The gate's verdict of these runs, or the line saying none matches; None when there is neither."""
    if shown is None:
        return None
    if shown.verdict is not None:
        judged = shown.verdict.current.path if shown.verdict.current is not None else "no run"
        return Section("Gate verdict", [Para(f"The gate's verdict of `{judged}`."), *verdict_blocks(shown.verdict)])
    if shown.note:
        return Section("Gate verdict", [Para(shown.note)])
    return None


def html_sections(report: Report, shown: ShownVerdict | None = None) -> list[Block]:
    """The HTML page's sections in reading order: findings, the gate, the baseline, charts, history, cases, machine."""
    f = report.findings
    return present(incomplete_section(f), findings_section(report), peers_section(report), gate_section(shown),
                   verdicts_section(report), charts_section(report), history_section(report.out),
                   cases_section(report.run), left_out_section(f), machine_section(report.run))


def present(*blocks: Block | None) -> list[Block]:
    """The blocks that are there (a section builder gives None when it has nothing to say)."""
    return [b for b in blocks if b is not None]


def markdown_page(report: Report) -> str:
    """The whole page as Markdown."""
    run = report.run
    image = (Para(f"![Seconds per pass and images/s against num_workers]({MAIN_CHART}.png)")
             if any(spec.stem == MAIN_CHART for spec, _ in report.charts) else None)
    return markdown(present(Heading("lfw-bench report", 1), Para(f"Run {run_line(run)}."),
                            incomplete_section(report.findings), image, findings_section(report), peers_section(report),
                            charts_list(report), verdicts_section(report), cases_section(run),
                            left_out_section(report.findings), machine_section(run), Para(FOOTER)))


def write_summary(report: Report) -> Path:
    return write_atomic(report.readme, markdown_page(report))
