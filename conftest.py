"""Project-wide pytest set-up: pinned noise sources, the benchmark profile option, machine info.

Thread counts are pinned before torch is imported anywhere: with more than one intra-op thread in the main
process, float conversion on 2 cores ran 4x slower and much noisier, and workers already use one thread each.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402
import torch  # noqa: E402

from benchmarks.session_facts import SESSION_FACTS  # noqa: E402
from lfw.measure import machine  # noqa: E402
from lfw.measure.page_cache import CACHE_MODES  # noqa: E402
from lfw.profiles import PROFILES  # noqa: E402

torch.set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lfw-bench")
    group.addoption("--bench-profile", choices=sorted(PROFILES), default="quick",
                    help="how much data and how many rounds: smoke, quick (default), full")
    group.addoption("--bench-cache-mode", choices=CACHE_MODES, default="warm",
                    help="warm page cache (default) or evict the dataset's files before each round")
    group.addoption("--bench-cost", action="store_true",
                    help="add the cost layer (instructions per image under valgrind, ~80 s) to the quick profile; "
                         "the smoke and full profiles always run it")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SESSION_FACTS] = {}


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    machine_info.update(machine.machine_info())
    machine_info["bench_profile"] = config.getoption("--bench-profile")
    machine_info["cache_mode"] = config.getoption("--bench-cache-mode")
    machine_info.update(config.stash[SESSION_FACTS])
