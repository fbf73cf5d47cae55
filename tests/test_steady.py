"""The steady rate: after the start-up wave, from enough batches, else absent with the reason; held to a ceiling."""

from __future__ import annotations

from lfw.measure.loader_pass import STEADY_MIN_BATCHES, PassResult
from lfw.remote.bench import RemoteCase, limiting, remote_law
from lfw.results import keys as K
from lfw.suite.case_record import pass_record
from lfw.suite.matrix import remote_pass_batches


def paced(batches: int, *, wave: int = 1, start_s: float = 1.0, every_s: float = 0.1, size: int = 32) -> PassResult:
    """A pass whose start-up wave arrives together at ``start_s``, then one batch every ``every_s``."""
    arrivals = [start_s] * min(wave, batches) + [start_s + every_s * (i + 1) for i in range(batches - wave)]
    return PassResult(images=batches * size, batches=batches, wall_s=arrivals[-1], ttfb_s=start_s,
                      arrivals_s=arrivals, batch_images=[size] * batches, start_wave=wave)


def test_the_steady_rate_leaves_out_the_start_up_wave() -> None:
    """Four workers deliver their first batches together: counting from the first batch would credit the
    window with three batches it did not wait for (the 18,977 images/s of a 4-batch pass)."""
    result = paced(4 + STEADY_MIN_BATCHES, wave=4)
    steady = result.steady()
    assert steady.images_per_s is not None and abs(steady.images_per_s - 320) < 1e-6
    assert steady.batches == STEADY_MIN_BATCHES and steady.reason is None
    assert result.images_per_s < steady.images_per_s  # the whole pass pays the start-up


def test_too_few_batches_give_no_steady_rate_and_say_why() -> None:
    steady = paced(3, wave=2).steady()
    assert steady.images_per_s is None and steady.batches == 1
    assert steady.reason is not None and f"needs {STEADY_MIN_BATCHES}" in steady.reason
    assert PassResult(images=32, batches=1, wall_s=1.0, ttfb_s=1.0).steady().images_per_s is None


def test_a_remote_pass_holds_a_steady_window_or_is_the_start_up_wave_alone() -> None:
    """Where the steady window fits the pass budget the pass is the wave and that window; where it does not, no
    batch beyond the wave is fetched (each would cost a whole batch time and still give no steady rate)."""
    assert remote_pass_batches(RemoteCase("batch", 100), 4) == 4 + STEADY_MIN_BATCHES
    assert remote_pass_batches(RemoteCase("serial", 0), 2) == 2 + STEADY_MIN_BATCHES
    assert remote_pass_batches(RemoteCase("serial", 100), 2) == 2  # about 18 images/s: 40 s for the window
    assert remote_pass_batches(RemoteCase("serial", 20), 0) == 1  # the main process: one batch
    no_window = paced(remote_pass_batches(RemoteCase("serial", 100), 2), wave=2).steady()
    assert no_window.images_per_s is None and no_window.reason is not None


def test_the_record_keeps_a_steady_rate_only_where_every_round_has_one() -> None:
    present = pass_record([paced(1 + STEADY_MIN_BATCHES) for _ in range(3)]).as_extra_info()
    assert present[K.STEADY_IMAGES_PER_S] == 320 and present[K.STEADY_BATCHES] == STEADY_MIN_BATCHES
    absent = pass_record([paced(1 + STEADY_MIN_BATCHES), paced(2)]).as_extra_info()
    assert K.STEADY_IMAGES_PER_S not in absent and K.rounds(K.STEADY_IMAGES_PER_S) not in absent
    assert "a steady rate needs" in absent[K.STEADY_ABSENT] and K.TTFB_S in absent


def test_a_steady_rate_above_the_ceiling_by_more_than_its_noise_is_invalid_not_a_result() -> None:
    info = pass_record([paced(1 + STEADY_MIN_BATCHES) for _ in range(3)]).as_extra_info()  # 320 images/s steady
    above = remote_law(info, [200.0, 205.0, 195.0], in_flight_limit=64, processes=2, pool=32)
    assert "above the endpoint's ceiling" in above[K.STEADY_INVALID]
    assert above[K.STEADY_IMAGES_PER_S] is None  # the caller drops it
    within = remote_law(info, [300.0, 310.0, 305.0], in_flight_limit=64, processes=2, pool=32)
    assert K.STEADY_INVALID not in within and within[K.STEADY_CEILING_SHARE] > 1  # within the ceiling's noise


def test_the_limit_that_caps_a_case_is_named() -> None:
    base = {K.STEADY_IMAGES_PER_S: 100.0, K.ENDPOINT_CEILING_IMAGES_PER_S: 300.0, K.BUSY_MEAN_IN_FLIGHT: 10.0,
            K.CPU_UTILIZATION: 0.3, K.ENDPOINT_CPU_UTILIZATION: 0.2}
    def limit(**changes: float) -> str:
        return limiting({**base, **changes}, in_flight_limit=64, processes=2, pool=32)

    assert limit() == "idle request slots"
    assert limit(**{K.STEADY_IMAGES_PER_S: 290.0}) == "endpoint ceiling"
    assert limit(**{K.BUSY_MEAN_IN_FLIGHT: 60.0}) == "in-flight limit"
    assert limiting({**base, K.BUSY_MEAN_IN_FLIGHT: 15.0}, in_flight_limit=64, processes=2, pool=8) == "pool"
    assert limit(**{K.CPU_UTILIZATION: 0.6, K.ENDPOINT_CPU_UTILIZATION: 0.3}) == "client CPU"
