"""``python -m lfw.gate BASELINE.json CURRENT.json`` or ``--ab REV``; rule and exit codes:
:data:`lfw.gate.thresholds.RULE_TEXT`. Every verdict (and a failed A/B measurement) is written as JSON and
Markdown (:func:`publish`); a usage error writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lfw.cli.args import OneLineParser
from lfw.errors import EXIT_MEASUREMENT, LFWError, MeasurementError, cli_entry
from lfw.gate.ab import DEFAULT_CASES, ABPlan, parse_cases, run_ab
from lfw.gate.bisect import bisect_command
from lfw.gate.compare import EXIT_INCOMPLETE, compare_runs, different_images
from lfw.gate.metrics import COST_LAYER
from lfw.gate.summary import AB_PATH, TWO_FILE_PATH, verdict_markdown, write_verdict_page
from lfw.gate.table import machine_diff_text, render, render_paired
from lfw.gate.thresholds import RULE_TEXT, Thresholds
from lfw.gate.verdict import AB, AB_VERDICT_PATH, TWO_FILE, VERDICT_PATH, Verdict
from lfw.gate.verdict_build import ab_verdict, failure_verdict, two_file_verdict
from lfw.gate.worktree import sigterm_as_interrupt
from lfw.results import load_run

DESCRIPTION = """\
Regression gate for lfw-bench, in two modes (the layers and the rule: below).

Two files (BASELINE.json CURRENT.json, pytest-benchmark runs saved with per-round data): every case matched on
its group and test id; a baseline case the run should have held but does not is a gap (exit 5).

A/B (--ab REV): the base revision and the working tree, interleaved pass by pass in pairs of fresh processes,
then instructions per image of both sides."""

EPILOG = f"""{RULE_TEXT}

examples:
  python -m lfw.gate benchmarks/baselines/cpu-2core.json reports/gate-run.json
  python -m lfw.gate --ab origin/main
  python -m lfw.gate --ab HEAD~1 -k 'workers0-uint8, workers2-none' --max-pairs 16"""


# Every Thresholds field as a flag: (field, flag, metavar, what it is).
THRESHOLD_FLAGS = (
    ("cost", "--cost-threshold", "FRACTION", "rise of instructions per image"),
    ("efficiency", "--efficiency-threshold", "FRACTION", "two-file drop of efficiency"),
    ("ttfb", "--ttfb-threshold", "FRACTION", "two-file rise of time to first batch"),
    ("ttfb_floor_ms", "--ttfb-floor-ms", "MS", "... and its rise in milliseconds"),
    ("memory_floor_mib", "--memory-floor-mib", "MIB", "rise of tree PSS growth or peak added"),
    ("worker_floor_mib", "--worker-floor-mib", "MIB", "rise of worker USS or its growth"),
    ("memory_ratio", "--memory-ratio", "FRACTION", "... and of |baseline| x this"),
    ("slope_floor_mib", "--slope-floor-mib", "MIB", "rise of a leak check's median step per epoch"),
    ("wait_floor", "--wait-floor", "FRACTION", "rise of the data-wait fraction over its prediction"),
    ("wait_ratio", "--wait-ratio", "FRACTION", "... and of the baseline fraction x this"),
    ("ab_throughput", "--ab-throughput-threshold", "FRACTION", "A/B drop of images/s"),
    ("ab_ttfb", "--ab-ttfb-threshold", "FRACTION", "A/B rise of time to first batch"),
    ("alpha", "--alpha", "ALPHA", "A/B false-alarm rate per run"),
)


def build_parser() -> argparse.ArgumentParser:
    d, plan = Thresholds(), ABPlan("")
    p = OneLineParser(prog="python -m lfw.gate", description=DESCRIPTION, epilog=EPILOG,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("baseline", nargs="?", type=Path, help="baseline run (e.g. benchmarks/baselines/<runner>.json)")
    p.add_argument("current", nargs="?", type=Path, help="current run to judge")
    p.add_argument("--mode", choices=("auto", "absolute", "portable"), default="auto",
                   help="auto (default): efficiency and memory only when runner class or cores differ")
    p.add_argument("--require-cost-layer", action="store_true",
                   help="exit 2 when the cost layer cannot be judged (CI runners that install valgrind)")
    t = p.add_argument_group("minimum effects (see the decision rule below)")
    for name, flag, metavar, what in THRESHOLD_FLAGS:
        t.add_argument(flag, dest=name, type=float, default=getattr(d, name), metavar=metavar,
                       help=f"{what} (default {getattr(d, name):g})")
    b = p.add_argument_group("bisect")
    b.add_argument("--bisect", nargs=2, metavar=("GOOD", "BAD"),
                   help="the first commit between GOOD and BAD whose instructions per image moved beyond "
                        "--cost-threshold, each step counted under valgrind in a temporary worktree")
    ab = p.add_argument_group("A/B mode")
    ab.add_argument("--ab", metavar="BASE_REV", help="measure BASE_REV against the working tree, pass-interleaved")
    ab.add_argument("-k", dest="cases", default=None,
                    help=f"case ids, comma- or 'or'-separated (A/B default {', '.join(DEFAULT_CASES)}; --bisect "
                         "default: every cost preset)")
    for name, what in (("min_pairs", "first look"), ("max_pairs", "pair budget"),
                       ("look_every", "pairs between looks")):
        ab.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(plan, name),
                        help=f"{what} (default {getattr(plan, name)})")
    ab.add_argument("--bench-profile", default=plan.profile, help="pass lengths: smoke, quick (default), full")
    ab.add_argument("--seed", type=int, help="schedule seed (default: random, recorded in the output)")
    ab.add_argument("--no-counts", action="store_true",
                    help="skip the cost layer (instructions per image of both sides under valgrind, ~2 min)")
    ab.add_argument("--ab-out", type=Path, help="new folder for the runs, logs and verdicts "
                                                "(default .benchmarks/ab/<time>-<base sha>/)")
    o = p.add_argument_group("output")
    o.add_argument("--all", action="store_true", help="print every two-file comparison, not only regressions")
    o.add_argument("--summary-md", type=Path, metavar="PATH",
                   help=f"the verdict as Markdown (default {TWO_FILE_PATH}, A/B {AB_PATH}), written whatever the "
                        "verdict and appended to $GITHUB_STEP_SUMMARY when set")
    o.add_argument("--verdict-json", type=Path, metavar="PATH",
                   help=f"the verdict as JSON, what the report reads (default beside the Markdown page: "
                        f"{VERDICT_PATH.name}, A/B {AB_VERDICT_PATH.name}), written whatever the verdict")
    o.add_argument("--accept-missing", action="append", default=[], metavar="PATTERN",
                   help="accept baseline cases missing from the run (a removal): group/id or test name, shell "
                        "wildcards allowed, repeatable; refreshing the baseline is the lasting fix")
    return p


def publish(verdict: Verdict, args: argparse.Namespace) -> None:
    """Write the verdict as JSON and as the Markdown page rendered from it (see the module docstring)."""
    summary = args.summary_md or (AB_PATH if verdict.mode == AB else TWO_FILE_PATH)
    default = AB_VERDICT_PATH if verdict.mode == AB else VERDICT_PATH
    verdict.write(args.verdict_json or summary.parent / default.name)
    write_verdict_page(verdict_markdown(verdict, summary), summary)


def main_ab(args: argparse.Namespace, th: Thresholds) -> int:
    if args.baseline or args.current:
        raise LFWError("--ab takes no baseline or current file: it measures both sides itself")
    cases = parse_cases(args.cases or ", ".join(DEFAULT_CASES))
    plan = ABPlan(args.ab, cases, args.min_pairs, args.max_pairs, args.look_every, args.bench_profile, args.seed,
                  count=not args.no_counts)
    with sigterm_as_interrupt():  # SIGTERM unwinds through run_ab's clean-up: sides stopped, worktree removed
        try:
            run = run_ab(plan, Path.cwd(), th, args.ab_out)
        except MeasurementError as exc:  # no verdict, but the page must not keep saying the last push's
            publish(failure_verdict(AB, EXIT_MEASUREMENT, str(exc)), args)
            raise
    sides = [run.out / name if run.out else None for name in ("base.json", "current.json")]
    base, current = (load_run(p) if p is not None and p.is_file() else None for p in sides)
    verdict = ab_verdict(run, base, current, th)
    header = f"A/B: {verdict.setup}"
    if run.new_cases:
        header += f"\nnew cases, not in the base revision (not compared): {', '.join(run.new_cases)}"
    print(render_paired(verdict, header=header))
    publish(verdict, args)
    return run.exit_code


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    th = Thresholds(**{name: getattr(args, name) for name, *_ in THRESHOLD_FLAGS})
    if args.bisect:
        return bisect_command(*args.bisect, cases=args.cases, threshold=th.cost)
    if args.ab:
        return main_ab(args, th)
    if not (args.baseline and args.current):
        raise LFWError("need BASELINE.json and CURRENT.json, or --ab BASE_REV (see python -m lfw.gate --help)")
    baseline, current = load_run(args.baseline), load_run(args.current)
    # Part of a run would read as cases removed, or as a run that passed; runs over different images do other work.
    message = next((f"the {side} run {run.path} is incomplete ({run.stopped_early}); rerun it whole"
                    for side, run in (("current", current), ("baseline", baseline)) if run.stopped_early),
                   None) or different_images(baseline, current)
    if message is not None:
        publish(failure_verdict(TWO_FILE, EXIT_INCOMPLETE, message, (baseline, current)), args)
        print(f"error: {message}", file=sys.stderr)
        return EXIT_INCOMPLETE
    print(f"baseline: {args.baseline} ({len(baseline.cases)} cases); current: {args.current} "
          f"({len(current.cases)} cases)")
    report = compare_runs(baseline, current, th, args.mode, args.accept_missing)
    if report.machine_diffs:
        print(f"warning: machine info differs: {machine_diff_text(report)}", file=sys.stderr)
    error = (f"--require-cost-layer: the cost layer was not judged: {report.unjudged[COST_LAYER]}"
             if args.require_cost_layer and COST_LAYER in report.unjudged else None)
    verdict = two_file_verdict(report, baseline, current, th, exit_code=2 if error else report.exit_code, error=error)
    print(render(verdict, th, show_all=args.all))
    publish(verdict, args)
    if error:
        raise LFWError(error)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
