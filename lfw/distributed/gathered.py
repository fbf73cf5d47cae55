"""Rank 0's view of a distributed run: per-rank figures, the straggler, coverage, and the saved JSON.

The straggler ratio is taken on load time, per epoch; coverage on the indices each rank's sampler yielded (with
``drop_last=False`` a DistributedSampler pads the epoch with ``world * ceil(N / world) - N`` repeated indices;
any other duplicate or a missing index fails, as do epochs in the same order): docs/distributed.md. The JSON is
pytest-benchmark's (one case per rank, its rounds the epochs, plus the ranks' total), written through
:mod:`lfw.results`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from statistics import median
from typing import Any

from lfw.cli.table import table
from lfw.results import AUTOSAVE_NAME, CaseRecord, case_record, write_run
from lfw.results import keys as K
from lfw.results import knobs as KN

GROUP = "distributed"


@dataclass(frozen=True)
class Coverage:
    """One epoch's union of all ranks' indices against the dataset."""

    dataset_size: int
    world_size: int
    missing: int
    duplicates: int
    expected_duplicates: int

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.duplicates == self.expected_duplicates

    def text(self) -> str:
        if self.ok:
            return (f"coverage ok: every one of {self.dataset_size:,} images once, "
                    f"{self.duplicates} repeated to pad {self.world_size} equal shards")
        return (f"coverage FAILED: {self.missing} images never loaded, {self.duplicates} duplicates "
                f"(expected {self.expected_duplicates} from padding)")


def epoch_coverage(shards: Sequence[Sequence[int]], dataset_size: int) -> Coverage:
    """Coverage of one epoch from each rank's indices."""
    world = len(shards)
    counts = Counter(i for shard in shards for i in shard)
    covered = sum(1 for i in counts if 0 <= i < dataset_size)
    total = sum(len(shard) for shard in shards)
    padding = world * math.ceil(dataset_size / world) - dataset_size if world else 0
    return Coverage(dataset_size, world, dataset_size - covered, total - len(counts), padding)


def gathered_coverage(orders_by_rank: Sequence[Sequence[Sequence[int]]], dataset_size: int) -> list[Coverage]:
    """Coverage of every epoch from each rank's per-epoch order."""
    return [epoch_coverage([orders[e] for orders in orders_by_rank], dataset_size)
            for e in range(len(orders_by_rank[0]))]


def same_order_every_epoch(orders: Sequence[Sequence[int]]) -> bool:
    """True when a rank visited its indices in the same order in every epoch (more than one epoch needed)."""
    return len(orders) > 1 and all(list(order) == list(orders[0]) for order in orders[1:])


@dataclass(frozen=True)
class GatheredRun:
    """Everything rank 0 reports: per-rank summaries, the straggler, coverage per epoch, findings."""

    ranks: list[dict[str, Any]]
    coverage: list[Coverage]
    findings: list[str]

    @property
    def epochs(self) -> int:
        return len(self.ranks[0]["wall_s"])

    def straggler_ratios(self) -> list[float]:
        """Per epoch: the slowest rank's load time over the fastest's."""
        loads = [[r["load_s"][epoch] for r in self.ranks] for epoch in range(self.epochs)]
        return [max(epoch) / min(epoch) if min(epoch) > 0 else float("inf") for epoch in loads]

    def straggler(self) -> int:
        """The rank with the longest total load time."""
        return max(self.ranks, key=lambda r: sum(r["load_s"]))["rank"]

    def total_images_per_s(self) -> list[float]:
        """Per epoch: all ranks' images over the longest epoch wall time (what the job achieved)."""
        return [sum(r["images"][e] for r in self.ranks) / max(r["wall_s"][e] for r in self.ranks)
                for e in range(self.epochs)]


def rank_rates(summary: Mapping[str, Any]) -> list[float]:
    return [i / w if w > 0 else 0.0 for i, w in zip(summary["images"], summary["wall_s"], strict=True)]


def lines(outcome: GatheredRun, header: str) -> list[str]:
    """The printed result: one row per rank, then the straggler, the total, coverage and findings."""
    rows = []
    for r in outcome.ranks:
        rates = rank_rates(r)
        wall, wait = sum(r["wall_s"]), sum(r["collective_s"])
        rows.append((str(r["rank"]), ", ".join(f"{v:,.0f}" for v in rates), f"{median(rates):,.0f}",
                     f"{median(r['ttfb_s']):.3f}", f"{wait:.3f} ({wait / wall:.0%})", f"{sum(r['load_s']):.2f}"))
    out = [header, table(("rank", "images/s per epoch", "median", "first batch s", "waited at collective s",
                          "load s"), rows, right=range(2, 6))]
    ratios = outcome.straggler_ratios()
    out.append(f"straggler ratio (slowest / fastest rank's load time): {median(ratios):.3f} median over epochs "
               f"({', '.join(f'{v:.3f}' for v in ratios)}); slowest: rank {outcome.straggler()}")
    totals = outcome.total_images_per_s()
    out.append(f"total: {median(totals):,.0f} images/s ({', '.join(f'{v:,.0f}' for v in totals)} per epoch)")
    epochs_ok = sum(c.ok for c in outcome.coverage)
    out.append(outcome.coverage[0].text() if epochs_ok == len(outcome.coverage)
               else f"coverage FAILED in {len(outcome.coverage) - epochs_ok} of {len(outcome.coverage)} epochs: "
                    + next(c.text() for c in outcome.coverage if not c.ok))
    out += [f"finding: {f}" for f in outcome.findings]
    return out


def records(outcome: GatheredRun, config: Mapping[str, Any], world_size: int, backend: str) -> list[dict[str, Any]]:
    """One pytest-benchmark case per rank (rounds = epochs) and one for the ranks' total, each record a
    :class:`~lfw.results.record.CaseRecord`."""

    def shared() -> CaseRecord:
        record = CaseRecord().add({KN.WORLD_SIZE.key: world_size, K.BACKEND: backend, K.CONFIG: dict(config)})
        record.measure(K.STRAGGLER_RATIO, outcome.straggler_ratios())
        return record.add({K.STRAGGLER_RANK: outcome.straggler(), K.COVERAGE_OK: all(c.ok for c in outcome.coverage),
                           K.FINDINGS: list(outcome.findings), KN.TRANSFORM.key: config.get("transform", "none")})

    out = []
    for r in outcome.ranks:
        record = shared().add({KN.RANK.key: r["rank"], K.IMAGES: r["images"][0]})
        record.measure(K.IMAGES_PER_S, rank_rates(r)).measure(K.TTFB_S, r["ttfb_s"])
        record.measure(K.COLLECTIVE_WAIT_S, r["collective_s"], kept="rounds")
        record.measure(K.LOAD_S, r["load_s"], kept="rounds")
        ident = f"rank{r['rank']}-of-{world_size}"
        out.append(case_record(name=f"distributed[{ident}]", fullname=f"lfw.distributed::distributed[{ident}]",
                               group=GROUP, params={KN.RANK.key: r["rank"], KN.WORLD_SIZE.key: world_size},
                               seconds=r["wall_s"], extra=record.as_extra_info()))
    longest = [max(r["wall_s"][e] for r in outcome.ranks) for e in range(outcome.epochs)]
    out.append(case_record(name=f"distributed[total-of-{world_size}]",
                           fullname=f"lfw.distributed::distributed[total-of-{world_size}]",
                           group=GROUP, params={KN.RANK.key: "total", KN.WORLD_SIZE.key: world_size}, seconds=longest,
                           extra=shared().measure(K.IMAGES_PER_S, outcome.total_images_per_s()).as_extra_info()))
    return out


def next_run_path(folder: Path, world_size: int) -> Path:
    """``NNNN_distributed-w<N>-<time>.json``, numbered after the folder's last run, as pytest-benchmark numbers."""
    numbers = [int(m.group(1)) for p in folder.glob("*.json") if (m := AUTOSAVE_NAME.match(p.name))]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return folder / f"{max(numbers, default=0) + 1:04d}_distributed-w{world_size}-{stamp}.json"


def save(outcome: GatheredRun, path: Path, config: Mapping[str, Any], world_size: int, backend: str,
         machine: Mapping[str, Any]) -> Path:
    """The run as pytest-benchmark JSON at ``path`` (no commit: torchrun's ranks run outside pytest)."""
    return write_run(path, records(outcome, config, world_size, backend), machine=machine, commit={},
                     datetime=datetime.now(timezone.utc).isoformat())
