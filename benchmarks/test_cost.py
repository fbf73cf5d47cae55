"""The cost layer: CPU instructions per image of the loading pipeline, one case per transform preset.

Counted under valgrind's callgrind with instrumentation switched on only around one pass of ``num_workers=0``
and one thread (read, decode, transform, collate; see :mod:`lfw.measure.cost`), so the count depends on the
code, the libraries and the images, not on how fast the machine happens to run: the gate compares it against
the committed baseline with the cost threshold (``--cost-threshold``, :class:`lfw.gate.thresholds.Thresholds`).
All presets are counted in one valgrind process per session (its start-up, importing torch uninstrumented, is
most of that process's time; measured in docs/gating.md). The timed part of each case is the same pass
run natively, so the case also records seconds per pass and the instructions per second this session ran at.

Runs in the smoke and full profiles, and in quick with ``--bench-cost`` (``make gate``, ``make cost``). Where
valgrind, its headers or a C compiler is missing, every case skips with the reason, which is also recorded in
``machine_info`` (``cost_layer_skipped``) so the gate can say why the layer was not judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.helpers import BENCH_SESSION, SESSION_FACTS, benchmark_group, narrow, record, uniform_params
from lfw.data.dataset import LFWDataset
from lfw.data.root import DataSource
from lfw.data.synth import cache_root
from lfw.measure import LoaderConfig, LoaderPass
from lfw.measure.callgrind import unavailable_reason, valgrind_version
from lfw.measure.cost import InstructionCount, count_instructions
from lfw.measure.resources import usable_cores
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.suite.case_record import pass_record
from lfw.suite.matrix import LFW_FILES, TRANSFORMS
from lfw.suite.profiles import COST, Profile
from lfw.suite.skips import Needs, skip_reason

GROUP = "cost"
pytestmark = pytest.mark.benchmark(group=GROUP)


@pytest.fixture(scope="module")
def counts(request: pytest.FixtureRequest, lfw_source: DataSource, profile: Profile) -> dict[str, InstructionCount]:
    """Every selected preset counted in one valgrind process; the skip reason instead, for every case.

    A layer left out by choice is a narrowed run; a layer asked for that cannot run (valgrind missing) is a
    plain skip, which the gate reports as a gap.
    """
    reason = skip_reason(Needs(layer=COST, lfw_only=LFW_FILES), request.config.stash[BENCH_SESSION])
    if reason:
        request.config.stash[SESSION_FACTS][K.COST_LAYER_SKIPPED] = reason
        narrow(reason)
    missing = unavailable_reason()
    if missing:
        reason = f"cost layer not measured: {missing}"
        request.config.stash[SESSION_FACTS][K.COST_LAYER_SKIPPED] = reason
        pytest.skip(reason)
    presets = [item.callspec.params["transform"] for item in request.session.items
               if benchmark_group(item) == GROUP and hasattr(item, "callspec")]
    return count_instructions(lfw_source.path, presets, batch_size=profile.cost_images, batches=1,
                              cache_dir=cache_root() / "callgrind")


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_cost(benchmark: Any, counts: dict[str, InstructionCount], dataset_factory: Callable[..., LFWDataset],
              profile: Profile, transform: str) -> None:
    count, config = counts[transform], cost_config(profile)
    runner = LoaderPass(config.build(dataset_factory(transform)), 1, memory_interval_s=None)
    uniform_params(benchmark, config, transform, "numpy")
    try:
        benchmark.pedantic(runner.run, setup=runner.setup, rounds=profile.rounds, warmup_rounds=1, iterations=1)
    finally:
        runner.close()
    cost_record = pass_record(runner.results[-profile.rounds:] if benchmark.enabled else runner.results,
                              workers=0, usable_cores=usable_cores())
    seconds = min(r.wall_s for r in runner.results)
    cost_record.add({KN.TRANSFORM.key: transform, K.PROFILE: profile.name, K.CONFIG: config.as_dict(),
                     K.INSTRUCTIONS: count.instructions, K.INSTRUCTIONS_PER_IMAGE: round(count.per_image, 1),
                     K.IMAGES_COUNTED: count.images, K.VALGRIND: valgrind_version(),
                     K.NATIVE_INSTRUCTIONS_PER_S: round(count.instructions / seconds) if seconds > 0 else 0,
                     **count.moves})
    record(benchmark, cost_record)
    assert count.images == profile.cost_images and count.instructions > 0


def cost_config(profile: Profile) -> LoaderConfig:
    """The loader the cost layer times beside its counts: one batch of ``cost_images``, in the main process."""
    return LoaderConfig(batch_size=profile.cost_images, num_workers=0)
