"""The estimate ``make bench`` prints before it starts: each part of the committed run's time scaled by the rate
that sets it (the decode path's per-core rate, the S3 endpoint's) then over the same rate measured now."""

from __future__ import annotations

from pathlib import Path

import pytest

from lfw.errors import LFWError
from lfw.suite import estimate
from lfw.suite.estimate import RECORDED, Recorded, estimate_line, main, measured, recorded

RECORD = """wall time of make bench in a fresh clone: 281 s
  install (virtualenv, pip from local wheels): 53.2 s
  pytest (synthetic data, quick profile, remote layer): 219.2 s
  report: 8.6 s
============================= slowest 12 durations =============================
79.81s call     benchmarks/test_remote.py::test_remote[serial-0ms-w2]
53.52s call     benchmarks/test_workers_transforms.py::test_workers_transform[workers0-none]
per-core images/s of that run (0001_x.json): {'none': 1362.84, 'uint8': 2534.01, 'endpoint': 382.67}; cpu: AMD EPYC
per-core rate (single-core ceiling of the none preset): 1,363 images/s
"""  # the lines tools/record.sh make-bench writes


def test_a_record_gives_its_time_its_remote_part_and_its_two_rates(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text(RECORD)
    assert recorded(tmp_path / "run.txt") == Recorded(pytest.approx(227.8), 79.81, 1362.84, 382.67)
    committed = recorded()
    assert 0 < committed.remote_s < committed.seconds and RECORDED.name == "make-bench.txt"


def test_each_part_takes_as_much_longer_as_its_rate_is_lower() -> None:
    run = Recorded(seconds=240.0, remote_s=60.0, decode_rate=1000.0, endpoint_rate=400.0)
    line = estimate_line(run, 500.0, 400.0)  # decoding at half the rate, the endpoint as fast: 2 x 180 + 60 s
    assert line == ("make bench: about 7.0 min here for the quick profile and the remote layer (measured now: 500 "
                    "images/s a core, the endpoint 400/s; docs/runs/make-bench.txt: 240 s at 1,000 and 400)")
    assert "about 5.0 min" in estimate_line(run, 1000.0, 200.0)  # the endpoint at half: 180 + 2 x 60 s
    assert estimate_line(run, 2000.0, None).startswith("make bench: about 1.5 min here for the quick profile (")


def test_a_record_without_its_figures_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text(RECORD.replace("'endpoint'", "'remote'"))
    for path in (tmp_path / "run.txt", tmp_path / "missing.txt"):
        with pytest.raises(LFWError, match=r"^no estimate: ") as raised:
            recorded(path)
        assert "\n" not in str(raised.value)


def test_both_rates_are_measured() -> None:
    decode, endpoint = measured(remote=True, seconds=0.05)
    assert decode > 0 and endpoint is not None and endpoint > 0


def test_the_command_prints_one_line_and_measures_the_endpoint_only_with_the_remote_layer(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    asked: list[bool] = []

    def measured(remote: bool) -> tuple[float, float | None]:
        asked.append(remote)
        return 1000.0, 200.0 if remote else None

    monkeypatch.setattr(estimate, "measured", measured)
    assert main([]) == 0 and main(["--no-remote"]) == 0 and asked == [True, False]
    with_remote, without = capsys.readouterr().out.splitlines()
    assert with_remote.startswith("make bench: about ") and "the remote layer (measured now: 1,000" in with_remote
    assert without.startswith("make bench: about ") and " min here for the quick profile (measured now: " in without
