"""The device campaign's steps that no benchmark of the suite measures: copy bandwidth, GPU decode, a fed GPU step.

Loader passes are timed by the suite's primitive (:class:`lfw.measure.LoaderPass`, interleaved by
:class:`lfw.measure.rotation.Rotation`, summarized by :func:`lfw.suite.record.pass_record`); only what happens on the
device alone (a copy, a decode of bytes already in memory) is timed with CUDA events (:mod:`tools.device_gpu`).
Every figure is written beside its ceiling.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import torch
from torch.utils.data import Dataset, default_collate
from tqdm import tqdm

from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.moves import batch_bytes
from lfw.measure.rotation import LoaderMember, Measured, Member, Rotation
from lfw.pipelines import Pipeline
from lfw.results import Case
from lfw.results import keys as K
from lfw.suite.record import pass_record
from lfw.suite.runner import ROTATION_SEED
from tools import device_gpu as G
from tools.device_context import Context, Skip

BATCH = 64
LARGE_BYTES = 256 * 2**20
CPU_DECODERS = ("pil", "tvio", "simplejpeg")
GPU_DECODE = "gpu-decode"
KEEP = (K.IMAGES_PER_S, K.CPU_MS_PER_IMAGE, K.MAIN_CPU_SHARE, K.CPU_UTILIZATION)


def preset_batch_bytes(ctx: Context, transform: str) -> int:
    """Bytes of one batch of :data:`BATCH` images of a preset: what a worker hands over and a copy moves."""
    return batch_counts(ctx, transform)["batch_bytes"]


def batch_counts(ctx: Context, transform: str) -> dict[str, Any]:
    """Per batch of a preset: its bytes, its tensors (with workers, each is one shared-memory segment, and one
    file descriptor passed under the ``file_descriptor`` sharing strategy) and the strategy in use."""
    from lfw.data.dataset import LFWDataset

    data = LFWDataset(ctx.root(), transform=transform)
    batch = default_collate([data[i] for i in range(min(BATCH, len(data)))])
    tensors = sum(1 for item in batch if isinstance(item, torch.Tensor))
    return {"batch_bytes": batch_bytes(batch), "tensors_per_batch": tensors,
            "sharing_strategy": torch.multiprocessing.get_sharing_strategy()}


def peak_rates(repeats: int = 5) -> list[float]:
    """Pinned copies of a 256 MiB buffer, GB/s: the best of them is this machine's measured copy peak."""
    return G.copy_bandwidth(LARGE_BYTES, pinned=True, repeats=repeats)


def step_bandwidth(ctx: Context) -> dict[str, Any]:
    """Host-to-device GB/s for a batch-sized and a 256 MiB buffer, pinned and pageable, against the peak."""
    repeats = 3 if ctx.dry_run else 20
    sizes = {"batch": preset_batch_bytes(ctx, "none"), "256MiB": LARGE_BYTES}
    rows: dict[str, Any] = {}
    with tqdm(total=4, desc="bandwidth", unit="size", file=sys.stderr) as bar:
        for label, nbytes in sizes.items():
            for pinned in (True, False):
                rates = G.copy_bandwidth(nbytes, pinned=pinned, repeats=repeats)
                rows[f"{label}-{'pinned' if pinned else 'pageable'}"] = {
                    "bytes": nbytes, "gb_s_rounds": [round(r, 3) for r in rates], **G.spread(rates)}
                bar.update()
    peak = max(rows["256MiB-pinned"]["gb_s_rounds"])
    for row in rows.values():
        row["share_of_peak"] = round(row["median"] / peak, 4)
    return {"peak_gb_s": peak, "peak_is": "the best pinned 256 MiB copy", "repeats": repeats, "copies": rows}


def _members(ctx: Context, root: Any, images: int, gpu: bool) -> tuple[dict[str, Member], dict[str, str]]:
    """One loader per decoder and worker count (persistent workers, batch 64), and why a decoder is left out."""
    members: dict[str, Member] = {}
    left_out: dict[str, str] = {}
    for decoder in CPU_DECODERS:
        try:
            data: Dataset = Pipeline(decoder).dataset(root, images, batch_size=BATCH)
        except Exception as exc:  # a decoder whose package is missing: the others are measured
            left_out[decoder] = str(exc)
            continue
        for w in ctx.workers:
            loader = LoaderConfig(batch_size=BATCH, num_workers=w, persistent_workers=w > 0).build(data)
            members[f"{decoder}-w{w}"] = LoaderMember(LoaderPass(loader, memory_interval_s=None))
    if gpu:
        raw = G.jpeg_bytes(root, images)
        for w in ctx.workers:
            loader = LoaderConfig(batch_size=BATCH, num_workers=w, persistent_workers=w > 0).build(
                raw, G.collate_bytes)
            members[f"{GPU_DECODE}-w{w}"] = LoaderMember(LoaderPass(loader, memory_interval_s=None,
                                                                    step=G.gpu_decode_step()))
    return members, left_out


def _cases(label: str, measured: dict[str, Measured], info: dict[str, Any], cores: int) -> list[Case]:
    """A decoder's members as suite cases (summarized like the benchmarks' records), for the knee."""
    cases = []
    for key, m in measured.items():
        if not key.startswith(label + "-w") or not m.results:
            continue
        w = int(key.rsplit("-w", 1)[1])
        extra = {**pass_record(m.results, workers=w, usable_cores=cores).as_extra_info(), K.ROTATION: info}
        cases.append(Case(f"decode[{key}]", f"decode[{key}]", "decode", {"num_workers": w, "transform": label},
                          tuple(r.wall_s for r in m.results), extra))
    return cases


def step_decode(ctx: Context) -> dict[str, Any]:
    """CPU decode pipelines at every worker count beside GPU ``decode_jpeg`` fed by workers reading bytes,
    interleaved round by round; each decoder's best count, its knee and its ceiling."""
    from lfw.results.recommend import recommend

    root, images = ctx.root(), ctx.profile.pass_images("uint8")
    gpu_reason = G.cuda_missing()
    members, left_out = _members(ctx, root, images, gpu_reason is None)
    rotation = Rotation(members, ctx.rounds, warmup_rounds=1, seed=ROTATION_SEED, isolate=list(members))
    with tqdm(total=rotation.passes, desc="decode rotation", unit="pass", file=sys.stderr) as bar:
        def advance(_key: str) -> None:
            bar.update()

        measured = rotation.run(progress=advance)
    info = {"group": "decode", "seed": ROTATION_SEED, K.ROUNDS: ctx.rounds, "members": list(members)}
    rows = {key: {k: v for k, v in pass_record(m.results, usable_cores=ctx.cores).as_extra_info().items()
                  if k in KEEP or k in [K.rounds(x) for x in KEEP]}
            if m.results else {"error": m.error} for key, m in measured.items()}
    decoders: dict[str, Any] = {}
    for label in [d for d in CPU_DECODERS if d not in left_out] + ([GPU_DECODE] if gpu_reason is None else []):
        cases = _cases(label, measured, info, ctx.cores)
        if not cases:
            continue
        best = max(cases, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0)
        knee = recommend(label, cases)
        w0 = next((c for c in cases if c.value("num_workers") == 0), None)
        decoders[label] = {"best_workers": best.value("num_workers"), "best_images_per_s": best.number(K.IMAGES_PER_S),
                           "best_cpu_ms_per_image": best.number(K.CPU_MS_PER_IMAGE),
                           "knee": knee.verdict() if knee else None, "knee_evidence": knee.evidence() if knee else None}
        if label != GPU_DECODE and w0 is not None:  # one process's rate x the usable cores
            decoders[label]["ceiling_images_per_s"] = round((w0.number(K.IMAGES_PER_S) or 0.0) * ctx.cores, 2)
    summary: dict[str, Any] = {"images_per_pass": images, "rounds": ctx.rounds, "members": rows,
                               "decoders": decoders, "left_out": left_out}
    cpu = [d for name, d in decoders.items() if name != GPU_DECODE]
    if cpu:
        fastest = max(cpu, key=lambda d: d["best_images_per_s"] or 0.0)
        summary["fastest_cpu"] = next(n for n, d in decoders.items() if d is fastest)
    if gpu_reason is not None:
        summary["gpu_skipped"] = gpu_reason
    elif GPU_DECODE in decoders and cpu:
        only = G.gpu_decode_only(G.jpeg_bytes(root, images), BATCH, max(2, images // BATCH))
        gpu = decoders[GPU_DECODE]
        gpu["ceiling_images_per_s"] = G.spread(only)["median"]
        gpu["cpu_ms_saved_per_image"] = round((fastest["best_cpu_ms_per_image"] or 0.0)
                                              - (gpu["best_cpu_ms_per_image"] or 0.0), 4)
    return summary


def step_feed(ctx: Context) -> dict[str, Any]:
    """A GPU step of about ``ctx.step_ms`` fed by a decode pipeline: measured accelerator utilization (AU)
    beside the simulator's prediction from the same pass (:mod:`lfw.diagnose.predict`), and the ceiling 1."""
    from lfw.diagnose.predict import diagnose, fit_model
    from lfw.diagnose.simulator import simulate
    from lfw.diagnose.training import measure_pipeline, pipeline_setup

    workers = ctx.feed_workers if ctx.feed_workers is not None else min(8, ctx.cores)
    try:
        setup = pipeline_setup(ctx.pipeline, workers=workers if "=" in ctx.pipeline else None)
    except Exception as exc:
        raise Skip(f"pipeline {ctx.pipeline!r}: {exc}") from None
    step, facts = G.matmul_step(ctx.step_ms)
    batches = 40 if ctx.dry_run else 300
    m = measure_pipeline(setup, ctx.root(), batches, step, step_label=f"matmul {ctx.step_ms:g} ms", warmup=True)
    diagnosis = diagnose(m, ctx.cores, emulated_step=False)
    model = fit_model(m)
    simulated = simulate(replace(model, seed=0), max_batches=m.result.batches)
    return {"pipeline": setup.label, "workers": setup.config.num_workers, "batches": m.result.batches,
            "step_ms_target": ctx.step_ms, "step_ms_measured": round(m.step_s * 1e3, 3), **facts,
            "au_measured": round(m.accelerator_utilization, 4),
            "au_predicted": round(1.0 - simulated.steady_data_wait_fraction, 4), "au_ceiling": 1.0,
            "batches_per_s_measured": round(diagnosis.measured_batches_per_s, 3),
            "batches_per_s_predicted": round(diagnosis.predicted_batches_per_s, 3),
            "prediction_error": round(diagnosis.error, 4), "bottleneck": diagnosis.bottleneck,
            "workers_needed": diagnosis.workers_needed, "recommendation": diagnosis.recommendation,
            "load_ms_per_batch": round(model.load_s * 1e3, 3), "transfer_ms": round(model.transfer_s * 1e3, 3)}
