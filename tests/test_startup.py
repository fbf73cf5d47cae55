"""The startup group: the pickled size it records, its chart, and which cases each profile runs.

Tiny data and no timing: the pickled size is taken of small index-only datasets, the chart is drawn from a
synthetic run written in pytest-benchmark's own layout (made-up seconds, not measurements), and the case
selection is :func:`lfw.suite.skips.skip_reason` applied to the benchmark's own ``needs``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from benchmarks import test_startup as bench
from lfw.data.memory_datasets import IndexOnlyDataset, large_index
from lfw.errors import LFWError
from lfw.measure.startup import pickled_dataset_bytes
from lfw.report import build_report, load_run
from lfw.report.chart_startup import startup_chart
from lfw.results import keys as K
from lfw.results.model import case_record, write_run
from lfw.suite.profiles import PROFILES
from lfw.suite.skips import Session, layers_on, skip_reason

PATHS = [f"/data/lfw/Person_{i:04d}/Person_{i:04d}_0001.jpg" for i in range(10)]
LABELS = list(range(10))
MIB = 2**20


def index_dataset(entries: int) -> IndexOnlyDataset:
    return IndexOnlyDataset(*large_index(PATHS, LABELS, "list", entries))


def test_pickled_size_grows_with_the_index_entries() -> None:
    sizes = [pickled_dataset_bytes(index_dataset(n)) for n in (10, 100, 1000)]
    assert sizes[0] < sizes[1] < sizes[2]
    per_entry = (sizes[2] - sizes[1]) / 900
    assert len(PATHS[0]) < per_entry < 2 * len(PATHS[0])  # each entry is its own path, not a memo reference


def test_an_unpicklable_dataset_is_one_line() -> None:
    dataset = index_dataset(10)
    dataset.lock = threading.Lock()  # type: ignore[attr-defined]
    with pytest.raises(LFWError, match="cannot pickle the IndexOnlyDataset dataset") as caught:
        pickled_dataset_bytes(dataset)
    assert "\n" not in str(caught.value) and "fork" in str(caught.value)


def record(entries: int, method: str, workers: int, ttfb_s: list[float]) -> dict[str, Any]:
    """One startup case as the benchmark records it (only the fields the chart reads, and the knobs)."""
    name = f"test_startup[entries{entries}-{method}-workers{workers}]"
    return case_record(name=name, fullname=f"benchmarks/test_startup.py::{name}", group="startup",
                       params={"entries": entries, "start_method": method, "num_workers": workers},
                       seconds=ttfb_s, extra={K.TTFB_S: sorted(ttfb_s)[len(ttfb_s) // 2],
                                              K.rounds(K.TTFB_S): ttfb_s, K.PICKLED_DATASET_BYTES: entries * 90})


def synthetic_run(path: Path, group: str = "startup") -> Path:
    records = [record(entries, method, workers, [0.01 * scale, 0.02 * scale, 0.04 * scale])
               for entries in (1_000, 100_000) for method in ("fork", "spawn") for workers in (1, 2)
               for scale in [1 if method == "fork" else workers * entries / 1_000]]
    for r in records:
        r["group"] = group
    return write_run(path, records, machine={"cpu": {"count": 2}}, commit={"id": "abc"},
                     datetime="2026-11-23T00:00:00")


def test_chart_draws_median_ttfb_with_round_range_per_method_and_workers(tmp_path: Path) -> None:
    fig = startup_chart(load_run(synthetic_run(tmp_path / "run.json")))
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    found = {c.get_label(): c for c in ax.containers if isinstance(c, ErrorbarContainer)}
    assert set(found) == {"fork, 1 worker", "fork, 2 workers", "spawn, 1 worker", "spawn, 2 workers"}
    line, _, (bars,) = found["spawn, 2 workers"].lines
    assert np.asarray(line.get_xdata(), dtype=float) == pytest.approx([1_000 * 90 / MIB, 100_000 * 90 / MIB])
    assert np.asarray(line.get_ydata(), dtype=float) == pytest.approx([40.0, 4000.0])  # median round, in ms
    lowest, highest = bars.get_segments()[1][:, 1]
    assert (lowest, highest) == pytest.approx((2000.0, 8000.0))  # fastest to slowest round


def test_the_report_writes_the_chart_only_for_a_run_with_the_startup_group(tmp_path: Path) -> None:
    report = build_report(load_run(synthetic_run(tmp_path / "with.json")), tmp_path / "with", formats=("png",))
    assert (tmp_path / "with" / "startup.png").is_file()
    assert "startup" in [spec.stem for spec, _ in report.charts]
    other = build_report(load_run(synthetic_run(tmp_path / "without.json", group="prefetch-like")),
                         tmp_path / "without", formats=("png",))
    assert not (tmp_path / "without" / "startup.png").exists()
    assert "startup" in [spec.stem for spec in other.skipped]


def session(profile: str) -> Session:
    p = PROFILES[profile]
    return Session(p, layers_on(p), cores=2, cuda=False, start_methods=("fork", "forkserver", "spawn"))


def runs_in(profile: str) -> list[tuple[int, str, int]]:
    return [c for c in bench.CASE_VALUES if skip_reason(bench.needs(*c), session(profile)) is None]


def test_smoke_runs_the_smallest_index_with_one_worker_quick_none_full_all() -> None:
    assert runs_in("smoke") == [(13_233, m, 1) for m in ("fork", "forkserver", "spawn")]
    assert runs_in("quick") == []
    assert len(runs_in("full")) == len(bench.CASE_VALUES) == 3 * 3 * 3
    reason = skip_reason(bench.needs(1_000_000, "spawn", 2), session("quick")) or ""
    assert reason.startswith("quick profile: ") and "full profile" in reason


def test_a_start_method_this_platform_lacks_is_skipped_with_its_name() -> None:
    p = PROFILES["full"]
    fork_only = Session(p, layers_on(p), cores=2, cuda=False, start_methods=("fork",))
    assert "start method spawn is not available" in (skip_reason(bench.needs(13_233, "spawn", 1), fork_only) or "")
