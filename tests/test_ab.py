"""Pass-interleaved A/B: the paired rule on known pair ratios, and the runner against fake pass servers.

The runner tests build a tiny git repository whose pass server is a fake speaking the real protocol (committed
base, edited working tree), at ``lfw/suite/pass_server.py`` or at the legacy ``lfw/measure/pass_server.py``, so
checkout, server lookup, process pairs, looks, output files, crashes, timeouts and clean-up are all exercised in
seconds without measuring anything.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lfw.errors import LFWError, MeasurementError
from lfw.gate import ab
from lfw.gate.__main__ import main
from lfw.gate.ab import ABPlan, parse_cases, run_ab, server_module
from lfw.gate.metrics import IMAGES_PER_S, TTFB
from lfw.gate.paired_rule import INCONCLUSIVE, OK, REGRESSED, PairedInput, decide, look_points
from lfw.gate.table import render_paired
from lfw.gate.thresholds import Thresholds
from lfw.gate.verdict_build import ab_verdict
from lfw.results import load_run
from tests.commands import pytest_benchmark

ROOT = Path(__file__).resolve().parents[1]

THRESHOLDS = {"throughput": 0.05, "ttfb": 0.25}


def pairs(centre: float, spread: float, n: int, seed: int = 0) -> tuple[float, ...]:
    rng = np.random.default_rng(seed)
    return tuple(math.log(centre) + rng.normal(0, spread, n))


def one(metric=IMAGES_PER_S, logs: tuple[float, ...] = (), case: str = "c") -> PairedInput:
    return PairedInput(case, metric, logs, (100.0,), (90.0,))


def test_a_clear_slowdown_is_regressed() -> None:
    [c] = decide([one(logs=pairs(0.88, 0.03, 12))], THRESHOLDS, alpha_look=0.05)
    assert c.verdict == REGRESSED and c.ratio == pytest.approx(0.88, abs=0.02) and c.p_holm < 0.01


def test_no_change_with_low_noise_is_ok() -> None:
    [c] = decide([one(logs=pairs(1.0, 0.02, 12))], THRESHOLDS, alpha_look=0.05)
    assert c.verdict == OK and c.ratio_low > 0.95


def test_noisy_pairs_are_inconclusive_not_a_pass() -> None:
    [c] = decide([one(logs=(-0.2, 0.2, -0.15, 0.15, -0.1, 0.1))], THRESHOLDS, alpha_look=0.05)
    assert c.verdict == INCONCLUSIVE and c.ratio == pytest.approx(1.0) and c.ratio_low < 0.9


def test_significant_but_small_is_not_a_regression() -> None:
    """A precise 2% slowdown: evidenced, but under the minimum effect, and ruled out as 5%: ok."""
    [c] = decide([one(logs=pairs(0.98, 0.004, 12))], THRESHOLDS, alpha_look=0.05)
    assert c.p_value < 0.01 and c.verdict == OK


def test_later_first_batch_is_worse_for_ttfb() -> None:
    [c] = decide([one(TTFB, pairs(1.5, 0.05, 12))], THRESHOLDS, alpha_look=0.05)
    assert c.verdict == REGRESSED and c.ratio == pytest.approx(1.5, rel=0.05)


def test_holm_over_the_comparisons_of_a_run() -> None:
    """The same borderline evidence passes alone and is held back among many comparisons."""
    borderline = (-0.1,) * 5 + (0.01,)  # one pair of six disagrees: one-sided p = 2/64
    alone = decide([one(logs=borderline)], THRESHOLDS, alpha_look=0.05)
    many = decide([one(logs=borderline, case=f"c{i}") for i in range(4)], THRESHOLDS, alpha_look=0.05)
    assert alone[0].verdict == REGRESSED and all(c.verdict != REGRESSED for c in many)


def test_look_points_and_case_parsing() -> None:
    assert look_points(10, 24, 7) == [10, 17, 24]
    assert look_points(10, 10, 7) == [10]
    assert parse_cases("workers2-none or workers2-uint8, bs64") == ("workers2-none", "workers2-uint8", "bs64")
    with pytest.raises(LFWError):
        parse_cases(" , ")
    with pytest.raises(LFWError):
        ABPlan("HEAD", min_pairs=3)


FAKE_SERVER = '''
import json, os, sys, time
SPEED = {speed}
CRASH_AFTER = {crash}
HANG = {hang}
cases = [a for a in sys.argv[1:] if not a.startswith("--") and "/" not in a and a != "quick"]
print(json.dumps({{"ready": True, "protocol": 1, "lfw": os.path.dirname(os.path.dirname(__file__)),
                  "cases": cases, "unknown": [], "pid": os.getpid()}}), flush=True)
served = 0
for line in sys.stdin:
    served += 1
    if CRASH_AFTER and served > CRASH_AFTER:
        sys.exit(3)
    if HANG:
        time.sleep(60)
    case = json.loads(line)["case"]
    wobble = 1 + 0.01 * ((served * 7919 + os.getpid()) % 5 - 2)
    rate = SPEED * wobble
    print(json.dumps({{"case": case, "images": 512, "batches": 8, "wall_s": 512 / rate, "ttfb_s": 0.1,
                      "images_per_s": rate}}), flush=True)
'''


# The cost CLI's output (python -m lfw.measure.cost PRESETS ...): counts per preset, or exit 2 with one line.
FAKE_COST = '''
import json, sys
PER_IMAGE = {per_image}
presets = [a for a in sys.argv[1:] if not a.startswith("-") and "/" not in a and not a.isdigit()]
if PER_IMAGE is None:
    print("error: cannot count instructions: valgrind is not installed", file=sys.stderr)
    sys.exit(2)
print(json.dumps({{"counts": {{p: {{"instructions": PER_IMAGE * 16, "images": 16}} for p in presets}}}}))
'''


def fake_repo(tmp_path: Path, base_speed: float, current_speed: float, crash: int = 0, hang: bool = False,
              base_count: float | None = 1e6, current_count: float | None = 1e6, base_server: str = "measure",
              current_server: str = "measure") -> Path:
    """A git repository whose committed fake server (in ``lfw/<base_server>/``) runs at ``base_speed`` and
    counts ``base_count`` instructions per image, its working tree (server in ``lfw/<current_server>/``, the
    other place emptied) at the others."""
    repo = tmp_path / "repo"
    for package in ("lfw", "lfw/measure", "lfw/suite"):
        (repo / package).mkdir(parents=True, exist_ok=True)
        (repo / package / "__init__.py").write_text("")
    cost = repo / "lfw" / "measure" / "cost.py"
    (repo / "lfw" / base_server / "pass_server.py").write_text(FAKE_SERVER.format(speed=base_speed, crash=0,
                                                                                  hang=False))
    cost.write_text(FAKE_COST.format(per_image=base_count))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "lfw" / base_server / "pass_server.py").unlink()
    (repo / "lfw" / current_server / "pass_server.py").write_text(FAKE_SERVER.format(speed=current_speed,
                                                                                     crash=crash, hang=hang))
    cost.write_text(FAKE_COST.format(per_image=current_count))
    return repo


def worktrees(repo: Path) -> int:
    return len(subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True,
                              text=True).stdout.splitlines())


def plan(**changes: object) -> ABPlan:
    options = {"cases": ("workers2-none",), "min_pairs": 8, "max_pairs": 8, "look_every": 4, "seed": 1}
    return ABPlan("HEAD", **{**options, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(("base_server", "current_server"),
                         [("measure", "measure"), ("measure", "suite"), ("suite", "suite")])
def test_a_slower_working_tree_is_caught_and_both_sides_are_written(tmp_path: Path, base_server: str,
                                                                   current_server: str) -> None:
    """Wherever each side's pass server is (a base revision from before its move to lfw/suite/ included)."""
    repo = fake_repo(tmp_path, 1000.0, 800.0, base_server=base_server, current_server=current_server)
    run = run_ab(plan(), repo, Thresholds(), tmp_path / "out", root=tmp_path)
    assert run.exit_code == 1 and run.pairs == 8 and run.looks == [8]
    assert run.current_dirty  # the uncommitted edit is what the current side measured, and the run says so
    [throughput] = [v for v in run.verdicts if v.metric.key == "images_per_s"]
    assert throughput.verdict == REGRESSED and throughput.ratio == pytest.approx(0.8, abs=0.02)
    base, current = load_run(tmp_path / "out" / "base.json"), load_run(tmp_path / "out" / "current.json")
    assert len(base.cases[0].seconds) == 16 and base.cases[0].extra["ab_side"] == "base"  # 8 pairs x 2 passes
    assert base.commit["id"] != "" and current.commit["branch"] == "(working tree)"
    verdicts = json.loads((tmp_path / "out" / "verdicts.json").read_text())
    assert verdicts["exit_code"] == 1 and len(verdicts["log_ratios"]["workers2-none:images_per_s"]) == 8
    assert worktrees(repo) == 1
    code, printed, _ = pytest_benchmark("compare", str(tmp_path / "out" / "base.json"),
                                        str(tmp_path / "out" / "current.json"), cwd=ROOT)
    assert code == 0 and "workers-transform[workers2-none]" in printed


def test_same_speed_passes(tmp_path: Path) -> None:
    run = run_ab(plan(), fake_repo(tmp_path, 1000.0, 1000.0), Thresholds(), tmp_path / "out", root=tmp_path)
    assert run.exit_code == 0 and all(v.verdict == OK for v in run.verdicts)
    assert len(run.counts) == 4 and not any(c.regressed for c in run.counts) and run.counts_unjudged is None


def test_more_instructions_per_image_on_the_current_side_are_a_regression(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Same speed, 5% more instructions per image: the count catches what the wall clock cannot resolve."""
    repo = fake_repo(tmp_path, 1000.0, 1000.0, current_count=1.05e6)
    run = run_ab(plan(), repo, Thresholds(), tmp_path / "out", root=tmp_path)
    assert run.exit_code == 1 and all(v.verdict == OK for v in run.verdicts)
    assert [round(c.change, 3) for c in run.counts] == [0.05] * 4 and all(c.regressed for c in run.counts)
    verdicts = json.loads((tmp_path / "out" / "verdicts.json").read_text())
    assert [c["case"] for c in verdicts["counts"]] == ["test_cost[none]", "test_cost[simple]", "test_cost[heavy]",
                                                      "test_cost[uint8]"]
    assert worktrees(repo) == 1
    text = render_paired(ab_verdict(run, None, None, Thresholds()), header="A/B")
    assert "REGRESSED: 4 of 6 comparisons" in text
    assert any(line.split()[:2] == ["test_cost[none]", "instructions/image"] and "+5.0% (exact count)" in line
               and line.rstrip().endswith("REGRESSED") for line in text.splitlines())


def test_a_side_that_cannot_count_leaves_the_cost_layer_not_judged_with_its_reason(tmp_path: Path) -> None:
    repo = fake_repo(tmp_path, 1000.0, 1000.0, current_count=None)
    run = run_ab(plan(), repo, Thresholds(), tmp_path / "out", root=tmp_path)
    assert run.exit_code == 0 and not run.counts
    assert run.counts_unjudged == ("the current side could not count: cannot count instructions: valgrind is not "
                                   "installed")


def test_a_side_that_crashes_is_a_measurement_failure_and_leaves_nothing(tmp_path: Path) -> None:
    repo = fake_repo(tmp_path, 1000.0, 1000.0, crash=2)  # a warm-up and one timed pass, then gone
    with pytest.raises(MeasurementError, match=r"current side exited \(code 3\)"):
        run_ab(plan(), repo, Thresholds(), tmp_path / "out", root=tmp_path)
    assert worktrees(repo) == 1
    leftover = subprocess.run(["pgrep", "-f", f"pass_server --root {tmp_path} "], capture_output=True)
    assert leftover.returncode == 1  # no side process of this run survives


def test_a_stuck_side_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stuck side ignores the end of its input too: it is stopped after its grace (30 s, here 0.5 s)."""
    class Impatient(ab.Child):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "grace_s": 0.5})

    monkeypatch.setattr(ab, "Child", Impatient)
    repo = fake_repo(tmp_path, 1000.0, 1000.0, hang=True)
    with pytest.raises(MeasurementError, match=r"gave no answer .* within 1 s"):
        run_ab(plan(timeout_s=1.0), repo, Thresholds(), tmp_path / "out", root=tmp_path)
    assert worktrees(repo) == 1


def test_output_folder_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(LFWError, match="never overwritten"):
        run_ab(plan(), fake_repo(tmp_path, 1.0, 1.0), Thresholds(), tmp_path / "out", root=tmp_path)


def test_cli_errors_are_one_line_with_documented_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).parent)
    assert main(["--ab", "no-such-revision-xyz"]) == 2
    assert main(["--ab", "HEAD", "-k", "workers99-none"]) == 2
    assert main(["--ab", "HEAD", "a.json"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: unknown base revision 'no-such-revision-xyz'")
    assert err[1].startswith("error: unknown case 'workers99-none'")
    assert "--ab takes no baseline or current file" in err[2] and len(err) == 3


def test_a_base_revision_without_a_pass_server_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "old"
    (repo / "lfw").mkdir(parents=True)
    (repo / "lfw" / "__init__.py").write_text("")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "old"], check=True)
    with pytest.raises(LFWError, match="predates pass-interleaved A/B") as refused:
        run_ab(plan(), repo, Thresholds(), tmp_path / "out", root=tmp_path)
    assert "no lfw/suite/pass_server.py or lfw/measure/pass_server.py" in str(refused.value)
    assert "\n" not in str(refused.value) and worktrees(repo) == 1


def test_the_server_module_is_the_one_the_tree_has_the_moved_one_first(tmp_path: Path) -> None:
    assert server_module(tmp_path) is None
    (tmp_path / "lfw" / "measure").mkdir(parents=True)
    (tmp_path / "lfw" / "measure" / "pass_server.py").write_text("")
    assert server_module(tmp_path) == "lfw.measure.pass_server"
    (tmp_path / "lfw" / "suite").mkdir()
    (tmp_path / "lfw" / "suite" / "pass_server.py").write_text("")
    assert server_module(tmp_path) == "lfw.suite.pass_server"


def test_a_working_tree_without_a_pass_server_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = fake_repo(tmp_path, 1000.0, 1000.0)
    (repo / "lfw" / "measure" / "pass_server.py").unlink()
    with pytest.raises(LFWError, match=r"the working tree .* has no pass server \(lfw/suite/pass_server.py or "):
        run_ab(plan(), repo, Thresholds(), tmp_path / "out", root=tmp_path)
    assert worktrees(repo) == 1


def test_a_child_that_closes_its_output_but_runs_on_is_named_and_stopped() -> None:
    """A side whose stdout closes while it keeps running is an error within its grace time, never a hang."""
    from lfw.cli.child import Child

    child = Child("side", [sys.executable, "-c", "import os, time; os.close(1); time.sleep(60)"], grace_s=0.5)
    try:
        with pytest.raises(MeasurementError, match="side closed its output during start-up and went on running"):
            child.handshake(timeout_s=30)  # a hang guard: the error comes after the 0.5 s grace
    finally:
        child.stop()
    assert child.proc.returncode is not None
