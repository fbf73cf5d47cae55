"""Many passes to one record: the ``extra_info`` every benchmark case saves.

Throughput, time to first batch and memory are summarized over rounds by the median (memory peaks by the
maximum), and every per-round value is kept (``*_rounds``) so that the gate can test differences statistically
and the report can draw error bars.
The coefficient of variation (``images_per_s_cv``) says how much to trust a case.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median
from typing import Any

from lfw.measure.loader_pass import PassResult
from lfw.spread import coefficient_of_variation


def summarize(results: Sequence[PassResult], *, ceilings: Sequence[float] | None = None,
              workers: int | None = None, usable_cores: int | None = None) -> dict[str, Any]:
    """The extra_info record of a case measured as ``results`` (one per round).

    With ``ceilings`` (the single-core rate of this transform measured in the same round of the rotation, one
    per result) it adds ``ceiling_images_per_s = per_core x min(max(workers, 1), usable_cores)`` and
    ``efficiency``, both per round: round r's rate over round r's ceiling, a paired ratio.
    """
    if not results:
        raise ValueError("no passes to summarize")
    rates = [r.images_per_s for r in results]
    info: dict[str, Any] = {
        "rounds": len(results),
        "images": results[-1].images,
        "batches": results[-1].batches,
        "images_per_s": round(median(rates), 2),
        "images_per_s_rounds": [round(v, 2) for v in rates],
        "images_per_s_cv": round(coefficient_of_variation(rates), 4),
        "wall_s_rounds": [round(r.wall_s, 6) for r in results],
        "ttfb_s": round(median(r.ttfb_s for r in results), 6),
        "ttfb_s_rounds": [round(r.ttfb_s, 6) for r in results],
        "steady_images_per_s": round(median(r.steady_images_per_s for r in results), 2),
        "steady_images_per_s_rounds": [round(r.steady_images_per_s, 2) for r in results],
    }
    pooled = PassResult(0, 0, 0.0, 0.0, [w for r in results for w in r.waits_s])
    info.update(pooled.wait_percentiles_ms())
    if any(r.steps_s for r in results):
        info["data_wait_fraction"] = round(median(r.data_wait_fraction for r in results), 4)
        info["data_wait_fraction_rounds"] = [round(r.data_wait_fraction, 4) for r in results]
    with_memory = [r.memory for r in results if r.memory is not None]
    if with_memory:
        per_round = [m.as_extra_info() for m in with_memory]
        for key in sorted(set().union(*per_round)):
            values = [d[key] for d in per_round if key in d]
            info[key] = round(max(values) if key.endswith("_peak_mib") else median(values), 4)
        for key in [k for k in info if k.endswith("_growth_mib")]:
            if all(key in d for d in per_round):
                info[f"{key}_rounds"] = [d[key] for d in per_round]
        info["workers_seen"] = len(with_memory[-1].worker_pids)
        info["timeline"] = with_memory[-1].timeline()  # one pass drawn: the last
        # The sampler's own CPU time over the machine's CPU capacity during the passes: what sampling costs.
        capacity = sum(r.wall_s for r in results if r.memory is not None) * (usable_cores or 1)
        sampler_cpu = sum(m.sampler_cpu_s for m in with_memory)
        info["sampler_cpu_fraction"] = round(sampler_cpu / capacity, 5) if capacity else 0.0
    if workers is not None:
        info["workers"] = workers
    if usable_cores is not None:
        info["usable_cores"] = usable_cores
    if ceilings and workers is not None and usable_cores:
        if len(ceilings) != len(results):
            raise ValueError(f"{len(ceilings)} ceilings for {len(results)} rounds: they must be paired by round")
        parallel = min(max(workers, 1), usable_cores)
        efficiency = [rate / (ceiling * parallel) for rate, ceiling in zip(rates, ceilings, strict=True)]
        info["per_core_images_per_s"] = round(median(ceilings), 2)
        info["per_core_images_per_s_rounds"] = [round(c, 2) for c in ceilings]
        info["ceiling_images_per_s"] = round(median(ceilings) * parallel, 2)
        info["efficiency"] = round(median(efficiency), 4)
        info["efficiency_rounds"] = [round(e, 4) for e in efficiency]
    return info
