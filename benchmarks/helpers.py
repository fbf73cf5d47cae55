"""Helpers of the benchmarks, plain functions: what files a dataset reads, which cases a session runs, how
a case's values go into ``benchmark.extra_info``. The pytest wiring that uses them is :mod:`benchmarks.plugin`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

import pytest
import torch
from torch.utils.data import Subset

from lfw import matrix
from lfw.index import path_at
from lfw.measure.ceiling import usable_cores
from lfw.measure.rotation import Measured
from lfw.profiles import Profile

SESSION_FACTS: pytest.StashKey[dict[str, Any]] = pytest.StashKey()  # machine_info additions learned by fixtures


class Narrowed(pytest.skip.Exception):  # type: ignore[misc,name-defined]
    """A skip the run chose: the profile or a layer leaves the case out, or this machine cannot run it (cores,
    a CUDA device, a start method). The gate does not expect such a case; any other skip of a case the baseline
    has is a gap it reports (see :class:`lfw.results.Outcome`)."""


def narrow(reason: str) -> NoReturn:
    """``pytest.skip(reason)`` for a case the run's selection or machine leaves out (:class:`Narrowed`)."""
    raise Narrowed(reason)


def dataset_files(dataset: Any) -> list[str]:
    """Every image file a dataset can read (through a ``Subset`` too): what warm and cold cache modes touch.

    All of them, not the first pass's worth: shuffled cases read files from anywhere in the index. A dataset
    whose files are not one per item (tar shards, a decoded memmap) names the files it reads in ``paths`` too.
    """
    if isinstance(dataset, Subset):
        base = dataset_files(dataset.dataset)
        if len(base) != len(dataset.dataset):  # not one file per item: every file it reads
            return base
        return [base[i] for i in dataset.indices]
    index = getattr(dataset, "paths", None)
    return [path_at(index, i) for i in range(len(index))] if index is not None else []


def skip_above_cap(workers: int) -> None:
    """Skip with the reason when ``workers`` exceeds what this machine measures (2 x usable cores)."""
    cap = matrix.worker_cap(usable_cores())
    if workers > cap:
        narrow(f"workers{workers} capped: this machine measures up to {cap} workers "
                    f"(2 x {usable_cores()} usable cores)")


def benchmark_group(item: pytest.Item) -> str | None:
    """The pytest-benchmark group an item belongs to (its ``benchmark`` marker)."""
    marker = item.get_closest_marker("benchmark")
    return marker.kwargs.get("group") if marker is not None else None


def remote_layer_asked(config: pytest.Config) -> bool:
    """The remote layer joins the quick profile with ``--bench-remote`` or a ``-k`` expression naming it."""
    return bool(config.getoption("--bench-remote")) or "remote" in (config.getoption("keyword") or "")


def case_skip_reason(config: pytest.Config, case: matrix.LoaderCase, profile: Profile) -> str | None:
    """Why this session does not run ``case``: the machine, the profile, or a layer not asked for."""
    if case.remote is not None and not profile.full_matrix and profile.name != "smoke" \
            and not remote_layer_asked(config):
        return (f"{profile.name} profile: the remote layer (a local S3 endpoint, about a minute) runs with "
                "--bench-remote or -k remote (make remote), and in the smoke and full profiles")
    return case.skip_reason(profile, usable_cores(), torch.cuda.is_available())


def selected_cases(session: pytest.Session, group: matrix.Group, profile: Profile) -> list[matrix.LoaderCase]:
    """The cases of ``group`` this session runs: selected by ``-k``/``-m`` and not skipped on this machine."""
    cases = []
    for item in session.items:
        if benchmark_group(item) == group.name and hasattr(item, "callspec"):
            case = group.case_for(item.callspec.params)
            if case_skip_reason(session.config, case, profile) is None:
                cases.append(case)
    return cases


@dataclass
class GroupRotation:
    """A group's measured rotation: each member's rounds, and what the report needs to pair them."""

    measured: dict[str, Measured]
    info: dict[str, Any]
    shutdown_errors: dict[str, list[str]]


def record(benchmark: Any, info: dict[str, Any]) -> None:
    """Put every value into ``benchmark.extra_info`` (mutated, never rebound: pytest-benchmark keeps the dict)."""
    for key, value in info.items():
        benchmark.extra_info[key] = value
