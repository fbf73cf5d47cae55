"""The record builder: many passes to the :class:`~lfw.results.record.CaseRecord` every benchmark case saves, every
metric through :func:`lfw.results.record.summarize` (docs/record.md): :func:`rotated_record` for a case measured in
its group's rotation, :func:`single_record` for one measured on its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from lfw.data.index import INDEX_KINDS
from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import PassResult, wait_percentiles_ms
from lfw.pipelines.decoders import DECODERS
from lfw.remote.bench import endpoint_shares, remote_law
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import saved_form
from lfw.results.record import CaseRecord, Kept, summarize
from lfw.suite.matrix import LoaderCase
from lfw.suite.peers import decoder_member
from lfw.suite.profiles import PEERS, Profile
from lfw.suite.runner import ENDPOINT_CEILING, MEMMAP_CEILING, GroupRotation, own_decoder_member


def work_limit(per_core: Sequence[float], *, parallelism: int, usable_cores: int,
               capacities: Sequence[float] | None) -> list[float]:
    """What a case's work can reach on this machine in each round: the single-core rate of that work measured in
    the same round (``per_core``: a preset's ceiling sweep, a decoder alone, the PIL path, the memmap) x the cores
    it can use, ``min(max(parallelism, 1), usable_cores)``, and no more than the round's parallel capacity
    (``capacities``, paired by round, else ValueError) gave, never below one. Every figure a record calls a ceiling,
    a limit or a share of one is taken against this (docs/methodology.md, "One limit")."""
    wanted = float(min(max(parallelism, 1), usable_cores))
    if capacities is not None and len(capacities) != len(per_core):
        raise ValueError(f"{len(capacities)} capacities for {len(per_core)} rounds: they must be paired by round")
    cores = [wanted] * len(per_core) if capacities is None else [max(1.0, min(wanted, c)) for c in capacities]
    return [rate * n for rate, n in zip(per_core, cores, strict=True)]


def limit_shares(results: Sequence[PassResult], limits: Sequence[float], *, ceiling_key: str, share_key: str,
                 kept: Kept = "both") -> dict[str, Any]:
    """Round r's limit (:func:`work_limit`) under ``ceiling_key`` (``kept`` as :func:`summarize`'s), and round r's
    rate over it under ``share_key``: a ratio paired by round."""
    if len(limits) != len(results):
        raise ValueError(f"{len(limits)} ceilings for {len(results)} rounds: they must be paired by round")
    return {**summarize(ceiling_key, limits, kept=kept),
            **summarize(share_key, [r.images_per_s / c for r, c in zip(results, limits, strict=True)])}


def pass_record(results: Sequence[PassResult], *, ceilings: Sequence[float] | None = None,
                workers: int | None = None, usable_cores: int | None = None,
                capacities: Sequence[float] | None = None) -> CaseRecord:
    """The record of a case measured as ``results`` (one per round), every metric through
    :func:`lfw.results.record.summarize`. With ``ceilings`` (this transform's single-core rate in each round of the
    rotation) also ``ceiling_images_per_s`` (:func:`work_limit` of ``workers``, ``usable_cores`` and
    ``capacities``) and ``efficiency``, round r's rate over round r's ceiling."""
    if not results:
        raise ValueError("no passes to summarize")
    record = CaseRecord().add({K.ROUNDS: len(results), K.IMAGES: results[-1].images, K.BATCHES: results[-1].batches})
    record.measure(K.IMAGES_PER_S, [r.images_per_s for r in results], cv=True)
    record.measure(K.WALL_S, [r.wall_s for r in results], kept="rounds")
    record.measure(K.TTFB_S, [r.ttfb_s for r in results])
    record.add(steady_record(results))
    cpu = [r.cpu_s for r in results]
    if usable_cores and all(c is not None for c in cpu):
        record.measure(K.CPU_UTILIZATION, [r.cpu_utilization(usable_cores) or 0.0 for r in results])
        record.measure(K.CPU_MS_PER_IMAGE, [1e3 * (r.cpu_s or 0.0) / r.images for r in results if r.images],
                       kept="summary")
        record.measure(K.MAIN_CPU_SHARE, [1 - (r.workers_cpu_s or 0.0) / r.cpu_s for r in results if r.cpu_s],
                       kept="summary")
    for key in dict.fromkeys(k for r in results for k in r.extra):  # members' own figures, e.g. an endpoint's
        record.measure(key, [r.extra[key] for r in results if key in r.extra], digits=K.DEFAULT_DIGITS)
    record.add(wait_percentiles_ms([w for r in results for w in r.waits_s]))  # pooled over the rounds
    if any(r.steps_s for r in results):
        record.measure(K.DATA_WAIT_FRACTION, [r.data_wait_fraction for r in results])
    record.add(loader_facts(results[-1]))
    if all(r.worker_pids for r in results):
        record.add({K.WORKER_PIDS: [r.worker_pids for r in results]})
    with_memory = [r.memory for r in results if r.memory is not None]
    if with_memory:
        per_round = [m.as_extra_info() for m in with_memory]
        for key in sorted(set().union(*per_round)):
            values = [d[key] for d in per_round if key in d]
            every_round = key in K.GROWTH_KEYS and len(values) == len(per_round)
            record.measure(key, values, kept="both" if every_round else "summary")
        last = next(r for r in reversed(results) if r.memory is not None)
        # The sampler's own CPU time over the machine's CPU capacity during the passes: what sampling costs.
        capacity = sum(r.wall_s for r in results if r.memory is not None) * (usable_cores or 1)
        sampler_cpu = sum(m.sampler_cpu_s for m in with_memory)
        if K.WORKERS_SEEN not in record:  # a pass that did not count its workers: the memory record's
            record.add({K.WORKERS_SEEN: len(with_memory[-1].worker_pids)})
        record.add({K.TIMELINE: {**with_memory[-1].timeline(), "start_unix": round(last.started_unix, 3)},
                    K.SAMPLER_CPU_FRACTION: round(sampler_cpu / capacity, 5) if capacity else 0.0})
    if usable_cores is not None:  # the workers are a knob, in the case's params (lfw.results.knobs)
        record.add({K.USABLE_CORES: usable_cores})
    if capacities is not None:
        record.measure(K.PARALLEL_CAPACITY, capacities)
    if ceilings and workers is not None and usable_cores:
        record.measure(K.PER_CORE_IMAGES_PER_S, ceilings)
        limits = work_limit(ceilings, parallelism=workers, usable_cores=usable_cores, capacities=capacities)
        record.add(limit_shares(results, limits, ceiling_key=K.CEILING_IMAGES_PER_S, share_key=K.EFFICIENCY,
                                kept="summary"))
    return record


def loader_facts(result: PassResult) -> dict[str, Any]:
    """What the live loader of ``result``'s pass did with its knobs (the read-back fields of :class:`PassResult`);
    a fact not read is left out, and ``batch_pinned`` is None where not read (no accelerator, or no pinning)."""
    read = {K.WORKERS_SEEN: result.workers_seen, K.WORKER_START_METHOD: result.worker_start_method,
            K.PREFETCHED_BATCHES: result.prefetched_batches, K.PREFETCH_FACTOR_SEEN: result.prefetch_factor_seen}
    facts: dict[str, Any] = {key: value for key, value in read.items() if value is not None}
    if result.pinning_available is not None:
        facts[K.BATCH_PINNED] = result.batch_pinned if result.pinning_available else None
    return facts


def counted(results: Sequence[PassResult], names: Sequence[str], key: str) -> dict[str, Any]:
    """The counts of ``names`` the loading processes made in each round (:attr:`StageTotals.counts`), under ``key``
    as ``{name: [count per round]}`` with only the names that counted something; empty when none did."""
    per_round = [r.stages.counts if r.stages is not None else {} for r in results]
    moved = [name for name in names if any(c.get(name) for c in per_round)]
    return {key: {name: [c.get(name, 0) for c in per_round] for name in moved}} if moved else {}


def cold_record(warmup: Sequence[PassResult]) -> dict[str, Any]:
    """The cold first epoch (the rotation's warm-up pass), kept apart from the timed rounds: its images/s, time to
    first batch and CPU per image; empty when the rotation had no warm-up."""
    if not warmup:
        return {}
    first = warmup[0]
    out: dict[str, Any] = {K.COLD_IMAGES_PER_S: round(first.images_per_s, 2), K.COLD_TTFB_S: round(first.ttfb_s, 6)}
    if first.cpu_s is not None and first.images:
        out[K.COLD_CPU_MS_PER_IMAGE] = round(1e3 * first.cpu_s / first.images, 4)
    return out


def peer_record(case: LoaderCase, rotation: GroupRotation, *, cores: int) -> CaseRecord:
    """A peer's rounds (:func:`pass_record`), its share of its own decoder's single-core limit where that decoder
    can run alone, and what it is: the peer, its knob and value, its output and layout."""
    assert case.peer is not None
    spec, results = case.peer, rotation.measured[case.id].results
    capacities = rotation.capacities()
    record = pass_record(results, workers=case.config.num_workers, usable_cores=cores, capacities=capacities)
    member = decoder_member(spec)
    if member is not None and member in rotation.measured:
        record.add(own_decoder_shares(results, per_core=rotation.ceiling(member), member=member,
                                      parallelism=case.parallelism, usable_cores=cores, capacities=capacities))
    return record.add({KN.PEER.key: spec.peer, K.PEER_KNOB: spec.knob, K.PARALLELISM: spec.parallelism,
                       K.OUTPUT: spec.output, K.PEER_DECODER: member})


def step_record(results: Sequence[PassResult]) -> dict[str, Any]:
    """The time the training step held the loop per batch, as measured inside the passes: each round's mean (ms)
    and their median, under ``step_ms_per_batch``; empty when no pass ran a step."""
    per_round = [1e3 * sum(r.steps_s) / len(r.steps_s) for r in results if r.steps_s]
    return summarize(K.STEP_MS_PER_BATCH, per_round) if per_round else {}


def steady_record(results: Sequence[PassResult]) -> dict[str, Any]:
    """The steady rate of a case's rounds (:meth:`PassResult.steady`): its median and every round's, with the
    fewest batches any round's rate rests on; where a round has none, no rate but ``steady_absent`` saying why."""
    steady = [r.steady() for r in results]
    fewest = {K.STEADY_BATCHES: min(s.batches for s in steady)}
    if (absent := next((s.reason for s in steady if s.images_per_s is None), None)) is not None:
        return {K.STEADY_ABSENT: absent, **fewest}
    return {**summarize(K.STEADY_IMAGES_PER_S, [s.images_per_s or 0.0 for s in steady]), **fewest}


def machine_ceiling_shares(results: Sequence[PassResult], *, pil: Sequence[float], memmap: Sequence[float],
                           parallelism: int, usable_cores: int,
                           capacities: Sequence[float] | None = None) -> dict[str, Any]:
    """A decode pipeline's rate as a share of the machine's two reference limits, round by round: :func:`work_limit`
    of ``pil`` and ``memmap`` (the PIL path's and the decoded memmap's single-core rates) at its ``parallelism``."""
    pil_limit, memmap_limit = (work_limit(c, parallelism=parallelism, usable_cores=usable_cores, capacities=capacities)
                               for c in (pil, memmap))
    return {**limit_shares(results, pil_limit, ceiling_key=K.PIL_CEILING_IMAGES_PER_S, share_key=K.PIL_CEILING_SHARE),
            **limit_shares(results, memmap_limit, ceiling_key=K.MEMMAP_CEILING_IMAGES_PER_S,
                           share_key=K.MEMMAP_CEILING_SHARE)}


def own_decoder_shares(results: Sequence[PassResult], *, per_core: Sequence[float], member: str, parallelism: int,
                       usable_cores: int, capacities: Sequence[float] | None = None) -> dict[str, Any]:
    """A pipeline's rate over its own decoder's limit, round by round: :func:`work_limit` of that decoder's
    single-core rate (``per_core``, measured by ``member`` in the same rounds) at the pipeline's ``parallelism``."""
    if usable_cores < 1:
        raise ValueError(f"usable cores must be 1 or more, got {usable_cores}")
    limits = work_limit(per_core, parallelism=parallelism, usable_cores=usable_cores, capacities=capacities)
    return {K.OWN_DECODER: member, **summarize(K.OWN_DECODER_PER_CORE, per_core),
            **limit_shares(results, limits, kept="summary", ceiling_key=K.OWN_DECODER_IMAGES_PER_S,
                           share_key=K.OWN_DECODER_SHARE)}


def stage_breakdown(results: Sequence[PassResult]) -> dict[str, Any]:
    """Where the CPU per image went (:mod:`lfw.measure.stages`): each timed stage's median ms per image, their
    coverage of the measured tree CPU and the gap by process (docs/decoders.md); empty when no stages were timed."""
    timed = [r for r in results if r.stages is not None and r.stages.images and r.cpu_s]
    if not timed:
        return {}
    per_round = [r.stages.per_image_ms() for r in timed if r.stages is not None]
    stages = {s: round(median(d[s] for d in per_round), 4) for s in per_round[0]}
    coverage, gap_workers, gap_main = [], [], []
    for r in timed:
        assert r.stages is not None and r.cpu_s
        n = r.stages.images
        coverage.append(sum(r.stages.per_image_ms().values()) / (1e3 * r.cpu_s / n))
        gap_workers.append(1e3 * ((r.workers_cpu_s or 0.0) - sum(r.stages.workers.values())) / n)
        main_cpu = r.cpu_s - (r.workers_cpu_s or 0.0)
        gap_main.append(1e3 * (main_cpu - sum(r.stages.main.values())) / n)
    return {K.STAGE_MS_PER_IMAGE: stages, **summarize(K.STAGE_COVERAGE, coverage),
            K.STAGE_GAP_MS_PER_IMAGE: {"workers": round(median(gap_workers), 4), "main": round(median(gap_main), 4)}}


def knob_params(config: LoaderConfig, *, transform: str | None, index: str | None,
                case_params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The params of a case: every knob of :data:`lfw.results.knobs.KNOBS` (None where one does not apply, so
    ``pytest-benchmark compare --group-by=param:NAME`` works on any run), from its loader configuration, preset
    and index, the test's own parametrized values kept (:func:`lfw.results.knobs.saved_form`)."""
    record = {K.CONFIG: config.as_dict(), KN.TRANSFORM.key: transform, KN.INDEX.key: index}
    return saved_form(case_params or {}, record)[0]


def description(*, transform: str, index: str, cache_mode: str, profile: Profile, config: LoaderConfig,
                device: str = "cpu") -> dict[str, Any]:
    """What every case record says about the case itself: preset, index, cache mode, profile, loader knobs."""
    return {KN.TRANSFORM.key: transform, KN.INDEX.key: index, K.CACHE_MODE: cache_mode, K.PROFILE: profile.name,
            K.CONFIG: config.as_dict(), K.DEVICE: device}


def rotated_record(case: LoaderCase, rotation: GroupRotation, *, profile: Profile, cache_mode: str, cores: int,
                   device: str = "cpu") -> dict[str, Any]:
    """The ``extra_info`` of ``case`` measured in ``rotation``: its rounds summarized with its ceilings of the same
    rounds (efficiency for a preset; shares of the PIL and decode-free ceilings for a decode pipeline; share of the
    endpoint's ceiling for a remote case), its description and the rotation's schedule."""
    mine = rotation.measured[case.id]
    results, workers, capacities = mine.results, case.config.num_workers, rotation.capacities()
    if case.remote is not None:  # I/O-bound: the endpoint's ceiling, not a decode ceiling
        limit = case.remote.in_flight_limit(workers)
        record = pass_record(results, workers=workers, usable_cores=cores)
        record.add(endpoint_shares(results, rotation.ceiling(ENDPOINT_CEILING), latency_ms=case.remote.latency_ms,
                                   in_flight_limit=limit))
        record.add({KN.STRATEGY.key: case.remote.strategy, KN.LATENCY_MS.key: case.remote.latency_ms,
                    K.CONCURRENCY: case.remote.concurrency, K.IN_FLIGHT_LIMIT: limit})
        law = remote_law(record.as_extra_info(), rotation.ceiling(ENDPOINT_CEILING), in_flight_limit=limit,
                         processes=max(workers, 1), pool=case.remote.pool)
        record.add({k: v for k, v in law.items() if v is not None})
        for key in (k for k, v in law.items() if v is None):  # an invalid steady rate is never shown
            record.drop(key)
    elif case.peer is not None:  # another project's loader: its own decoder's limit, no DataLoader ceiling
        record = peer_record(case, rotation, cores=cores)
    elif case.pipeline is not None:  # a faster decoder may beat the PIL path's ceiling: shares, no efficiency
        record = pass_record(results, workers=workers, usable_cores=cores, capacities=capacities)
        parallelism = case.parallelism
        record.add(machine_ceiling_shares(results, pil=rotation.ceiling(f"ceiling-{case.transform}"),
                                          memmap=rotation.ceiling(MEMMAP_CEILING), parallelism=parallelism,
                                          usable_cores=cores, capacities=capacities))
        member = own_decoder_member(case.pipeline)
        record.add(own_decoder_shares(results, per_core=rotation.ceiling(member), member=member,
                                      parallelism=parallelism, usable_cores=cores, capacities=capacities))
        record.add({**stage_breakdown(results), **counted(results, DECODERS, K.DECODED_IMAGES)})
        record.add({KN.DECODER.key: case.pipeline.decoder, K.STORAGE: case.pipeline.storage,
                    K.THREADS: case.pipeline.threads, K.OUTPUT: case.pipeline.output,
                    K.OUTPUT_SIZE: case.pipeline.size, K.BATCHING: case.pipeline.batching})
    else:
        record = pass_record(results, ceilings=rotation.ceiling(f"ceiling-{case.transform}"), workers=workers,
                             usable_cores=cores, capacities=capacities)
    if (physical := rotation.capacities(K.PHYSICAL_CAPACITY)) is not None:  # a core runs several threads
        record.measure(K.PHYSICAL_CAPACITY, physical)
    if case.count_index:
        record.add(counted(results, INDEX_KINDS, K.INDEX_SEEN))
    record.add(description(transform=case.transform, index=case.index, cache_mode=cache_mode, profile=profile,
                           config=case.config, device=device))
    record.add({K.ROTATION: rotation.info, K.ROTATION_POSITIONS: mine.positions})
    if case.peer is not None or case.layer == PEERS:  # the cold first epoch; the pixel check, memory alone
        record.add({**cold_record(mine.warmup), **rotation.facts.get(case.id, {})})
        if case.peer is None and case.pipeline is not None:  # slot batches hand out a channels-last view
            record.add({KN.PEER.key: "dataloader", K.PEER_LAYOUT: "hwc-view" if case.pipeline.batching == "slots" else
                        "chw", K.OUTPUT: case.pipeline.output})
    if case.step_ms is not None:
        record.add({KN.STEP_MS.key: case.step_ms, **step_record(results)})
    elif case.on_device:  # the decode on the device and the wait for it, inside the pass
        record.add(step_record(results))
    if case.id in rotation.shutdown_errors:  # workers that died on their way out, after their passes completed
        record.add({K.WORKER_SHUTDOWN_ERRORS: rotation.shutdown_errors[case.id]})
    return record.as_extra_info()


def single_record(results: Sequence[PassResult], *, config: LoaderConfig, transform: str, index: str,
                  profile: Profile, cache_mode: str, cores: int, shutdown_errors: Sequence[str] = ()) -> dict[str, Any]:
    """The ``extra_info`` of a case measured on its own, rounds back to back (memory experiments, leak checks):
    its rounds (:func:`pass_record`) and its description."""
    record = pass_record(results, workers=config.num_workers, usable_cores=cores)
    record.add(description(transform=transform, index=index, cache_mode=cache_mode, profile=profile, config=config))
    if shutdown_errors:  # workers that died on their way out, after their passes completed
        record.add({K.WORKER_SHUTDOWN_ERRORS: list(shutdown_errors)})
    return record.as_extra_info()
