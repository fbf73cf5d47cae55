"""Every entry point outside the main commands parses through ``OneLineParser`` under ``cli_entry``: a bad argument
or a missing run file is one ``error:`` line on stderr and exit 2, never usage text or a traceback. Parsing only:
each call fails before it measures or starts anything."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

MISSING = "no-such-run.json"

CASES = {  # module: (argv, what the line names)
    "lfw.suite.pass_server": (["--profile", "huge", "--root", ".", "workers2-none"], "invalid choice: 'huge'"),
    "lfw.remote.proxy": (["--upstream", "127.0.0.1"], "--upstream must be HOST:PORT"),
    "tools.watch_check": (["--steps", "many"], "argument --steps: invalid int value"),
    "tools.watch_overhead": (["--rounds", "0"], "--rounds must be 1 or more"),
    "tools.remote_runs": (["--runs", "0"], "--runs must be 1 or more"),
    "tools.cost_across_cpus": (["only-one.json"], "the following arguments are required: second"),
    "tools.memory_across_cpus": ([], "the following arguments are required: runs"),
    "tools.stage_table": (["a.json", "b.json"], "unrecognized arguments: b.json"),
    "tools.peers_table": (["--all"], "unrecognized arguments: --all"),
}
RUN_READERS = {  # module: argv naming a run file that does not exist
    "tools.cost_across_cpus": [MISSING, MISSING],
    "tools.memory_across_cpus": [MISSING],
    "tools.stage_table": [MISSING],
    "tools.peers_table": [MISSING],
    "tools.remote_runs": ["--read", MISSING],
}


def one_error_line(module: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = importlib.import_module(module).main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("module", list(CASES))
def test_a_bad_argument_is_one_line_and_exit_2(module: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv, message = CASES[module]
    assert message in one_error_line(module, argv, capsys)


@pytest.mark.parametrize("module", list(RUN_READERS))
def test_a_missing_run_file_is_one_line_and_exit_2(module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert MISSING in one_error_line(module, RUN_READERS[module], capsys)
