"""Command line of the regression gate: ``python -m lfw.gate BASELINE.json CURRENT.json`` or ``--ab REV``.

Exit codes: 0 no regression, 1 regression (the table names each one), 2 unusable input (one line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lfw.cli_args import OneLineParser
from lfw.errors import LFWError, cli_entry
from lfw.gate.ab import ABPlan, run_ab
from lfw.gate.compare import GateReport, compare_runs
from lfw.gate.load import load_run
from lfw.gate.stats import AB_THROUGHPUT, RULE_TEXT, Thresholds
from lfw.gate.table import render

DESCRIPTION = """\
Noise-aware regression gate for lfw-bench runs (pytest-benchmark JSON saved with per-round data).

Compares case by case, matched on the test's full name: images/s (lower is worse), time to first batch,
PSS/USS memory growth, memory slope per epoch and data-wait fraction (higher is worse). Cases present on one
side only are listed. If runner_class or usable_cores differ, efficiency (throughput over the session's own
single-core ceiling) replaces absolute images/s and time to first batch is skipped; on the same machine
efficiency is not gated, since its short ceiling sweep adds noise of its own.

Exit 0: no regression. Exit 1: regression, with a table of case, metric, baseline, current, change and the
noise it was judged against. Exit 2: missing, corrupt or non-pytest-benchmark file, or no per-round data."""

EPILOG = f"""{RULE_TEXT}

A/B mode (--ab BASE_REV): the reliable way on shared CI runners. A committed baseline was measured at
another time, and on a shared VM the same code can run tens of percent slower or faster from one session
to the next. --ab checks BASE_REV out in a git worktree and runs the selected benchmarks of both trees
alternately in this job (ABBA order, --repeats pairs), pools each side's rounds and gates current vs base.

examples:
  python -m lfw.gate benchmarks/baselines/cpu-2core.json .benchmarks/Linux-*/0003_*.json
  python -m lfw.gate --ab origin/main -k "workers0-none or workers2-none" --repeats 3"""


def build_parser() -> argparse.ArgumentParser:
    d = Thresholds()
    p = OneLineParser(prog="python -m lfw.gate", description=DESCRIPTION, epilog=EPILOG,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("baseline", nargs="?", type=Path, help="baseline run (e.g. benchmarks/baselines/<runner>.json)")
    p.add_argument("current", nargs="?", type=Path, help="current run to judge")
    p.add_argument("--mode", choices=("auto", "absolute", "portable"), default="auto",
                   help="auto (default): efficiency instead of images/s when runner class or cores differ")
    t = p.add_argument_group("thresholds (see the decision rule below)")
    t.add_argument("--throughput-threshold", type=float, metavar="FRACTION",
                   help=f"minimum drop of images/s or efficiency (default {d.throughput}; {AB_THROUGHPUT} with --ab)")
    t.add_argument("--ttfb-threshold", type=float, default=d.ttfb, metavar="FRACTION",
                   help=f"minimum rise of time to first batch (default {d.ttfb})")
    t.add_argument("--memory-floor-mib", type=float, default=d.memory_floor_mib, metavar="MIB",
                   help=f"minimum rise of median PSS/USS growth (default {d.memory_floor_mib:g})")
    t.add_argument("--memory-ratio", type=float, default=d.memory_ratio, metavar="FRACTION",
                   help=f"... and of |baseline growth| x this (default {d.memory_ratio})")
    t.add_argument("--slope-floor-mib", type=float, default=d.slope_floor_mib, metavar="MIB",
                   help=f"minimum rise of a memory slope per epoch (default {d.slope_floor_mib:g})")
    t.add_argument("--wait-floor", type=float, default=d.wait_floor, metavar="FRACTION",
                   help=f"minimum rise of the data-wait fraction (default {d.wait_floor})")
    t.add_argument("--wait-ratio", type=float, default=d.wait_ratio, metavar="FRACTION",
                   help=f"... and of the baseline fraction x this (default {d.wait_ratio})")
    t.add_argument("--alpha", type=float, default=d.alpha, help=f"Mann-Whitney U level (default {d.alpha})")
    ab = p.add_argument_group("A/B mode")
    ab.add_argument("--ab", metavar="BASE_REV", help="run BASE_REV and the working tree alternately, then gate")
    ab.add_argument("-k", dest="selection", default=ABPlan.selection, help="pytest -k selection for --ab "
                    f"(default {ABPlan.selection!r})")
    ab.add_argument("--repeats", type=int, default=ABPlan.repeats,
                    help=f"runs per side for --ab (default {ABPlan.repeats})")
    ab.add_argument("--bench-profile", default=ABPlan.profile, help="benchmark profile for --ab (default quick)")
    ab.add_argument("--ab-out", type=Path, help="keep the A/B runs' JSON and logs in this folder")
    o = p.add_argument_group("output")
    o.add_argument("--all", action="store_true", help="print every comparison, not only regressions")
    o.add_argument("--json-report", type=Path, metavar="PATH", help="also write the report as JSON")
    o.add_argument("--fail-on-missing", action="store_true",
                   help="exit 1 also when a baseline case is missing from the current run")
    return p


def thresholds_from(args: argparse.Namespace) -> Thresholds:
    throughput = args.throughput_threshold
    if throughput is None:
        throughput = AB_THROUGHPUT if args.ab else Thresholds.throughput
    values = {"throughput": throughput, "ttfb": args.ttfb_threshold,
              "memory_floor_mib": args.memory_floor_mib, "memory_ratio": args.memory_ratio,
              "slope_floor_mib": args.slope_floor_mib, "wait_floor": args.wait_floor,
              "wait_ratio": args.wait_ratio, "alpha": args.alpha}
    negative = [k for k, v in values.items() if v < 0]
    if negative or not 0 < args.alpha <= 1:
        raise LFWError(f"thresholds must be >= 0 and --alpha in (0, 1]: check {', '.join(negative) or 'alpha'}")
    return Thresholds(**values)


def warn_machine(report: GateReport) -> None:
    if report.machine_diffs:
        named = ", ".join(f"{k} ({b!r} -> {c!r})" for k, (b, c) in report.machine_diffs.items())
        print(f"warning: machine info differs: {named}", file=sys.stderr)


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    th = thresholds_from(args)
    if args.ab:
        if args.baseline or args.current:
            raise LFWError("--ab takes no baseline or current file: it measures both sides itself")
        plan = ABPlan(args.ab, args.selection, args.repeats, args.bench_profile)
        baseline, current, sha = run_ab(plan, Path.cwd(), args.ab_out)
        print(f"A/B: base {args.ab} ({sha[:10]}) vs working tree, {args.repeats} runs per side in ABBA order, "
              f"-k {args.selection!r}, rounds pooled per side")
    else:
        if not (args.baseline and args.current):
            raise LFWError("need BASELINE.json and CURRENT.json, or --ab BASE_REV (see python -m lfw.gate --help)")
        baseline, current = load_run(args.baseline), load_run(args.current)
        print(f"baseline: {args.baseline} ({len(baseline['benchmarks'])} cases); "
              f"current: {args.current} ({len(current['benchmarks'])} cases)")
    report = compare_runs(baseline, current, th, args.mode)
    warn_machine(report)
    print(render(report, th, show_all=args.all))
    if args.json_report:
        args.json_report.write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    if args.fail_on_missing and report.missing_cases:
        print(f"failing: {len(report.missing_cases)} baseline cases missing (--fail-on-missing)")
        return 1
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
