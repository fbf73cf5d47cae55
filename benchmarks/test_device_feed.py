"""A GPU step fed by a decode pipeline: does the loader keep the accelerator busy, and does the simulator say so?

A training step of about ``--bench-step-ms`` (default 20 ms: bf16 products of the same two inputs, calibrated with
CUDA events) fed by ``--bench-feed-pipeline`` (default slot batches) with ``--bench-feed-workers`` (default half the
usable cores), one measured pass after a warm-up (:func:`lfw.diagnose.training.measure_pipeline`): the accelerator
utilization measured beside the one :mod:`lfw.diagnose`'s simulator predicts from the same pass, whose ceiling is 1,
and whether the products stayed finite. Without CUDA it runs on the CPU stand-in where the run allows it
(``--bench-stand-in``), its products on the CPU, marked ``cpu stand-in``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from benchmarks import helpers as H
from lfw.data.root import DataSource
from lfw.measure.device import matmul_step
from lfw.measure.rotation import pass_clock
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.case_record import pass_record, step_record
from lfw.suite.profiles import DEVICE, device_workers
from lfw.suite.skips import STAND_IN, Needs, Session

GROUP = "device-feed"
pytestmark = pytest.mark.benchmark(group=GROUP)


def test_device_feed(request: pytest.FixtureRequest, benchmark: Any, bench: Session, lfw_source: DataSource) -> None:
    from lfw.diagnose.predict import diagnose, fit_model
    from lfw.diagnose.simulator import simulate
    from lfw.diagnose.training import measure_pipeline, pipeline_setup

    config = request.config
    spec, step_ms = config.getoption("--bench-feed-pipeline"), config.getoption("--bench-step-ms")
    workers = config.getoption("--bench-feed-workers")
    workers = device_workers(bench.cores)[0] if workers is None else workers
    H.narrow_unless(config, Needs(workers=workers, layer=DEVICE, device=True))
    assert bench.gpu_device is not None
    setup = pipeline_setup(spec, workers=workers if "=" in spec else None)
    step, per_mm = matmul_step(step_ms, bench.gpu_device)
    batches = max(40, 3 * bench.profile.batches_for(setup.config.batch_size, "uint8"))
    m = measure_pipeline(setup, lfw_source.path, batches, step, step_label=f"matmul {step_ms:g} ms", progress=False,
                         warmup=True)
    benchmark.params = {KN.PIPELINE.key: setup.label}
    H.uniform_params(benchmark, setup.config, transform="uint8", index=None)
    with pass_clock.replaying([m.result.wall_s]) as next_pass:
        benchmark.pedantic(next_pass, rounds=1, iterations=1, warmup_rounds=0)
    diagnosis, model = diagnose(m, bench.cores, emulated_step=False), fit_model(m)
    simulated = simulate(replace(model, seed=0), max_batches=m.result.batches)
    record = pass_record([m.result], workers=setup.config.num_workers, usable_cores=bench.cores)
    record.add({K.STEP_MS_TARGET: step_ms, K.MATMULS_PER_STEP: step.products, K.MATMUL_SIZE: step.size,
                K.MS_PER_MATMUL: round(per_mm, 4), K.STEP_OUTPUT_FINITE: step.output_finite(),
                K.AU_MEASURED: round(m.accelerator_utilization, 4),
                K.AU_PREDICTED: round(1.0 - simulated.steady_data_wait_fraction, 4),
                K.BATCHES_PER_S: round(diagnosis.measured_batches_per_s, 3),
                K.BATCHES_PER_S_PREDICTED: round(diagnosis.predicted_batches_per_s, 3),
                K.PREDICTION_ERROR: round(diagnosis.error, 4), K.BOTTLENECK: diagnosis.bottleneck,
                K.RECOMMENDATION: diagnosis.recommendation,
                K.MEASURED_ON: "cuda" if bench.gpu_device == "cuda" else STAND_IN})
    record.add(step_record([m.result]))
    H.record(benchmark, record)
    assert 0 < m.accelerator_utilization <= 1 and step.output_finite(), "a fed step that stayed finite"
