"""``python -m lfw.history``: append runs to the history store, chart a history with its change points, or export
a run's judged metrics in Bencher's Metric Format (docs/history.md). Exit 0 done, 2 bad input.

    python -m lfw.history append RUN.json [RUN.json ...] --store DIR [--runner CLASS]
    python -m lfw.history show SOURCE [--out reports]
    python -m lfw.history export RUN.json [--out metrics.json]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from lfw.cli.args import OneLineParser
from lfw.cli.saving import write_atomic
from lfw.errors import cli_entry
from lfw.history.store import append_run, bencher_metrics
from lfw.results import load_run


def parser() -> OneLineParser:
    p = OneLineParser(prog="python -m lfw.history",
                      description="A history of saved runs per runner class, and its change points.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    a = sub.add_parser("append", help="append runs to DIR/<runner class>.jsonl (a run already there is kept once)")
    a.add_argument("runs", nargs="+", type=Path, metavar="RUN.json",
                   help="saved pytest-benchmark runs (a folder: its newest autosaved run)")
    a.add_argument("--store", type=Path, required=True, help="the store folder (e.g. a checkout of the data branch)")
    a.add_argument("--runner", help="runner class to file the run under (default: the run's machine_info)")
    s = sub.add_parser("show", help="charts and change points of a history")
    s.add_argument("source", type=Path, help="a store folder, one <runner>.jsonl, or a folder of autosaved runs")
    s.add_argument("--out", type=Path, default=Path("reports"), help="charts go to OUT/history/ (default: reports)")
    e = sub.add_parser("export", help="a run's judged metrics in Bencher's Metric Format (JSON)")
    e.add_argument("run", type=Path, metavar="RUN.json", help="a saved pytest-benchmark run")
    e.add_argument("--out", type=Path, help="write here (default: stdout)")
    return p


@cli_entry
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "append":
        for run in args.runs:
            done = append_run(run, args.store, args.runner)
            r = done.record
            where = f"appended to {done.path}" if done.appended else f"already in {done.path}, not appended again"
            print(f"{where}: commit {r.short}, run {r.date or r.run}, {len(r.cases)} cases")
        return 0
    if args.command == "export":
        metrics = bencher_metrics(load_run(args.run))
        text = json.dumps(metrics, indent=2, sort_keys=True) + "\n"
        if args.out is None:
            sys.stdout.write(text)
        else:
            write_atomic(args.out, text)
            print(f"wrote {args.out}: {len(metrics)} cases, {sum(map(len, metrics.values()))} measures in Bencher's "
                  "Metric Format", file=sys.stderr)
        return 0
    from lfw.history.report import history_report

    print(history_report(args.source, args.out).summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
