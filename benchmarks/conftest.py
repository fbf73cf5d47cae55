"""Session fixtures of the benchmarks: data made and scanned once, ceilings measured once, one way to run a case.

Everything expensive happens outside the timed rounds (numpy's rule: preparing inputs belongs in setup): the
synthetic tree is made on first use, datasets are scanned once per (transform, index) pair, and the per-core
ceiling of each transform is measured once per session, on the same files, before the cases that use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from torch.utils.data import Subset

from benchmarks.profiles import PROFILES, Profile
from benchmarks.session_facts import SESSION_FACTS
from lfw.data_root import DataSource, resolve_root, tree_stats
from lfw.dataset import LFWDataset
from lfw.index import path_at
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.ceiling import per_core_rate, usable_cores
from lfw.measure.loader_pass import DEFAULT_MEMORY_INTERVAL_S
from lfw.measure.page_cache import evict, warm
from lfw.measure.summary import summarize

WORKER_COUNTS = (0, 1, 2, 4, 8)
TRANSFORMS = ("none", "simple", "heavy", "uint8")


def dataset_files(dataset: Any) -> list[str]:
    """Every image file a dataset can read (through a ``Subset`` too): what warm and cold cache modes touch.

    All of them, not the first pass's worth: shuffled cases read files from anywhere in the index.
    """
    if isinstance(dataset, Subset):
        base = dataset_files(dataset.dataset)
        return [base[i] for i in dataset.indices] if base else []
    index = getattr(dataset, "paths", None)
    return [path_at(index, i) for i in range(len(index))] if index is not None else []


def worker_cap() -> int:
    """Most workers worth measuring here: twice the usable cores (at least 2), so 4 on a 2-core machine."""
    return max(2, 2 * usable_cores())


def skip_above_cap(workers: int) -> None:
    cap = worker_cap()
    if workers > cap:
        pytest.skip(f"workers{workers} capped: this machine measures up to {cap} workers "
                    f"(2 x {usable_cores()} usable cores)")


@pytest.fixture(scope="session")
def profile(pytestconfig: pytest.Config) -> Profile:
    return PROFILES[pytestconfig.getoption("--bench-profile")]


@pytest.fixture(scope="session")
def cache_mode(pytestconfig: pytest.Config) -> str:
    return pytestconfig.getoption("--bench-cache-mode")


@pytest.fixture(scope="session")
def lfw_source(profile: Profile, pytestconfig: pytest.Config) -> DataSource:
    """LFW_ROOT if set, else the profile's synthetic tree (made once in the cache, with a progress bar)."""
    source = resolve_root(synthetic_images=profile.synthetic_images)
    files, size = tree_stats(source.path)
    pytestconfig.stash[SESSION_FACTS].update({
        "dataset_kind": source.kind, "dataset_path": str(source.path), "dataset_files": files,
        "dataset_bytes": size, "worker_cap": worker_cap(),
    })
    return source


@pytest.fixture(scope="session")
def dataset_factory(lfw_source: DataSource) -> Callable[..., LFWDataset]:
    """``get(transform, index)``: a scanned dataset, made once per pair and reused by every case."""
    made: dict[tuple[str, str], LFWDataset] = {}

    def get(transform: str = "none", index: str = "numpy") -> LFWDataset:
        if (transform, index) not in made:
            made[(transform, index)] = LFWDataset(lfw_source.path, transform=transform, index=index)
        return made[(transform, index)]

    return get


@pytest.fixture(scope="session")
def per_core_rates(dataset_factory: Callable[..., LFWDataset], profile: Profile,
                   pytestconfig: pytest.Config) -> Callable[[str], float]:
    """``rate(transform)``: the single-core images/s of read + decode + transform, measured once per session."""
    rates: dict[str, float] = {}

    def rate(transform: str) -> float:
        if transform not in rates:
            rates[transform] = per_core_rate(dataset_factory(transform), images=profile.ceiling_images)
            pytestconfig.stash[SESSION_FACTS][f"per_core_images_per_s_{transform}"] = round(rates[transform], 2)
        return rates[transform]

    return rate


@pytest.fixture
def run_case(benchmark: Any, profile: Profile, cache_mode: str, dataset_factory: Callable[..., LFWDataset],
             per_core_rates: Callable[[str], float]) -> Callable[..., dict[str, Any]]:
    """Measure one configuration: one warm-up pass, then ``profile.rounds`` timed passes, one per round.

    Every per-round value and summary goes into ``benchmark.extra_info`` (mutated, never rebound). Returns the
    summary so a test can assert on it when benchmarking is enabled. ``ceiling=False`` leaves out the per-core
    ceiling and efficiency, for datasets that do not decode images.
    """

    def run(config: LoaderConfig, transform: str = "none", index: str = "numpy", *,
            batches: int | None = None, dataset: Any = None, device: str | None = None,
            step: Callable[[Any], None] | None = None,
            memory_interval_s: float | None = DEFAULT_MEMORY_INTERVAL_S,
            mark_start: bool = False, rounds: int | None = None, warmup_rounds: int = 1,
            ceiling: bool = True) -> dict[str, Any]:
        ds = dataset if dataset is not None else dataset_factory(transform, index)
        rate = per_core_rates(transform) if benchmark.enabled and ceiling else None
        loader = config.build(ds)
        runner = LoaderPass(loader, batches or profile.batches_for(config.batch_size, transform), device=device,
                            memory_interval_s=memory_interval_s, mark_start=mark_start, step=step)
        paths = dataset_files(ds)
        def setup() -> None:
            runner.setup()
            if cache_mode == "cold":
                evict(paths)

        if cache_mode == "warm":
            warm(paths)
        n_rounds = rounds or profile.rounds
        try:
            benchmark.pedantic(runner.run, setup=setup, rounds=n_rounds, warmup_rounds=warmup_rounds, iterations=1)
        finally:
            runner.close()
        timed = runner.results[-n_rounds:] if benchmark.enabled else runner.results
        info = summarize(timed, per_core_images_per_s=rate, workers=config.num_workers,
                         usable_cores=usable_cores())
        info.update({"transform": transform, "index": index, "cache_mode": cache_mode,
                     "profile": profile.name, "config": config.as_dict(), "device": device or "cpu"})
        if runner.shutdown_errors:  # workers that died on their way out, after their passes completed
            info["worker_shutdown_errors"] = runner.shutdown_errors
        for key, value in info.items():
            benchmark.extra_info[key] = value
        return info

    return run
