"""Host-to-device copies, pinned and pageable: one float batch of the ``none`` preset (64 images) and a 256 MiB
buffer, whose best pinned copy is the machine's measured copy peak. Each copy is timed with CUDA events, the four
kinds in turn round by round, so every kind sees the same drift; each case records its rate per copy (GB/s) and its
share of the peak. Without CUDA they run where the run allows it (``--bench-stand-in``) as host-to-host copies timed
with ``perf_counter``, marked ``cpu stand-in``: never GPU figures.
"""

from __future__ import annotations

from typing import Any

import pytest
from torch.utils.data import default_collate

from benchmarks import helpers as H
from lfw.measure.device import LARGE_COPY_BYTES, copy_rounds
from lfw.measure.moves import batch_bytes
from lfw.measure.rotation import pass_clock
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.record import CaseRecord
from lfw.suite.profiles import DEVICE
from lfw.suite.skips import STAND_IN, Needs, Session

GROUP = "device-copy"
COPIES = [f"{size}-{kind}" for size in ("batch", "256MiB") for kind in ("pinned", "pageable")]
PEAK = "256MiB-pinned"
pytestmark = pytest.mark.benchmark(group=GROUP)


@pytest.fixture(scope="session")
def copies(bench: Session, dataset_factory: Any) -> dict[str, tuple[int, list[float]]]:
    """Each copy's bytes and its rates (GB/s), measured once for the group: 20 copies of each (3 in a one-round
    profile)."""
    data = dataset_factory("none")
    nbytes = {"batch": batch_bytes(default_collate([data[i] for i in range(min(64, len(data)))])),
              "256MiB": LARGE_COPY_BYTES}
    assert bench.gpu_device is not None
    rates = copy_rounds(nbytes, 3 if bench.profile.rounds == 1 else 20, bench.gpu_device)
    return {key: (nbytes[key.rpartition("-")[0]], values) for key, values in rates.items()}


@pytest.mark.parametrize(KN.CASE.key, COPIES)
def test_device_copy(request: pytest.FixtureRequest, benchmark: Any, bench: Session, case: str) -> None:
    H.narrow_unless(request.config, Needs(layer=DEVICE, device=True))
    measured = request.getfixturevalue("copies")
    nbytes, rates = measured[case]
    with pass_clock.replaying([nbytes / (rate * 1e9) for rate in rates]) as next_copy:
        benchmark.pedantic(next_copy, rounds=len(rates), iterations=1, warmup_rounds=0)
    peak = max(measured[PEAK][1])
    record = CaseRecord().add({K.ROUNDS: len(rates), K.COPY_BYTES: nbytes, K.COPY_PINNED: case.endswith("-pinned"),
                               K.H2D_PEAK_GB_S: round(peak, 3),
                               K.MEASURED_ON: "cuda" if bench.gpu_device == "cuda" else STAND_IN})
    record.measure(K.H2D_GB_S, rates)
    record.measure(K.H2D_SHARE_OF_PEAK, [rate / peak for rate in rates])
    H.record(benchmark, record)
    assert min(rates) > 0 and len(rates) == record.as_extra_info()[K.ROUNDS]
