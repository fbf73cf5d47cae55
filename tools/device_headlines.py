"""One or two printed lines per finished step of the device campaign, read from its summary (``campaign.json``):
the figures a reader of the log's last screen needs, each beside its ceiling. Nothing here is measured. Figures of
the dry run's CPU stand-in say so on every line: they are never GPU figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.device_context import STAND_IN


def _num(value: Any, digits: int = 0) -> str:
    return "?" if value is None else f"{value:,.{digits}f}"


def _where(row: dict[str, Any]) -> str:
    return f" [{STAND_IN}]" if row.get("measured_on") == STAND_IN else ""


def pin(s: dict[str, Any]) -> list[str]:
    rows = [f"{name} {_num(c.get('images_per_s'))} img/s, copy {_num(c.get('h2d_ms_per_batch'), 2)} ms/batch"
            for name, c in s["cases"].items()]
    return ["; ".join(rows) + f" (copy floor {_num(s['h2d_floor_ms_per_batch'], 2)} ms at "
            f"{_num(s['peak_h2d_gb_s'], 1)} GB/s)"]


def bandwidth(s: dict[str, Any]) -> list[str]:
    return ["; ".join(f"{name} {_num(r['median'], 1)} GB/s ({r['share_of_peak']:.0%} of peak)"
                      for name, r in s["copies"].items()) + f"; peak {_num(s['peak_gb_s'], 1)} GB/s"]


def decode(s: dict[str, Any]) -> list[str]:
    lines = [f"{name}{_where(d)}: best {d['best_workers']} workers {_num(d['best_images_per_s'])} img/s "
             f"(ceiling {_num(d.get('ceiling_images_per_s'))}), {_num(d['best_cpu_ms_per_image'], 3)} CPU ms/img, "
             f"knee {d['knee']}" for name, d in s["decoders"].items()]
    if "gpu-decode" in s.get("left_out", {}):
        lines.append(f"GPU decode left out: {s['left_out']['gpu-decode']}")
    gpu = s["decoders"].get("gpu-decode", {})
    if "cpu_ms_saved_per_image" in gpu:
        most = gpu.get("cpu_ms_saved_per_image_at_most")
        upto = f" to {_num(most, 3)} (its wait for the device counted as idle)" if most is not None else ""
        lines.append(f"GPU decode{_where(gpu)} saves {_num(gpu['cpu_ms_saved_per_image'], 3)}{upto} CPU ms per image "
                     f"against {s.get('fastest_cpu')}")
    return lines


def workers(s: dict[str, Any]) -> list[str]:
    lines = [f"knee {t}: {k['verdict']} ({k['evidence']})" for t, k in s["knee"].items()]
    top = max(s["cases"].values(), key=lambda c: c["params"]["num_workers"])
    lines.append(f"at {top['params']['num_workers']} workers: main process {_num(top.get('main_cpu_share', 0) * 100)}%"
                 f" of the tree's CPU, CPU utilization {_num(top.get('cpu_utilization', 0) * 100)}%")
    return lines


def feed(s: dict[str, Any]) -> list[str]:
    finite = "" if s.get("step_output_finite", True) else "; the step's products were NOT finite"
    return [f"{s['pipeline']} x {s['step_ms_measured']} ms step: AU measured {s['au_measured']:.1%}, simulated "
            f"{s['au_predicted']:.1%} (ceiling 100%); {s['recommendation']}{finite}"]


def baseline(s: dict[str, Any]) -> list[str]:
    where = " (a scratch baseline: never one to commit)" if s.get("scratch") else ""
    verdict = "passed" if s["aa_passed"] else "FAILED" if s.get("aa_judged", True) else "recorded, not judged"
    return [f"{s['baseline']} saved{where}; A/A gate exit {s['gate_exit']} ({verdict})"]


HEADLINES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "pin": pin, "bandwidth": bandwidth, "decode": decode, "workers": workers, "feed": feed, "baseline": baseline}


def headlines(name: str, step: dict[str, Any]) -> list[str]:
    """The step's printed lines; none for a step without a summary, one saying so if the summary is not the
    shape this version writes."""
    summary = step.get("summary")
    if step.get("status") != "done" or not summary:
        return []
    prefix = f"[{STAND_IN}] " if step.get("measured_on") == STAND_IN else ""
    try:
        return [f"   {prefix}{line}" for line in HEADLINES[name](summary)]
    except (KeyError, TypeError, ValueError) as exc:
        return [f"   (no headline: {type(exc).__name__} {exc})"]
