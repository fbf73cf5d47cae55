"""Charts of a device campaign, drawn on any machine from its ``campaign.json`` files.

    python3 tools/device_charts.py DIR [DIR ...] [--out reports/device]

Each DIR is a campaign's output folder (one per device command when the steps ran one at a time); later folders'
steps replace earlier ones'. One PNG per step that has figures: every bar or point is a median with error bars
spanning its rounds (bandwidth: the 10th to 90th percentile of its copies), drawn beside its ceiling. Figures a dry
run measured on its CPU stand-in are never drawn (they are not GPU figures); the command names them. Exit codes:
0 drawn (or nothing to draw, said so), 2 a folder without a campaign.json.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from lfw.cli.args import OneLineParser
from lfw.errors import LFWError, cli_entry
from tools.device_context import CAMPAIGN_JSON, STAND_IN
from tools.device_steps import case_summary


def merged_steps(folders: list[Path]) -> tuple[dict[str, Any], list[str]]:
    """Every finished step's summary across ``folders``, later folders first in precedence, and the steps left
    out: measured by a dry run on the CPU stand-in (never GPU figures), or on another profile than the last
    folder's (a probe's 160-image smoke figures never stand beside the full campaign's). A pin step that did not
    finish takes its figures from the baseline step's run in the same folder, which is the same ``-k pin_memory``
    run of the same profile (:func:`pin_from_baseline`)."""
    campaigns = []
    for folder in folders:
        path = folder / CAMPAIGN_JSON
        if not path.is_file():
            raise LFWError(f"{folder} has no {CAMPAIGN_JSON}; give a device campaign's output folder")
        campaigns.append((folder, json.loads(path.read_text(encoding="utf-8"))))
    profile = campaigns[-1][1].get("run", {}).get("profile")
    steps: dict[str, Any] = {}
    left_out: list[str] = []
    for folder, campaign in campaigns:
        done = {name: step for name, step in campaign.get("steps", {}).items()
                if step.get("status") == "done" and step.get("summary")}
        if "pin" not in done and (pin := pin_from_baseline(folder, campaign)) is not None:
            done["pin"] = {"summary": pin}
        for name, step in done.items():
            if step.get("measured_on") == STAND_IN:
                left_out.append(f"{name} (measured on the {STAND_IN} of a dry run: not GPU figures)")
                steps.pop(name, None)
            elif campaign.get("run", {}).get("profile") != profile:
                left_out.append(f"{name} of {folder} (profile {campaign.get('run', {}).get('profile')}, not {profile})")
            else:
                steps[name] = step["summary"]
    return steps, left_out


def pin_from_baseline(folder: Path, campaign: dict[str, Any]) -> dict[str, Any] | None:
    """The pin step's figures from the baseline step's saved run in ``folder`` (None without one or without the
    bandwidth step's peak): its cases' rounds, and the copy floor as the batch's bytes over the peak copy rate."""
    steps = campaign.get("steps", {})
    baseline = steps.get("baseline", {}).get("summary", {})
    bandwidth = steps.get("bandwidth", {})
    names = [name for name in baseline.get("files", []) if name.endswith(".json") and (folder / name).is_file()]
    if not names or bandwidth.get("status") != "done":
        return None
    copies = bandwidth["summary"]
    batch = copies["copies"]["batch-pinned"]["bytes"]
    return {"cases": case_summary(folder / names[0], "pin-memory"), "batch_bytes": batch, "from": names[0],
            "h2d_floor_ms_per_batch": round(batch / (copies["peak_gb_s"] * 1e9) * 1e3, 3)}


def _bar(rounds: list[float]) -> tuple[float, list[float]]:
    """The median and its error bar (distance to the lowest and highest round)."""
    ordered = sorted(rounds)
    mid = statistics.median(ordered)
    return mid, [mid - ordered[0], ordered[-1] - mid]


def _curve(ax: Any, label: str, points: dict[int, list[float]]) -> None:
    xs = sorted(points)
    bars = [_bar(points[x]) for x in xs]
    ax.errorbar(xs, [b[0] for b in bars], yerr=list(zip(*[b[1] for b in bars], strict=True)), marker="o",
                capsize=3, label=label)


def draw_workers(workers: dict[str, Any] | None, decode: dict[str, Any] | None, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 5))
    for transform in ("none", "uint8"):
        cases = (workers or {}).get("cases", {}).values()
        points = {c["params"]["num_workers"]: c["images_per_s_rounds"] for c in cases
                  if c["params"].get("transform") == transform}
        if points:
            knee = (workers or {}).get("knee", {}).get(transform, {}).get("verdict", "?")
            _curve(ax, f"preset {transform} (knee {knee})", points)
    by_decoder: dict[str, dict[int, list[float]]] = {}
    for key, row in (decode or {}).get("members", {}).items():
        if "images_per_s_rounds" in row and row.get("measured_on") != STAND_IN:
            name, workers_text = key.rsplit("-w", 1)
            by_decoder.setdefault(name, {})[int(workers_text)] = row["images_per_s_rounds"]
    for name, points in by_decoder.items():
        _curve(ax, f"pipeline {name}", points)
    ax.set(xlabel="num_workers", ylabel="images/s (median, bars: rounds)", title="Throughput by worker count")
    ax.legend(fontsize=8)
    return _save(fig, out / "device-workers.png")


def draw_pin(pin: dict[str, Any], out: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    names = list(pin["cases"])
    for ax, key, unit in ((left, "images_per_s", "images/s"), (right, "h2d_ms_per_batch", "H2D ms per batch")):
        bars = [_bar(pin["cases"][n].get(f"{key}_rounds") or [0.0]) for n in names]
        ax.bar(names, [b[0] for b in bars], yerr=list(zip(*[b[1] for b in bars], strict=True)), capsize=4)
        ax.set(ylabel=unit)
    right.axhline(pin["h2d_floor_ms_per_batch"], color="k", ls="--", label="floor: batch bytes / peak copy")
    right.legend(fontsize=8)
    source = f" (from {pin['from']})" if "from" in pin else ""
    fig.suptitle(f"pin_memory with the copy in the timed pass{source}")
    return _save(fig, out / "device-pin.png")


def draw_bandwidth(bw: dict[str, Any], out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4))
    names = list(bw["copies"])
    rows = [bw["copies"][n] for n in names]
    ax.bar(names, [r["median"] for r in rows], capsize=4,
           yerr=[[r["median"] - r["p10"] for r in rows], [r["p90"] - r["median"] for r in rows]])
    ax.axhline(bw["peak_gb_s"], color="k", ls="--", label=f"measured peak {bw['peak_gb_s']:.1f} GB/s")
    ax.set(ylabel="GB/s (median, bars: p10-p90)", title="Host-to-device copies")
    ax.legend(fontsize=8)
    return _save(fig, out / "device-bandwidth.png")


def draw_feed(feed: dict[str, Any], out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.bar(["measured", "simulated"], [feed["au_measured"], feed["au_predicted"]])
    ax.axhline(feed["au_ceiling"], color="k", ls="--", label="ceiling")
    ax.set(ylim=(0, 1.05), ylabel="accelerator utilization",
           title=f"{feed['pipeline']}, {feed['step_ms_measured']:.0f} ms GPU step")
    ax.legend(fontsize=8)
    return _save(fig, out / "device-feed.png")


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python3 tools/device_charts.py", description=__doc__)
    parser.add_argument("folders", nargs="+", type=Path, help="campaign output folders")
    parser.add_argument("--out", type=Path, default=Path("reports/device"), help="chart folder (reports/device)")
    args = parser.parse_args(argv)
    steps, left_out = merged_steps(args.folders)
    args.out.mkdir(parents=True, exist_ok=True)
    drawn = []
    if "workers" in steps or "decode" in steps:
        drawn.append(draw_workers(steps.get("workers"), steps.get("decode"), args.out))
    if "pin" in steps:
        drawn.append(draw_pin(steps["pin"], args.out))
    if "bandwidth" in steps:
        drawn.append(draw_bandwidth(steps["bandwidth"], args.out))
    if "feed" in steps:
        drawn.append(draw_feed(steps["feed"], args.out))
    print("\n".join(str(p) for p in drawn) or "no finished step with figures: nothing to draw")
    if left_out:
        print(f"not drawn: {'; '.join(left_out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
