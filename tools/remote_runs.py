"""Repeated runs of the remote group and the figures its steady-state contract names, per run and as medians.

    python -m tools.remote_runs --runs 5 --out reports/remote-runs > docs/runs/remote.txt
    python -m tools.remote_runs --read reports/remote-runs/run-*.json     # figures of runs already saved

Each run is ``pytest benchmarks -k remote --benchmark-json=...`` (the quick profile's remote cases) behind the
machine's benchmark lock (``flock /tmp/lfw-cpu.lock``, as ``make`` takes it). Per run: its cases' table and the
figures of the remote layer's steady-state contract (:func:`figures`; docs/remote.md); then the median of each over
the runs. Exit 2 on bad input (a run without the remote cases), 4 when a run fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from statistics import median
from typing import Any

from lfw.cli.args import OneLineParser
from lfw.cli.table import table
from lfw.errors import LFWError, MeasurementError, cli_entry
from lfw.measure.machine import cpu_model
from lfw.report.remote import remote_cases, remote_verdict
from lfw.results import Case, Run, load_run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.stats.variation import coefficient_of_variation
from tools.stamp import commit_label

LOCK = "/tmp/lfw-cpu.lock"


def steady_rate(case: Case) -> float:
    return case.number(K.STEADY_IMAGES_PER_S) or 0.0


def figures(run: Run) -> dict[str, Any]:
    """The contract's figures of one run of the remote group: the fewest batches after the start-up wave, the cases
    without a steady rate and why, the highest steady rate over its endpoint ceiling, the best steady rate at the
    highest latency over the best at 0 ms and its CV, the batch and threads cases' largest |Little's law error|."""
    cases = remote_cases(run)
    steady = [c for c in cases if c.number(K.STEADY_IMAGES_PER_S) is not None]
    verdict = remote_verdict(run)  # the report's pick: the highest steady rate at the top latency and at 0 ms
    if verdict is None or verdict.zero is None:
        raise LFWError(f"{run.path}: no remote cases at 0 ms and a higher latency")
    errors = [e for c in cases if c.knob(KN.STRATEGY) in ("batch", "threads")
              and (e := c.number(K.LITTLES_LAW_ERROR)) is not None]
    if not errors:
        raise LFWError(f"{run.path}: no batch or threads remote case with a Little's law error")
    best, zero = verdict.best, verdict.zero
    over = [steady_rate(c) / (c.number(K.ENDPOINT_CEILING_IMAGES_PER_S) or 1.0) for c in steady]
    return {"cases": cases, "fewest": min(int(c.number(K.STEADY_BATCHES) or 0) for c in steady),
            "absent": {c.label: c.value(K.STEADY_ABSENT) or c.value(K.STEADY_INVALID) for c in cases
                       if c not in steady},
            "over_ceiling": max(over), "best": best, "zero": zero, "kept": steady_rate(best) / steady_rate(zero),
            "best_cv": coefficient_of_variation(best.rounds(K.STEADY_IMAGES_PER_S)),
            "worst_law": max(abs(e) for e in errors)}


def case_table(cases: list[Case]) -> str:
    rows = []
    for c in sorted(cases, key=lambda c: (c.knob(KN.LATENCY_MS) or 0, -steady_rate(c))):
        law, err = c.number(K.LITTLES_LAW_RATE), c.number(K.LITTLES_LAW_ERROR)
        cv = coefficient_of_variation(c.rounds(K.STEADY_IMAGES_PER_S)) if steady_rate(c) else None
        rows.append((c.label, f"{int(c.number(K.STEADY_BATCHES) or 0)}", f"{steady_rate(c) or float('nan'):.1f}",
                     f"{cv if cv is not None else float('nan'):.3f}",
                     f"{c.number(K.ENDPOINT_CEILING_IMAGES_PER_S) or 0:.1f}",
                     f"{c.number(K.STEADY_CEILING_SHARE) or float('nan'):.3f}", f"{c.number(K.IMAGES_PER_S) or 0:.1f}",
                     f"{c.number(K.TTFB_S) or 0:.3f}", f"{c.number(K.BUSY_MEAN_IN_FLIGHT) or 0:.1f}",
                     f"{law or float('nan'):.1f}", f"{err if err is not None else float('nan'):+.3f}",
                     str(c.value(K.REMOTE_LIMIT))))
    return table(("case", "batches", "steady", "cv", "ceiling", "share", "whole", "ttfb_s", "in_flight", "law",
                  "law_err", "limit"), rows, right=range(1, 11))


def run_summary(f: dict[str, Any]) -> str:
    return (f"fewest batches after the start-up wave (cases with a steady rate): {f['fewest']}; highest steady / "
            f"ceiling: {f['over_ceiling']:.3f}; best at {f['best'].knob(KN.LATENCY_MS):g} ms {f['best'].label} "
            f"{steady_rate(f['best']):.1f} images/s steady = {f['kept']:.3f} of the best at 0 ms ({f['zero'].label} "
            f"{steady_rate(f['zero']):.1f}), its CV over rounds {f['best_cv']:.3f}; largest |Little's law error| of "
            f"the batch and threads cases: {f['worst_law']:.3f}")


def run_once(out: Path, number: int, lock: str | None) -> Path:
    path = out / f"run-{number}.json"
    command = [sys.executable, "-m", "pytest", "benchmarks", "-q", "-k", "remote", f"--benchmark-json={path}"]
    if lock and shutil.which("flock"):
        command = ["flock", lock, *command]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    tail = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
    print(f"run {number}: {' '.join(tail)} (exit {done.returncode}, wall {wall:.0f} s incl. lock wait)", flush=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise MeasurementError(f"run {number} failed (exit {done.returncode}); its output's end is above")
    return path


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m tools.remote_runs", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path("reports/remote-runs"))
    p.add_argument("--lock", default=LOCK, help="flock this file around each run ('' for none)")
    p.add_argument("--read", nargs="*", type=Path, help="report saved runs instead of running")
    args = p.parse_args(argv)
    if args.runs < 1 and not args.read:
        raise LFWError(f"--runs must be 1 or more, got {args.runs}")
    print(f"# {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}, commit {commit_label()}, CPU {cpu_model()}: "
          f"{args.runs if not args.read else len(args.read)} x pytest benchmarks -k remote (quick profile)")
    if not args.read:
        args.out.mkdir(parents=True, exist_ok=True)
    paths = args.read or [run_once(args.out, number, args.lock or None) for number in range(1, args.runs + 1)]
    found = []
    for number, path in enumerate(paths, 1):
        run = load_run(path)
        found.append(f := figures(run))
        print(f"\n## run {number} ({path.name}, {run.datetime})")
        print(case_table(f["cases"]))
        for label, why in f["absent"].items():
            print(f"{label}: no steady rate: {why}")
        print(run_summary(f))
    print(f"\n## median of {len(found)} runs")
    print(f"fewest batches after the start-up wave: {median(f['fewest'] for f in found):g}; highest steady / ceiling: "
          f"{median(f['over_ceiling'] for f in found):.3f}; best at the highest latency over the best at 0 ms: "
          f"{median(f['kept'] for f in found):.3f} (best cases: {', '.join(f['best'].label for f in found)}); CV of "
          f"that best case: {median(f['best_cv'] for f in found):.3f}; largest |Little's law error|: "
          f"{median(f['worst_law'] for f in found):.3f}")
    rows = []
    for label in sorted({c.label for f in found for c in f["cases"]}):
        mine = [c for f in found for c in f["cases"] if c.label == label]
        errors = [e for c in mine if (e := c.number(K.LITTLES_LAW_ERROR)) is not None]
        shares = [s for c in mine if (s := c.number(K.STEADY_CEILING_SHARE)) is not None]
        steadies = [steady_rate(c) for c in mine if steady_rate(c)]
        rows.append((label, f"{median(steadies) if steadies else float('nan'):.1f}",
                     f"{median(shares) if shares else float('nan'):.3f}",
                     f"{median(c.number(K.IMAGES_PER_S) or 0 for c in mine):.1f}",
                     f"{median(c.number(K.TTFB_S) or 0 for c in mine):.3f}",
                     f"{median(errors) if errors else float('nan'):+.3f}",
                     ", ".join(sorted({str(c.value(K.REMOTE_LIMIT)) for c in mine}))))
    print(table(("case", "steady", "share", "whole", "ttfb_s", "law_err", "limits"), rows, right=range(1, 6)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
