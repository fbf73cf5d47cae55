"""Leak checks across epochs: persistent workers, end-of-epoch memory, a fitted slope and a verdict that fails.

A leak in a dataset lives in the workers and grows every epoch, so each case runs ``profile.leak_epochs``
epochs with ``persistent_workers=True`` (the same processes throughout), records tree USS and PSS at the end
of each epoch with their least-squares slope, and judges the median epoch-to-epoch step with
:func:`lfw.measure.leak.leak_verdict` (the threshold and why it sits where it does are stated there; the
measured figures are in docs/methodology.md). A benchmark round
is one epoch; the first is the warm-up and is not fitted.

- ``lfw``: the real dataset (decode, ``uint8`` preset) on its first 256 images: must pass.
- ``control``: :class:`~lfw.data.memory_datasets.LeakingControlDataset`, which keeps every item it returns
  (``INDEX_ITEMS`` items x ``PAYLOAD_BYTES`` per epoch): must be flagged, or the check is broken.
- ``index`` (full profile): the control's well-behaved twin, the same items without keeping them.

Copy-on-access of a large list index is paid in the first epoch and checked by ``test_memory_index``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from torch.utils.data import Dataset, Subset

from benchmarks.helpers import narrow_unless, record, skip_unless_fits, uniform_params
from lfw.data.dataset import LFWDataset, scan_images
from lfw.data.index import FileIndex, LabelIndex
from lfw.data.memory_datasets import IndexOnlyDataset, LeakingControlDataset, large_index
from lfw.data.root import DataSource
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.leak import WARMUP_EPOCHS, leak_check
from lfw.measure.resources import usable_cores
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.case_record import pass_record
from lfw.suite.profiles import Profile
from lfw.suite.skips import Needs

pytestmark = pytest.mark.benchmark(group="leak")

LFW_IMAGES = 256  # a short epoch: the check needs epochs, not a big one
INDEX_ITEMS = 4096
PAYLOAD_BYTES = 4096  # 4,096 items x 4 KiB kept per epoch by the control: 16 MiB of payload, 4x the threshold
CASES = ("lfw", "control", "index")
WORKERS = (1, 2, 4)
BATCH_SIZE = {"lfw": 32, "control": 256, "index": 256}


@pytest.fixture(scope="module")
def small_index(lfw_source: DataSource) -> tuple[FileIndex, LabelIndex]:
    """LFW's paths as a numpy index of exactly ``INDEX_ITEMS`` entries, whatever the profile's tree size."""
    scan = scan_images(lfw_source.path)
    return large_index(scan.paths, scan.labels, "numpy", INDEX_ITEMS)


def make_dataset(case: str, dataset_factory: Callable[..., LFWDataset],
                 small_index: tuple[FileIndex, LabelIndex]) -> Dataset:
    if case == "lfw":
        full = dataset_factory("uint8", "numpy")
        return Subset(full, range(min(LFW_IMAGES, len(full))))
    if case == "control":
        return LeakingControlDataset(*small_index, payload_bytes=PAYLOAD_BYTES)
    return IndexOnlyDataset(*small_index, payload_bytes=PAYLOAD_BYTES)


@pytest.mark.parametrize("num_workers", WORKERS, ids=[f"workers{w}" for w in WORKERS])
@pytest.mark.parametrize("case", CASES)
def test_leak(request: pytest.FixtureRequest, benchmark: Any, profile: Profile,
              dataset_factory: Callable[..., LFWDataset], small_index: tuple[FileIndex, LabelIndex], case: str,
              num_workers: int) -> None:
    quick = num_workers == 2 and case != "index"
    narrow_unless(request.config, Needs(
        workers=num_workers, lfw_only="the index twin is LFW's file index" if case == "index" else None,
        full_only=None if quick else "lfw and control at workers2 only (full adds 1 and 4 workers and the index twin)"))
    config = LoaderConfig(batch_size=BATCH_SIZE[case], num_workers=num_workers, persistent_workers=True,
                          shuffle=True, seed=0)
    epochs = profile.leak_epochs

    uniform_params(benchmark, config, "uint8" if case == "lfw" else "index-only", "numpy")

    def timed(runner: LoaderPass) -> None:
        benchmark.pedantic(runner.run, setup=runner.setup, rounds=epochs - WARMUP_EPOCHS,
                           warmup_rounds=WARMUP_EPOCHS, iterations=1)

    loader = config.build(make_dataset(case, dataset_factory, small_index))
    skip_unless_fits(loader)
    report = leak_check(loader, epochs, timed=timed)
    leak_record = pass_record(report.results[WARMUP_EPOCHS:], workers=num_workers, usable_cores=usable_cores())
    leak_record.add({KN.CASE.key: case, KN.TRANSFORM.key: "uint8" if case == "lfw" else "index-only",
                     KN.INDEX.key: "numpy", K.PROFILE: profile.name, K.CONFIG: config.as_dict(), K.DEVICE: "cpu",
                     K.EPOCHS: epochs, K.POSITIVE_CONTROL: case == "control", **report.as_extra_info()})
    record(benchmark, leak_record)
    verdict = report.verdict
    if benchmark.enabled and verdict.robust:  # the smoke profile's 2 fitted epochs are recorded, not judged
        expected = case == "control"
        assert verdict.leaking == expected, (
            f"{case}: tree USS {verdict.slope_uss_mib_per_epoch:+.2f} / PSS {verdict.slope_pss_mib_per_epoch:+.2f} "
            f"MiB per epoch (median step {verdict.step_uss_mib:+.2f} / {verdict.step_pss_mib:+.2f}), threshold "
            f"{verdict.threshold_mib_per_epoch:g}: expected {'a leak' if expected else 'no leak'}")
