"""The device campaign's steps that no benchmark of the suite measures: copy bandwidth, GPU decode, a fed GPU step.

Loader passes are timed by the suite's primitive (:class:`lfw.measure.LoaderPass`, interleaved by
:class:`lfw.measure.rotation.Rotation`, summarized by :func:`lfw.suite.record.pass_record`); only what happens on the
device alone (a copy, a decode of bytes already in memory) is timed on the device's clock (:mod:`tools.device_gpu`).
Every figure is written beside its ceiling, into ``ctx.summary`` as it is measured. The GPU paths run on
``ctx.device``: in a dry run without a GPU, the CPU stand-in, its figures marked so.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from statistics import median
from typing import Any

import torch
from torch.utils.data import Dataset, default_collate
from tqdm import tqdm

from lfw.errors import one_line
from lfw.measure import LoaderConfig, LoaderPass, PassResult
from lfw.measure.moves import batch_bytes
from lfw.measure.rotation import LoaderMember, Member, Rotation
from lfw.pipelines import Pipeline
from lfw.results import Case
from lfw.results import keys as K
from lfw.results.knobs import NUM_WORKERS, TRANSFORM
from lfw.suite.record import pass_record
from lfw.suite.runner import ROTATION_SEED
from tools import device_gpu as G
from tools.device_context import STAND_IN, Context, Skip, Stopped

BATCH = 64
LARGE_BYTES = 256 * 2**20
CPU_DECODERS = ("pil", "tvio", "simplejpeg")
GPU_DECODE = "gpu-decode"
KEEP = (K.IMAGES_PER_S, K.CPU_MS_PER_IMAGE, K.MAIN_CPU_SHARE, K.CPU_UTILIZATION)
DECODE_WARMUP_ROUNDS = 1  # the first pass of every member: decoders' handles, CUDA's start, the page cache


def preset_batch_bytes(ctx: Context, transform: str) -> int:
    """Bytes of one batch of :data:`BATCH` images of a preset: what a worker hands over and a copy moves."""
    return int(batch_counts(ctx, transform)["batch_bytes"])


def batch_counts(ctx: Context, transform: str) -> dict[str, Any]:
    """Per batch of a preset: its bytes, its tensors (with workers, each is one shared-memory segment, and one
    file descriptor passed under the ``file_descriptor`` sharing strategy) and the strategy in use."""
    from lfw.data.dataset import LFWDataset

    data = LFWDataset(ctx.root(), transform=transform)
    batch = default_collate([data[i] for i in range(min(BATCH, len(data)))])
    tensors = sum(1 for item in batch if isinstance(item, torch.Tensor))
    return {"batch_bytes": batch_bytes(batch), "tensors_per_batch": tensors,
            "sharing_strategy": torch.multiprocessing.get_sharing_strategy()}


def peak_rates(device: str, repeats: int = 5) -> list[float]:
    """Pinned copies of a 256 MiB buffer, GB/s: the best of them is this machine's measured copy peak."""
    return G.copy_bandwidth(LARGE_BYTES, pinned=True, repeats=repeats, device=device)


def step_bandwidth(ctx: Context) -> dict[str, Any]:
    """Host-to-device GB/s for a batch-sized and a 256 MiB buffer, pinned and pageable, against the peak."""
    device = ctx.gpu_device()
    repeats = 3 if ctx.dry_run else 20
    sizes = {"batch": preset_batch_bytes(ctx, "none"), "256MiB": LARGE_BYTES}
    rows: dict[str, Any] = ctx.summary.setdefault("copies", {})
    ctx.summary["repeats"] = repeats
    with tqdm(total=4, desc="bandwidth", unit="size", file=sys.stderr) as bar:
        for label, nbytes in sizes.items():
            for pinned in (True, False):
                rates = G.copy_bandwidth(nbytes, pinned=pinned, repeats=repeats, device=device)
                rows[f"{label}-{'pinned' if pinned else 'pageable'}"] = {
                    "bytes": nbytes, "gb_s_rounds": [round(r, 3) for r in rates], **G.spread(rates)}
                bar.update()
    peak = max(rows["256MiB-pinned"]["gb_s_rounds"])
    for row in rows.values():
        row["share_of_peak"] = round(row["median"] / peak, 4)
    ctx.summary.update({"peak_gb_s": peak, "peak_is": "the best pinned 256 MiB copy"})
    return ctx.summary


def decode_members(ctx: Context, root: Any, images: int) -> tuple[dict[str, Member], dict[str, str]]:
    """One loader per decoder and worker count (batch 64), and why a decoder is left out. Workers are not
    persistent: each pass starts its own and the rotation stops them after it, so one member's workers are
    alive at a time (kept alive, 4 decoders x 26 workers held about 8 descriptors each in the main process). The
    GPU decode members read bytes in the workers and decode in the main process on ``ctx.device`` (left out,
    saying why, where there is none)."""
    members: dict[str, Member] = {}
    left_out: dict[str, str] = {}
    for decoder in CPU_DECODERS:
        try:
            data: Dataset = Pipeline(decoder).dataset(root, images, batch_size=BATCH)
        except Exception as exc:  # a decoder whose package is missing: the others are measured
            left_out[decoder] = one_line(exc)
            continue
        for w in ctx.workers:
            loader = LoaderConfig(batch_size=BATCH, num_workers=w).build(data)
            members[f"{decoder}-w{w}"] = LoaderMember(LoaderPass(loader, memory_interval_s=None))
    if ctx.device is None:
        left_out[GPU_DECODE] = G.cuda_missing() or "no CUDA device"
        return members, left_out
    raw = G.jpeg_bytes(root, images)
    for w in ctx.workers:
        loader = LoaderConfig(batch_size=BATCH, num_workers=w).build(raw, G.collate_bytes)
        members[f"{GPU_DECODE}-w{w}"] = LoaderMember(LoaderPass(loader, memory_interval_s=None,
                                                                step=G.decode_step(ctx.device)))
    return members, left_out


def member_row(results: list[PassResult], cores: int) -> dict[str, Any]:
    """A member's kept figures (:data:`KEEP`, medians and rounds) from its passes; ``error`` when they cannot be
    summarized, so one member's failure loses no other member's figures."""
    try:
        extra = pass_record(results, usable_cores=cores).as_extra_info()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {one_line(exc)}"}
    return {k: v for k, v in extra.items() if k in KEEP or k in [K.rounds(x) for x in KEEP]}


def _cases(label: str, measured: dict[str, list[PassResult]], info: dict[str, Any], cores: int) -> list[Case]:
    """A decoder's members as suite cases (summarized like the benchmarks' records), for the knee."""
    cases = []
    for key, results in measured.items():
        if not key.startswith(label + "-w") or not results:
            continue
        w = int(key.rsplit("-w", 1)[1])
        extra = {**pass_record(results, workers=w, usable_cores=cores).as_extra_info(), K.ROTATION: info}
        cases.append(Case(f"decode[{key}]", f"decode[{key}]", "decode", {NUM_WORKERS.key: w, TRANSFORM.key: label},
                          tuple(r.wall_s for r in results), extra))
    return cases


def cpu_ms_outside_step(results: list[PassResult]) -> float | None:
    """Median CPU ms per image of the process tree outside the pass's ``step`` (the device decode and its wait).

    CUDA's default wait spins the calling thread, so the tree's CPU time counts a GPU decode's wall time as CPU work:
    the raw figure is an upper bound of what the GPU pipeline costs the CPU, this one a lower bound (it also leaves
    out the decode's own host work, e.g. the Huffman stage of a hybrid nvJPEG decode)."""
    values = [1e3 * max(0.0, r.cpu_s - sum(r.steps_s)) / r.images for r in results if r.cpu_s is not None and r.images]
    return round(float(median(values)), 4) if values else None


def decoder_rows(ctx: Context, measured: dict[str, list[PassResult]], info: dict[str, Any],
                 labels: list[str]) -> dict[str, Any]:
    """Each decoder's best worker count, its rate, CPU per image and knee, and a CPU decoder's ceiling (one
    process's rate x the usable cores); the GPU decoder's row says where it ran."""
    from lfw.results.recommend import recommend

    decoders: dict[str, Any] = {}
    for label in labels:
        cases = _cases(label, measured, info, ctx.cores)
        if not cases:
            continue
        best = max(cases, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0)
        knee = recommend(label, cases)
        row: dict[str, Any] = {"best_workers": best.knob(NUM_WORKERS),
                               "best_images_per_s": best.number(K.IMAGES_PER_S),
                               "best_cpu_ms_per_image": best.number(K.CPU_MS_PER_IMAGE),
                               "knee": knee.verdict() if knee else None,
                               "knee_evidence": knee.evidence() if knee else None}
        w0 = next((c for c in cases if c.knob(NUM_WORKERS) == 0), None)
        if label == GPU_DECODE:
            row["measured_on"] = STAND_IN if ctx.stand_in else "cuda"
            row["best_cpu_ms_per_image_outside_decode"] = cpu_ms_outside_step(measured[best.name[len("decode["):-1]])
        elif w0 is not None:
            row["ceiling_images_per_s"] = round((w0.number(K.IMAGES_PER_S) or 0.0) * ctx.cores, 2)
        decoders[label] = row
    return decoders


def summarize_decode(ctx: Context, rounds: dict[str, list[PassResult]], errors: dict[str, str | None],
                     info: dict[str, Any]) -> None:
    """Each member's row and each decoder's into ``ctx.summary``, from the timed passes each member has."""
    s = ctx.summary
    s["members"] = {key: member_row(r, ctx.cores) if r else {"error": errors.get(key) or "no timed pass"}
                    for key, r in rounds.items()}
    for key, row in s["members"].items():
        if key.startswith(GPU_DECODE):
            row["measured_on"] = STAND_IN if ctx.stand_in else "cuda"
    labels = [d for d in (*CPU_DECODERS, GPU_DECODE) if d not in s["left_out"]]
    kept = {key: r for key, r in rounds.items() if "error" not in s["members"][key]}
    s["decoders"] = decoder_rows(ctx, kept, info, labels)
    cpu = {n: d for n, d in s["decoders"].items() if n != GPU_DECODE}
    if cpu:
        s["fastest_cpu"] = max(cpu, key=lambda n: cpu[n]["best_images_per_s"] or 0.0)


def step_decode(ctx: Context) -> dict[str, Any]:
    """CPU decode pipelines at every worker count beside ``decode_jpeg`` on the device fed by workers reading
    bytes, interleaved round by round; each decoder's best count, its knee and its ceiling. Stopped part-way,
    the passes measured so far are summarized before the step ends."""
    root, images = ctx.root(), ctx.profile.pass_images("uint8")
    members, left_out = decode_members(ctx, root, images)
    s = ctx.summary
    s.update({"images_per_pass": images, "rounds": ctx.rounds, "left_out": left_out})
    rotation = Rotation(members, ctx.rounds, warmup_rounds=DECODE_WARMUP_ROUNDS, seed=ROTATION_SEED,
                        isolate=list(members))
    info = {"group": "decode", "seed": ROTATION_SEED, K.ROUNDS: ctx.rounds, "members": list(members)}
    try:
        with tqdm(total=rotation.passes, desc="decode rotation", unit="pass", file=sys.stderr) as bar:

            def advance(_key: str) -> None:
                bar.update()

            measured = rotation.run(progress=advance)
    except Stopped:  # the timed passes so far: each member's passes after its warm-up
        summarize_decode(ctx, {key: m.runner.results[DECODE_WARMUP_ROUNDS:] for key, m in members.items()
                               if isinstance(m, LoaderMember)}, {}, info)
        raise
    summarize_decode(ctx, {key: m.results for key, m in measured.items()},
                     {key: m.error for key, m in measured.items()}, info)
    gpu = s["decoders"].get(GPU_DECODE)
    if gpu is not None:
        only = G.decode_only(G.jpeg_bytes(root, images), BATCH, max(2, images // BATCH), ctx.gpu_device())
        gpu["ceiling_images_per_s"] = G.spread(only)["median"]
        if "fastest_cpu" in s:
            fastest = s["decoders"][s["fastest_cpu"]]
            gpu["cpu_ms_saved_per_image"] = round((fastest["best_cpu_ms_per_image"] or 0.0)
                                                  - (gpu["best_cpu_ms_per_image"] or 0.0), 4)
            if gpu.get("best_cpu_ms_per_image_outside_decode") is not None:  # the saving if the wait never spun
                gpu["cpu_ms_saved_per_image_at_most"] = round((fastest["best_cpu_ms_per_image"] or 0.0)
                                                              - gpu["best_cpu_ms_per_image_outside_decode"], 4)
    return s


def step_feed(ctx: Context) -> dict[str, Any]:
    """A training step of about ``ctx.step_ms`` on the device fed by a decode pipeline: measured accelerator
    utilization (AU) beside the simulator's prediction from the same pass (:mod:`lfw.diagnose.predict`), and the
    ceiling 1; whether the step's products stayed finite."""
    from lfw.diagnose.predict import diagnose, fit_model
    from lfw.diagnose.simulator import simulate
    from lfw.diagnose.training import measure_pipeline, pipeline_setup

    workers = ctx.feed_workers if ctx.feed_workers is not None else min(8, ctx.cores)
    try:
        setup = pipeline_setup(ctx.pipeline, workers=workers if "=" in ctx.pipeline else None)
    except Exception as exc:
        raise Skip(f"pipeline {ctx.pipeline!r}: {one_line(exc)}") from None
    step, facts = G.matmul_step(ctx.step_ms, ctx.gpu_device())
    s = ctx.summary
    s.update({"pipeline": setup.label, "workers": setup.config.num_workers, "step_ms_target": ctx.step_ms, **facts})
    batches = 40 if ctx.dry_run else 300
    m = measure_pipeline(setup, ctx.root(), batches, step, step_label=f"matmul {ctx.step_ms:g} ms", warmup=True)
    s.update({"batches": m.result.batches, "step_ms_measured": round(m.step_s * 1e3, 3),
              "au_measured": round(m.accelerator_utilization, 4), "au_ceiling": 1.0,
              "step_output_finite": step.output_finite()})
    diagnosis = diagnose(m, ctx.cores, emulated_step=False)
    model = fit_model(m)
    simulated = simulate(replace(model, seed=0), max_batches=m.result.batches)
    s.update({"au_predicted": round(1.0 - simulated.steady_data_wait_fraction, 4),
              "batches_per_s_measured": round(diagnosis.measured_batches_per_s, 3),
              "batches_per_s_predicted": round(diagnosis.predicted_batches_per_s, 3),
              "prediction_error": round(diagnosis.error, 4), "bottleneck": diagnosis.bottleneck,
              "workers_needed": diagnosis.workers_needed, "recommendation": diagnosis.recommendation,
              "load_ms_per_batch": round(model.load_s * 1e3, 3), "transfer_ms": round(model.transfer_s * 1e3, 3)})
    return s
