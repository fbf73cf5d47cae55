"""The estimate ``make bench`` prints before it starts: the committed run's time scaled by its per-core rate over
this machine's, measured now."""

from __future__ import annotations

from pathlib import Path

import pytest

from lfw.errors import LFWError
from lfw.suite.estimate import RECORDED, estimate_line, main, per_core_rate, recorded

RECORD = """wall time of make bench in a fresh clone: 281 s
  install (virtualenv, pip from local wheels): 53.2 s
  pytest (synthetic data, quick profile, remote layer): 219.2 s
  report: 8.6 s
per-core rate (single-core ceiling of the none preset): 1,363 images/s
"""  # the lines tools/record.sh make-bench writes


def test_a_record_gives_its_pytest_and_report_seconds_and_its_per_core_rate(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text(RECORD)
    assert recorded(tmp_path / "run.txt") == (pytest.approx(227.8), 1363.0)
    seconds, rate = recorded()  # the committed one
    assert seconds > 0 and rate > 0 and RECORDED.name == "make-bench.txt"


def test_a_core_half_as_fast_takes_twice_as_long() -> None:
    line = estimate_line(240.0, 1000.0, 500.0)
    assert line == ("make bench: about 8.0 min here for the quick profile and the remote layer (per-core rate now 500 "
                    "images/s; docs/runs/make-bench.txt: 240 s at 1,000)")
    assert "about 2.0 min" in estimate_line(240.0, 1000.0, 2000.0)


def test_a_record_without_its_figures_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("wall time of make bench in a fresh clone: 281 s\n")
    for path in (tmp_path / "run.txt", tmp_path / "missing.txt"):
        with pytest.raises(LFWError, match=r"^no estimate: ") as raised:
            recorded(path)
        assert "\n" not in str(raised.value)


def test_the_rate_is_measured_and_the_command_prints_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert per_core_rate(seconds=0.05) > 0
    assert main([]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("make bench: about ") and " min here for the quick profile" in line
