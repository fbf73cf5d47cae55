"""How reliable is the gate on this runner? Run it many times, record every outcome, count.

``python -m tools.gate_rates KIND --runs N`` (``make gate-rates``) appends one JSON line per run to
``benchmarks/gate_rates/<KIND>.jsonl`` (append-only: earlier outcomes are never rewritten), and
``python -m tools.gate_rates summary`` prints the rates docs/gating.md quotes, from those files only. A kind
(:data:`KINDS`) is ``make gate`` against the committed baseline, the A/B gate of HEAD against itself, or either with
a regression injected by a ``sitecustomize.py`` under ``benchmarks/gate_rates/`` placed at its checkout's root
(:data:`INJECTIONS`); an A/B's "noisy: rerun" (exit 3) counts as a miss. Every run is made in a temporary
``git worktree`` of the commit HEAD was at when the campaign started, so edits and commits during it do not leak
in; raw runs and logs go to ``.benchmarks/gate-rates/`` (not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from statistics import median
from typing import Any

from lfw.cli.args import OneLineParser
from lfw.cli.saving import append_atomic, write_atomic
from lfw.cli.stop import stop_tree
from lfw.errors import LFWError, cli_entry
from lfw.gate.ab import ABPlan
from lfw.gate.thresholds import Thresholds
from lfw.gate.verdict import VERDICT_PATH, load_verdict
from lfw.gate.worktree import checkout, resolve, toplevel
from lfw.report.findings import find
from lfw.results import Run, load_run, short_name
from lfw.results import keys as K
from lfw.results import knobs as KN

# Each kind: the exit its runs should give, and what it runs (the summary's label of its line).
KINDS: dict[str, tuple[int, str]] = {
    "gate": (0, "make gate, unchanged code vs the committed baseline"),
    "ab-aa": (0, "A/B, both sides HEAD (A/A)"),
    "ab-slow": (1, "A/B, current side's decode ~15% slower"),
    "cost-slow": (1, "cost layer, decode ~15% slower, vs the committed baseline"),
    "mem-none": (0, "memory groups, nothing injected (control), vs the committed baseline"),
    "mem-worker": (1, "memory groups, every worker 150 MiB more, vs the committed baseline"),
    "mem-index": (1, "memory groups, the index copied into every worker, vs the committed baseline"),
    "mem-leak": (1, "memory groups, persistent workers leak ~6 MiB/epoch, vs the committed baseline"),
    "serialized": (1, "workers group, every image load behind one lock, vs the committed baseline"),
    "handover": (1, "data-wait group, the hand-over 30 ms slower per batch (a sleep), vs the committed baseline"),
    "handover-copy": (1, "data-wait group, the hand-over copying every batch 8 times, vs the committed baseline"),
}
OUTCOMES = Path("benchmarks/gate_rates")
RAW = Path(".benchmarks/gate-rates")
SLOW_DECODE = OUTCOMES / "slow_decode" / "sitecustomize.py"
# The groups a memory regression shows in. Not the start-method group: a spawned worker's share of the library
# pages depends on what the host process touched before (docs/gating-measured.md, "Memory across CPU models").
MEMORY_CASES = "test_memory_index or test_leak or test_workers_transform"
# Each injected regression: the sitecustomize placed at its checkout's root, its environment, the cases it runs (-k).
INJECTIONS: dict[str, tuple[Path, dict[str, str], str]] = {
    **{f"mem-{m}": (OUTCOMES / "memory_regressions" / "sitecustomize.py", {"LFW_INJECT_MEMORY": m}, MEMORY_CASES)
       for m in ("none", "worker", "index", "leak")},
    "serialized": (OUTCOMES / "serialized_decode" / "sitecustomize.py", {}, "test_workers_transform"),
    "handover": (OUTCOMES / "slow_handover" / "sitecustomize.py", {"LFW_HANDOVER_MS": "30"}, "test_data_wait"),
    "handover-copy": (OUTCOMES / "copy_handover" / "sitecustomize.py", {"LFW_HANDOVER_COPIES": "8"}, "test_data_wait")}
# the metrics whose worst move per run is kept: relative changes, but the data-wait excess (an absolute one); ttfb_s
# in the records of runs before time to first batch was judged in the machine's units
WORST_TRACKED = ("efficiency", "ttfb_s", K.TTFB_CORE_IMAGES, K.DATA_WAIT_EXCESS, "instructions_per_image")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def cache(repo: Path) -> str:
    """This checkout's data cache (as the Makefile sets it), shared by the temporary checkouts."""
    return os.environ.get("LFW_CACHE") or str(repo / ".cache" / "lfw-bench")


def run_logged(command: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int, float]:
    """Run ``command`` with its output to ``log``; (exit code, seconds). An interrupt here (Ctrl-C, or SIGTERM
    through the worktree's handler) stops its whole process group: nothing it started outlives the campaign."""
    started = time.perf_counter()
    with log.open("w") as handle:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            code = proc.wait()
        except BaseException:
            stop_tree([proc], 5.0, ask_all=True, group=True)
            raise
    return code, time.perf_counter() - started


def counts(run: Run) -> dict[str, float]:
    """Instructions per image by preset (empty without a cost layer)."""
    return {c.knob(KN.TRANSFORM): value for c in run.cases if (value := c.number(K.INSTRUCTIONS_PER_IMAGE))}


def grouped(pairs: Iterable[tuple[str, float]]) -> dict[str, list[float]]:
    """The values of ``pairs`` by key, the keys in the order first seen."""
    out: dict[str, list[float]] = {}
    for key, value in pairs:
        out.setdefault(key, []).append(value)
    return out


def gate_record(raw: Path, code: int, seconds: float, log: Path) -> dict[str, Any]:
    """A two-file gate run's outcome: exit code, regressions, the worst change per family, its run's figures."""
    record: dict[str, Any] = {"exit_code": code, "seconds": round(seconds, 1)}
    if (raw / VERDICT_PATH.name).exists():
        verdict = load_verdict(raw / VERDICT_PATH.name)
        worst = grouped((c.metric_key, -c.change if c.metric_key == "efficiency" else c.change)
                        for c in verdict.comparisons if c.metric_key in WORST_TRACKED)
        record.update(unjudged=verdict.unjudged, worst_relative_change={k: round(max(v), 4) for k, v in worst.items()},
                      regressions=[f"{short_name(c.case)} {c.metric_key} {c.change:+.4g}" for c in verdict.regressions])
    if (raw / "gate-run.json").exists():
        run = load_run(raw / "gate-run.json")
        found = find(run)
        record.update(
            instructions_per_image=counts(run), cv_median=found.cv[0] if found.cv else None,
            recommended_workers={r.transform: r.verdict() for r in found.knees},
            recommendation_evidence={r.transform: r.evidence() for r in found.knees}, paired_cv_median=found.paired_cv,
            max_efficiency=max((v for c in run.cases if (v := c.number(K.EFFICIENCY)) is not None), default=None),
            requests_per_image_max=max((v for c in run.cases if (v := c.number(K.REQUESTS_PER_IMAGE)) is not None),
                                       default=None),
            per_core_images_per_s={k.removeprefix(K.PER_CORE_MACHINE_PREFIX): v for k, v in run.machine.items()
                                   if k.startswith(K.PER_CORE_MACHINE_PREFIX)})
        if (pipeline := found.pipeline) is not None:
            record["fastest_pipeline"] = {"case": pipeline.best.label, "limit": pipeline.limit(),
                                          "images_per_s": pipeline.best.number(K.IMAGES_PER_S),
                                          "pil_ceiling_share": pipeline.best.number(K.PIL_CEILING_SHARE)}
        if (remote := found.remote) is not None and remote.to_zero is not None:
            record["remote_at_max_latency"] = {"latency_ms": remote.latency_ms, "case": remote.best.label,
                                               "ratio_to_zero_latency": round(remote.to_zero.estimate, 4),
                                               "endpoint_ceiling_share": remote.best.number(K.ENDPOINT_CEILING_SHARE)}
    record["tail"] = log.read_text().splitlines()[-3:]
    return record


def run_gate(repo: Path, raw: Path, commit: str, inject: str = "") -> dict[str, Any]:
    """``make gate`` in a clean worktree of ``commit``, with this checkout's virtualenv (``-o``: not reinstalled
    from the worktree, whose own ``lfw`` pytest and ``python -m`` import) and data cache; with ``inject`` (a kind of
    :data:`INJECTIONS`), only the cases it names, with that regression injected."""
    venv, verdict, log = repo / ".venv", raw / VERDICT_PATH.name, raw / "make-gate.log"
    env = {**os.environ, "GATE_ARGS": f"--verdict-json {verdict}", "LFW_CACHE": cache(repo)}
    args: list[str] = []
    with checkout(repo, commit) as tree:
        if inject:  # every process of the run, spawned workers too, imports the sitecustomize first
            injection, injected_env, cases = INJECTIONS[inject]
            shutil.copy(tree / injection, tree / "sitecustomize.py")
            env.update({"PYTHONPATH": str(tree), **injected_env})
            args = [f"PYTEST_ARGS=-k '{cases}'", "LAYERS="]
        code, seconds = run_logged(["make", "-o", str(venv / ".installed"), "gate", f"VENV={venv}", *args], tree,
                                   env, log)
        if (made := tree / "reports" / "gate-run.json").exists():
            write_atomic(raw / "gate-run.json", made.read_bytes())
    record = gate_record(raw, code, seconds, log)
    if inject and verdict.exists():  # make exits 2 for any failed recipe: the gate's own code says what it found
        record.update(make_exit_code=code, exit_code=load_verdict(verdict).exit_code)
    return record


def run_ab_try(repo: Path, raw: Path, commit: str, slow: bool, max_pairs: int) -> dict[str, Any]:
    """``python -m lfw.gate --ab COMMIT`` from a clean worktree of it (slowed: with the sitecustomize in it). No
    PYTHONPATH of our own: the runner gives each side its own tree; ``-m`` from the tree imports its lfw."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"LFW_SLOW_DECODE": "0.15", "LFW_CACHE": cache(repo)})
    with checkout(repo, commit) as tree:
        if slow:
            shutil.copy(tree / SLOW_DECODE, tree / "sitecustomize.py")
        code, seconds = run_logged([sys.executable, "-m", "lfw.gate", "--ab", commit, "--max-pairs", str(max_pairs),
                                    "--ab-out", str(raw / "ab")], tree, env, raw / "ab.log")
    record: dict[str, Any] = {"exit_code": code, "seconds": round(seconds, 1)}
    if (verdicts := raw / "ab" / "verdicts.json").exists():
        doc = json.loads(verdicts.read_text())
        record.update({"pairs": doc["pairs"], "looks": doc["looks"], "seed": doc["seed"], "comparisons": [
            {"case": short_name(v["case"]), "metric": v["metric"], "ratio": round(v["ratio"], 4),
             "interval": [round(v["ratio_low"], 4), round(v["ratio_high"], 4)], "p_holm": v["p_holm"],
             "verdict": v["verdict"]} for v in doc["verdicts"]],
            "counts": [{"case": c["case"], "metric": c["metric"], "change": round(c["change"], 4),
                        "regressed": c["regressed"]} for c in doc.get("counts", [])],
            "counts_unjudged": doc.get("counts_unjudged")})
    record["tail"] = (raw / "ab.log").read_text().splitlines()[-2:]
    return record


def run_cost_slow(repo: Path, raw: Path, commit: str, baseline: Path) -> dict[str, Any]:
    """The cost layer with the slowed decode on PYTHONPATH, gated against ``baseline`` (a path in HEAD)."""
    run_json, verdict_path = raw / "cost-run.json", raw / VERDICT_PATH.name
    with checkout(repo, commit) as tree:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / SLOW_DECODE.parent), str(tree)]),
               "LFW_SLOW_DECODE": "0.15", "LFW_CACHE": cache(repo)}
        code, seconds = run_logged([sys.executable, "-m", "pytest", "benchmarks", "-k", "cost", "--bench-cost", "-q",
                                    "-p", "no:cacheprovider", f"--benchmark-json={run_json}"], tree, env,
                                   raw / "cost.log")
        if code != 0:
            return {"exit_code": code, "seconds": round(seconds, 1), "error": "the cost benchmarks failed"}
        gate_code, _ = run_logged([sys.executable, "-m", "lfw.gate", str(tree / baseline), str(run_json),
                                   "--verdict-json", str(verdict_path), "--summary-md", str(raw / "gate.md")], tree,
                                  {**os.environ, "PYTHONPATH": str(tree)}, raw / "gate.log")
    changed = [c for c in load_verdict(verdict_path).comparisons if c.metric_key == "instructions_per_image"]
    return {"exit_code": gate_code, "seconds": round(seconds, 1),
            "instructions_change": {short_name(c.case): round(c.change, 4) for c in changed},
            "flagged": sorted(short_name(c.case) for c in changed if c.regressed)}


def campaign(kind: str, runs: int, repo: Path, baseline: Path, max_pairs: int, outcomes: Path,
             commit: str = "HEAD") -> None:
    """``runs`` runs of ``kind``, all of ``commit`` as it resolves when the campaign starts."""
    head, expected = resolve(repo, commit), KINDS[kind][0]
    for i in range(1, runs + 1):
        raw = repo / RAW / kind / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        raw.mkdir(parents=True)
        started = now()
        print(f"[{kind} {i}/{runs}] {started}", file=sys.stderr, flush=True)
        if kind == "gate" or kind in INJECTIONS:
            outcome = run_gate(repo, raw, head, inject=kind if kind in INJECTIONS else "")
        elif kind in ("ab-aa", "ab-slow"):
            outcome = run_ab_try(repo, raw, head, kind == "ab-slow", max_pairs)
        else:
            outcome = run_cost_slow(repo, raw, head, baseline)
        record = {"kind": kind, "started": started, "finished": now(), "commit": head, "host": platform.node(),
                  "expected_exit": expected, "raw": str(raw.relative_to(repo)), **outcome}
        append_atomic(outcomes / f"{kind}.jsonl", json.dumps(record, sort_keys=True) + "\n")
        print(f"[{kind} {i}/{runs}] exit {outcome['exit_code']} (expected {expected})", file=sys.stderr, flush=True)


def read(kind: str, outcomes: Path) -> list[dict[str, Any]]:
    path = outcomes / f"{kind}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def hours(records: list[dict[str, Any]]) -> str:
    stamps = sorted(r["started"] for r in records)
    return f"{stamps[0][:16]} to {stamps[-1][:16]} UTC, {len({s[:13] for s in stamps})} distinct hours"


def campaign_commit(outcomes: Path) -> str | None:
    """The commit of the newest ``gate`` record: the campaign the summary reports by default."""
    records = read("gate", outcomes) or [r for kind in KINDS for r in read(kind, outcomes)]
    return max(records, key=lambda r: r["started"])["commit"] if records else None


def summary(outcomes: Path, baseline: Path | None = None, commit: str | None = None) -> str:
    """The rates of one campaign (``commit``; default the newest), from the outcome files only; the runs of other
    commits they keep are counted on their own line, never mixed into the rates."""
    commit = commit or campaign_commit(outcomes)
    lines = [f"campaign of commit {commit}"]
    for kind, (expected, label) in KINDS.items():
        everything = read(kind, outcomes)
        records = [r for r in everything if r["commit"] == commit]
        if others := sorted({r["commit"][:10] for r in everything} - {commit[:10] if commit else ""}):
            lines.append(f"({kind}: {len(everything) - len(records)} earlier runs of {', '.join(others)} not counted)")
        if not records:
            lines.append(f"{label}: no runs recorded")
            continue
        hit = sum(r["exit_code"] == r["expected_exit"] for r in records)
        codes = ", ".join(f"exit {c}: {sum(r['exit_code'] == c for r in records)}"
                          for c in sorted({r["exit_code"] for r in records}))
        lines.append(f"{label}: {hit}/{len(records)} as expected (exit {expected}); {codes}; {hours(records)}")
        if kind == "gate":
            lines += gate_details(records, counts(load_run(baseline)) if baseline and baseline.exists() else {})
        if kind.startswith("ab"):
            pairs = [r.get("pairs", 0) for r in records]
            minutes = [r["seconds"] / 60 for r in records]
            lines.append(f"  pairs per run {min(pairs)}-{max(pairs)}; "
                         f"{min(minutes):.1f}-{max(minutes):.1f} min per run")
            lines += ab_details(records)
        if kind in INJECTIONS:
            lines += [f"  {r['started'][:16]} gate exit {r['exit_code']}: flagged "
                      f"{'; '.join(r.get('regressions', [])) or 'nothing'}" for r in records]
        if kind == "cost-slow":
            lines += [f"  instructions per image change: {r.get('instructions_change')}; flagged {r.get('flagged')}"
                      for r in records]
    return "\n".join(lines)


def present(records: list[dict[str, Any]], key: str) -> list[Any]:
    """Each record's ``key``, where it has one (not missing, None nor empty)."""
    return [v for r in records if (v := r.get(key)) is not None and v != {}]


def gate_details(records: list[dict[str, Any]], baseline: dict[str, float] | None = None) -> list[str]:
    out = []
    if runs := grouped(item for r in present(records, "instructions_per_image") for item in r.items()):
        out.append("  instructions per image across runs (max - min) / min: "
                   + ", ".join(f"{p} {(max(v) - min(v)) / min(v):.4%}" for p, v in runs.items()))
        if baseline:
            off = {p: max(abs(x - baseline[p]) for x in v) / baseline[p] for p, v in runs.items() if p in baseline}
            out.append("  largest |run - baseline| / baseline: " + ", ".join(f"{p} {s:.4%}" for p, s in off.items()))
    moves = grouped(x for r in present(records, "worst_relative_change") for x in r.items())
    if worst := {m: max(v) for m, v in moves.items()}:
        limits = Thresholds()
        out.append(f"  worst move toward a regression over all runs (the gate's limits: efficiency "
                   f"{-limits.efficiency:+.0%}, time to first batch {limits.ttfb:+.0%}, data-wait excess "
                   f"+{limits.wait_floor:g}, instructions {limits.cost:+.0%}): "
                   + ", ".join(f"{m} {v:+.3f}" if m == K.DATA_WAIT_EXCESS else
                               f"{m} {-v if m == 'efficiency' else v:+.1%}" for m, v in worst.items()))
    if regressions := [x for r in records for x in r.get("regressions", [])]:
        out.append(f"  regressions reported: {'; '.join(regressions)}")
    if recs := present(records, "recommended_workers"):
        out.append("  recommended num_workers per run: " + " | ".join(
            ", ".join(f"{t} {w}" for t, w in rec.items()) for rec in recs))
    if peaks := present(records, "max_efficiency"):
        out.append(f"  largest efficiency in any case of any run: {max(peaks):.3f}")
    if pipelines := present(records, "fastest_pipeline"):
        shares = sorted(p["pil_ceiling_share"] for p in pipelines)
        out.append(f"  fastest decode pipeline per run: {dict(Counter(p['case'] for p in pipelines))}; share of 2 x "
                   f"the PIL ceiling {shares[0]:.2f}-{shares[-1]:.2f} (median {median(shares):.2f})")
    if remote := present(records, "remote_at_max_latency"):
        ratios = sorted(x["ratio_to_zero_latency"] for x in remote)
        out.append(f"  remote, best at {remote[0]['latency_ms']:g} ms: {dict(Counter(x['case'] for x in remote))}; its "
                   f"rate over the same configuration at 0 ms {ratios[0]:.2f}-{ratios[-1]:.2f} (median "
                   f"{median(ratios):.2f}), >= 0.80 in {sum(x >= 0.8 for x in ratios)} of {len(ratios)}")
    if requests := present(records, "requests_per_image_max"):
        out.append(f"  requests per image through the proxy, largest in any case of any run: {max(requests):.3f}")
    if cvs := [(r["cv_median"], r["paired_cv_median"]) for r in records if r.get("paired_cv_median") is not None]:
        out.append(f"  median CV of images/s per run: {median(c for c, _ in cvs):.1%} (runs' median); paired-ratio "
                   f"CV: {median(p for _, p in cvs):.1%}")
    return out


def ab_details(records: list[dict[str, Any]]) -> list[str]:
    by_metric = grouped((f"{c['case']} {c['metric']}", c["ratio"]) for r in records for c in r.get("comparisons", []))
    return [f"  {k}: ratio current/base {min(v):.3f}-{max(v):.3f} (median {sorted(v)[len(v) // 2]:.3f})"
            for k, v in sorted(by_metric.items())]


@cli_entry
def main(argv: list[str] | None = None) -> int:
    kinds = [f"  {kind} (exit {expected}): {label}" for kind, (expected, label) in KINDS.items()]
    parser = OneLineParser(prog="python -m tools.gate_rates", description=__doc__.splitlines()[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog="\n".join([*__doc__.splitlines()[2:], "kinds:", *kinds]))
    parser.add_argument("kind", choices=(*KINDS, "summary"))
    parser.add_argument("--runs", type=int, default=20, help="runs to add (default 20)")
    parser.add_argument("--baseline", type=Path, default=Path("benchmarks/baselines/cpu-2core.json"),
                        help="baseline of the cost-slow kind (make gate uses the Makefile's)")
    parser.add_argument("--max-pairs", type=int, default=ABPlan("").max_pairs,
                        help=f"A/B pair budget (default {ABPlan('').max_pairs}, the gate's)")
    parser.add_argument("--commit", default="HEAD", help="the commit to measure (default HEAD, resolved at start); "
                                                         "with summary, the campaign to report (default the newest)")
    parser.add_argument("--outcomes", type=Path, default=OUTCOMES,
                        help=f"folder of the outcome files (default {OUTCOMES}; calibration runs go elsewhere)")
    args = parser.parse_args(argv)
    repo = toplevel(Path.cwd())
    outcomes = args.outcomes if args.outcomes.is_absolute() else repo / args.outcomes
    if args.kind == "summary":
        print(summary(outcomes, args.baseline, args.commit if args.commit != "HEAD" else None))
        return 0
    if args.runs < 1:
        raise LFWError(f"--runs must be at least 1, got {args.runs}")
    try:
        resolve(repo, args.commit)
    except LFWError:
        raise LFWError(f"unknown commit {args.commit!r}: commit first, or name one that exists") from None
    campaign(args.kind, args.runs, repo, args.baseline, args.max_pairs, outcomes, args.commit)
    print(summary(outcomes, args.baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
