"""Fixed, made-up measurements for the record writers: every writer's record on them is compared with the record
the writers saved before the record had a type (tests/fixtures/records_v0.json).

``python -m tests.record_inputs OUT.json`` writes the records the current writers make of these inputs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lfw.distributed.gathered import Coverage, GatheredRun, records
from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import MemoryStats, PassResult
from lfw.measure.memory import TreeSnapshot
from lfw.measure.rotation import Measured
from lfw.measure.stages import StageTotals
from lfw.results import keys as K
from lfw.suite.case_record import rotated_record, single_record
from lfw.suite.matrix import GROUPS
from lfw.suite.profiles import PROFILES
from lfw.suite.runner import CAPACITY, MEMMAP_CEILING, GroupRotation, own_decoder_member

ROUNDS = 3


def memory(r: int) -> MemoryStats:
    """Round ``r``'s memory: two workers (pids 11, 12), samples in the pass, growth that differs by round."""
    before = TreeSnapshot(0.0, 300.0 + r, 250.0 + r, 200.0 + r)
    start = TreeSnapshot(0.1, 400.0 + r, 330.123 + r, 260.0 + r, {11: 30.0, 12: 31.5})
    samples = [TreeSnapshot(0.3, 420.0 + 3 * r, 350.0 + 2 * r, 270.0, {11: 33.0, 12: 34.0})]
    end = TreeSnapshot(0.6, 410.0 + 2 * r, 345.6789 * (1 + r / 7), 266.0 + r / 3, {11: 35.0 + r, 12: 33.25})
    return MemoryStats(before, start, end, samples, [11, 12], sampler_cpu_s=0.0123 * (r + 1))


def passes(*, rate: float = 1000.0, stages: bool = False) -> list[PassResult]:
    """Three rounds of 40 batches of 8 images, with memory, steps, CPU times, a member's own figure and
    (``stages``) a stage breakdown."""
    out = []
    for r in range(ROUNDS):
        wall = 320 / (rate * (1 + 0.0731 * r - 0.05 * (r == 2)))
        arrivals = [0.01 + wall * (b + 1) / 41 for b in range(40)]
        totals = StageTotals({"receive": 0.01 * (r + 1), "collate": 0.02}, {"read": 0.03, "decode": 0.1 + r / 97},
                             320) if stages else None
        out.append(PassResult(images=320, batches=40, wall_s=wall, ttfb_s=0.0123457 * (r + 1),
                              waits_s=[0.001 * ((b * 7 + r) % 5) for b in range(39)], memory=memory(r),
                              steps_s=[wall / 80] * 40, t0=0.0, started_unix=1_700_000_000.123456 + r,
                              main_cpu_s=0.05 + 0.01 * r, workers_cpu_s=0.2 + 0.003 * r,
                              extra={K.H2D_MS_PER_BATCH: 0.1234567 + r / 13}, stages=totals,
                              arrivals_s=arrivals, batch_images=[8] * 40, start_wave=2))
    return out


def rates(*values: float) -> list[PassResult]:
    return [PassResult(images=100, batches=10, wall_s=100 / v, ttfb_s=0.01) for v in values]


def rotation(case_id: str, members: dict[str, list[PassResult]], results: list[PassResult]) -> GroupRotation:
    measured = {name: Measured(res, list(range(len(res)))) for name, res in members.items()}
    measured[case_id] = Measured(results, [2, 0, 1])
    return GroupRotation(measured, {"order": "interleaved", "rounds": ROUNDS},
                         shutdown_errors={case_id: ["worker 12 exited with code 1"]})


def capacity(*values: float) -> list[PassResult]:
    found = rates(1.0, 1.0, 1.0)
    for result, value in zip(found, values, strict=True):
        result.extra[K.PARALLEL_CAPACITY] = value
    return found


def all_records() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Every writer's case of the inputs above, by writer: its params (the distributed run's, which saves its cases
    itself; {} for the suite's, whose params the record helper fills) and its record."""
    profile = PROFILES["quick"]
    workers = GROUPS["workers-transform"].case("workers2-heavy")
    preset = rotated_record(workers, rotation(workers.id, {"ceiling-heavy": rates(300.0, 310.5, 290.25),
                                                          CAPACITY: capacity(1.9, 1.71, 2.0)}, passes()),
                            profile=profile, cache_mode="warm", cores=2)
    decoders = GROUPS["decoders"]
    decoder = next(decoders.case(i) for i in decoders.ids if decoders.case(i).pipeline is not None)
    assert decoder.pipeline is not None
    ceilings = {f"ceiling-{decoder.transform}": rates(200.0, 210.0, 190.0), MEMMAP_CEILING: rates(5e3, 5.1e3, 4.9e3),
                own_decoder_member(decoder.pipeline): rates(400.0, 401.0, 399.5), CAPACITY: capacity(2.0, 1.5, 1.8)}
    pipeline = rotated_record(decoder, rotation(decoder.id, ceilings, passes(stages=True)), profile=profile,
                              cache_mode="cold", cores=2, device="cuda")
    alone = single_record(passes(rate=50.0), config=LoaderConfig(batch_size=8, num_workers=2), transform="none",
                          index="list", profile=profile, cache_mode="warm", cores=2, shutdown_errors=["gone"])
    ranks = [{"rank": rank, "images": [320] * ROUNDS, "wall_s": [0.5 + 0.01 * rank + 0.003 * e for e in range(ROUNDS)],
              "ttfb_s": [0.0412345 * (e + 1) for e in range(ROUNDS)],
              "collective_s": [0.0123456 * (rank + 1)] * ROUNDS,
              "load_s": [0.4 + 0.02 * rank - 0.001 * e for e in range(ROUNDS)]} for rank in range(2)]
    coverage = [Coverage(dataset_size=640, world_size=2, missing=0, duplicates=0, expected_duplicates=0)] * ROUNDS
    distributed = records(GatheredRun(ranks, coverage, ["rank 1 waited"]), {"batch_size": 8, "transform": "none"}, 2,
                          "gloo")
    out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "rotated-preset": ({}, preset), "rotated-pipeline": ({}, pipeline), "single": ({}, alone)}
    out.update({f"distributed-{i}": (r["params"], r["extra_info"]) for i, r in enumerate(distributed)})
    return out


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(all_records(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
