"""``python -m lfw.report [RUN.json ...] --out reports/``: charts, a summary page and an HTML page from saved runs.

No run named: the newest autosaved run under ``.benchmarks/``; one run: its report; two: the first is the baseline,
and the report adds the comparison and the gate's verdict per case (:mod:`lfw.report.verdict`). See docs/reports.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lfw.cli.args import OneLineParser
from lfw.cli.figures import FORMATS
from lfw.errors import LFWError, cli_entry
from lfw.history import history_report
from lfw.report.console import console
from lfw.report.html_page import write_html
from lfw.report.page import write_summary
from lfw.report.render import build_report, check_report_folder
from lfw.report.verdict import shown_verdict
from lfw.results import latest_run, load_run


def parser() -> OneLineParser:
    p = OneLineParser(prog="python -m lfw.report",
                      description="Charts (PNG, SVG), a one-page summary (README.md) and an HTML page (index.html) "
                                  "from saved pytest-benchmark runs; with BASE CURRENT also the comparison and a "
                                  "verdict per case.")
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN.json",
                   help="saved pytest-benchmark runs: none (the newest autosaved run), one, or BASE CURRENT")
    p.add_argument("--out", type=Path, default=Path("reports"), help="output folder, created (default: reports/)")
    p.add_argument("--storage", type=Path, default=Path(".benchmarks"),
                   help="where to look for the newest autosaved run when none is named (default: .benchmarks/)")
    p.add_argument("--format", dest="formats", nargs="+", choices=FORMATS, default=list(FORMATS),
                   help="image formats to write (default: png svg)")
    p.add_argument("--history", type=Path, metavar="SOURCE",
                   help="also draw the history: a store folder, <runner>.jsonl or .benchmarks/ autosaves; charts "
                        "with change points into OUT/history/")
    p.add_argument("--verdict", type=Path, metavar="PATH",
                   help="the gate's verdict.json to show, used only if it judged these very runs (by SHA-256; "
                        "default: OUT/verdict.json, and with BASE CURRENT the gate is run when that does not match)")
    return p


@cli_entry
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if len(args.runs) > 2:
        raise LFWError(f"give one run, or a baseline and a current run; got {len(args.runs)} files")
    paths = args.runs or [latest_run(args.storage)]
    runs = [load_run(p) for p in paths]
    base, current = (runs[0], runs[1]) if len(runs) == 2 else (None, runs[0])
    check_report_folder(args.out, [run.path for run in runs])  # before the gate may be run to write its verdict there
    shown = shown_verdict(args.out, paths[-1], paths[0] if base is not None else None, args.verdict)
    if args.history:  # drawn first, so the HTML page's history section shows it
        print(history_report(args.history, args.out).summary)
    report = build_report(current, args.out, base, tuple(args.formats), shown.verdict)
    write_summary(report)
    write_html(report, shown)
    print(console(report))
    if shown.note:
        print(shown.note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
