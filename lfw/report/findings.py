"""The headline numbers of a run, found once (:func:`find`) for both pages, the console and the decision charts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import median

from lfw.gate.verdict import CaseVerdict
from lfw.report.peers import PeerRows, peer_rows
from lfw.report.pipelines import PipelineVerdict, pipeline_verdict
from lfw.report.remote import RemoteVerdict, remote_verdict
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.limits import Limiter, capacity_trusted, left_out_limit, machine_line, what_limits
from lfw.results.ratios import ratio_cv
from lfw.results.recommend import GROUP as WORKERS_GROUP
from lfw.results.recommend import Recommendation, recommendations, scaling_cases

CV_WARN = 0.10  # pyperf warns when the standard deviation exceeds 10% of the mean
# The per-case cells of the console's table and the page's "All cases", each as its key's declaration writes it.
CASE_CELLS = (K.IMAGES_PER_S, K.IMAGES_PER_S_CV, K.EFFICIENCY, K.TTFB_S, K.PSS_GROWTH_MIB)


@dataclass(frozen=True)
class Growth:
    metric: str
    mib: float
    case: Case


@dataclass(frozen=True)
class Findings:
    best: Case | None
    knees: list[Recommendation]
    growth: list[Growth]
    cv: tuple[float, float, Case] | None
    paired_cv: float | None = None
    regressions: list[CaseVerdict] = field(default_factory=list)
    slopes: list[tuple[Case, str]] = field(default_factory=list)
    pipeline: PipelineVerdict | None = None
    remote: RemoteVerdict | None = None
    incomplete: str | None = None  # why the run is not whole (Run.incomplete)
    unfinished: tuple[str, ...] = ()  # groups with a case that failed or never ran: no recommendation from them
    left_out: tuple[tuple[str, str], ...] = ()  # (case key, what it needs) for cases beyond this machine's limits
    one_count: tuple[str, ...] = ()  # transforms measured at a single worker count: no knee to recommend
    skipped_images: str | None = None  # the unreadable images the run left out, in words (skipped_images_text)
    peers: PeerRows = (None, [])  # DataLoader's best of the peers group and each peer at its best (peer_rows)
    machine: str | None = None  # the CPUs and the capacity the rotations measured, in one line (machine_line)
    # Per transform of the workers group, each worker count measured or left out and what limits it (worker_limits)
    worker_limits: dict[str, list[tuple[int, Case | None, Limiter]]] = field(default_factory=dict)


def case_cells(case: Case, missing: str) -> list[str]:
    """Images/s, CV, efficiency, time to first batch in ms and PSS growth of a case; ``missing`` where absent."""
    return [K.FACTS[key].cell(v) if (v := case.number(key)) is not None else missing for key in CASE_CELLS]


def is_loader_case(case: Case) -> bool:
    """A case that loads LFW images (it has a ceiling), not an index-only memory or leak experiment."""
    return case.number(K.EFFICIENCY) is not None or case.number(K.PIL_CEILING_SHARE) is not None


def best_case(cases: Iterable[Case]) -> Case | None:
    """The image-loading case with the highest median images/s (index-only memory cases do not count)."""
    rated = [c for c in cases if c.number(K.IMAGES_PER_S) is not None and is_loader_case(c)]
    return max(rated, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0) if rated else None


def cv_spread(cases: Iterable[Case]) -> tuple[float, float, Case] | None:
    """Median and worst coefficient of variation of images/s over image-loading cases of two or more rounds (one
    round has no spread; the memory experiments' images/s is not what they measure)."""
    with_cv = [(cv, c) for c in cases if (cv := c.number(K.IMAGES_PER_S_CV)) is not None and is_loader_case(c)
               and (c.number(K.ROUNDS) or 0) >= 2]
    if not with_cv:
        return None
    worst_cv, worst = max(with_cv, key=lambda item: item[0])
    return median(cv for cv, _ in with_cv), worst_cv, worst


def largest_growth(run: Run) -> list[Growth]:
    """The largest tree-PSS growth and the largest per-worker USS growth over one pass, with their cases."""
    found = []
    for metric in (K.PSS_GROWTH_MIB, K.WORKER_USS_MAX_GROWTH_MIB):
        rated = [(c.number(metric), c) for c in run.cases if c.number(metric) is not None]
        if rated:
            mib, case = max(rated, key=lambda item: item[0] or 0.0)
            found.append(Growth(metric, mib or 0.0, case))
    return found


def leak_slopes(run: Run) -> list[tuple[Case, str]]:
    """Per leak-check case: its median epoch-to-epoch steps (what the verdict judges), then its slopes."""
    found = []
    for case in run.cases:
        steps = [f"{k} {v:+.2f}" for k in K.MEDIAN_STEPS if (v := case.number(k)) is not None]
        slopes = [f"{k} {v:+.2f}" for k in K.SLOPES if (v := case.number(k)) is not None]
        slopes = steps + (["least-squares " + ", ".join(slopes)] if steps and slopes else slopes)
        if slopes:
            verdict = case.extra.get(K.LEAK_VERDICT)
            threshold = case.number(K.LEAK_THRESHOLD)
            found.append((case, ", ".join(slopes)
                          + (f" (threshold {threshold:g} MiB/epoch)" if threshold is not None else "")
                          + (f": **{verdict}**" if verdict is not None else "")))
    return found


def paired_cv(run: Run) -> float | None:
    """Median CV of the per-round ratio of each rotated case to its group's first case of the same transform (how
    much of the round-to-round noise the pairing removes)."""
    values = []
    for group in run.groups:
        cases = [c for c in run.group(group) if is_loader_case(c)]
        for case in cases:
            reference = next(c for c in cases if c.knob(KN.TRANSFORM) == case.knob(KN.TRANSFORM))
            if (cv := ratio_cv(case, reference)) is not None:
                values.append(cv)
    return median(values) if values else None


def left_out(run: Run) -> tuple[tuple[str, str], ...]:
    """(case key, what it needs) of each case left out for not fitting the machine's /dev/shm, open files or memory."""
    if run.selection is None:
        return ()
    return tuple((k, o.reason) for k, o in run.selection.outcomes.items() if o.limit)


def skipped_images_text(run: Run) -> str | None:
    """How many unreadable images the run left out and the first few (the skip option), or None."""
    count, names = run.skipped_images
    if not count:
        return None
    listed = ", ".join(names) + (", ..." if count > len(names) else "")
    return (f"{count:,} unreadable images ({listed}) were left out: the run read fewer images than its data holds, "
            "and the gate compares it only with a run that skipped as many")


def worker_limits(run: Run) -> dict[str, list[tuple[int, Case | None, Limiter]]]:
    """What limits each worker count of the workers group, per transform (:func:`lfw.results.limits.what_limits`),
    a count the machine could not run included as a resource (its case None)."""
    trusted = capacity_trusted(run)
    found: dict[str, list[tuple[int, Case | None, Limiter]]] = {
        t: [(c.knob(KN.NUM_WORKERS, 0), c, what_limits(c, trusted=trusted)) for c in cases]
        for t, cases in scaling_cases(run).items()}
    prefix = f"{WORKERS_GROUP}/"
    if not any(k.startswith(prefix) and o.limit for k, o in (run.selection.outcomes.items() if run.selection else ())):
        return found
    from lfw.suite.matrix import GROUPS  # imports torch: only for a run that left a worker count out

    for case in GROUPS[WORKERS_GROUP].cases:
        limit = left_out_limit(run, prefix + case.id)
        if limit is not None and case.transform in found:
            found[case.transform].append((case.config.num_workers, None, limit))
    return {t: sorted(rows, key=lambda row: row[0]) for t, rows in found.items()}


def find(run: Run, verdicts: list[CaseVerdict] | None = None) -> Findings:
    """The headline numbers; a group that did not finish (a case failed or never ran) gives no recommendation."""
    regressions = [v for v in verdicts or [] if v.label == "regressed"]
    unfinished = tuple(run.selection.unfinished_groups) if run.selection is not None else ()
    knees = [] if "workers-transform" in unfinished else recommendations(run)
    pipeline = None if "decoders" in unfinished else pipeline_verdict(run)
    remote = None if "remote" in unfinished else remote_verdict(run)
    one_count = tuple(t for t, cases in scaling_cases(run).items() if len(cases) == 1)
    return Findings(best_case(run.cases), knees, largest_growth(run), cv_spread(run.cases), paired_cv(run),
                    regressions, leak_slopes(run), pipeline, remote, run.incomplete, unfinished, left_out(run),
                    one_count, skipped_images_text(run), peer_rows(run), machine_line(run), worker_limits(run))
