"""The regression gate on synthetic pytest-benchmark runs: what passes, what fails, what is refused.

Runs are built by small helpers with chosen per-round values, so each test states the situation it checks
(a 30% drop, a memory-only regression, noise) in numbers. One fixture file, ``gate_quick_run.json``, is a
trimmed real quick-profile run, so the gate is also checked against the format the benchmarks write.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lfw.gate import Thresholds, compare_runs
from lfw.gate.__main__ import build_parser, main, thresholds_from
from lfw.gate.ab import ABPlan, pool_runs, pytest_command, run_ab, run_order, side_env
from lfw.gate.metrics import PSS_GROWTH, TTFB
from lfw.gate.stats import judge, min_p_value

FIXTURES = Path(__file__).parent / "fixtures"
CASE_A = "benchmarks/test_workers_transforms.py::test_workers_transform[workers0-none]"
CASE_B = "benchmarks/test_workers_transforms.py::test_workers_transform[workers2-uint8]"
MACHINE = {"runner_class": "cpu-2core", "usable_cores": 2, "torch": "2.14.1", "pillow": "13.0.0",
           "jpeg_library": "libjpeg-turbo 3.2.0", "dataset_kind": "synthetic", "dataset_files": 2000,
           "bench_profile": "quick", "cache_mode": "warm"}


def make_case(fullname: str, images_per_s: list[float], *, ceiling: float = 2000.0,
              ttfb: list[float] | None = None, growth: list[float] | None = None,
              **extra: Any) -> dict[str, Any]:
    """One benchmark record shaped like benchmarks/conftest.py writes it (512 images per round)."""
    growth = growth if growth is not None else [0.5, -0.3, 0.1]
    ttfb = ttfb if ttfb is not None else [0.05] * len(images_per_s)
    info = {
        "images_per_s": float(np.median(images_per_s)), "images_per_s_rounds": images_per_s,
        "efficiency": float(np.median(images_per_s)) / ceiling,
        "efficiency_rounds": [v / ceiling for v in images_per_s], "ceiling_images_per_s": ceiling,
        "ttfb_s": float(np.median(ttfb)), "ttfb_s_rounds": ttfb,
        "pss_growth_mib": float(np.median(growth)), "pss_growth_mib_rounds": growth,
        "uss_growth_mib": float(np.median(growth)), "uss_growth_mib_rounds": growth, **extra,
    }
    data = [512 / v for v in images_per_s]
    return {"group": "workers-transform", "name": fullname.split("::")[1], "fullname": fullname,
            "params": {}, "stats": {"median": float(np.median(data)), "rounds": len(data), "data": data},
            "extra_info": info}


def make_run(*cases: dict[str, Any], **machine: Any) -> dict[str, Any]:
    return {"machine_info": {**MACHINE, **machine}, "commit_info": {}, "benchmarks": list(cases),
            "datetime": "2026-01-01T00:00:00", "version": "5.3.1"}


def write(tmp_path: Path, name: str, run: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(run) if not isinstance(run, str) else run)
    return str(path)


def gate(tmp_path: Path, baseline: Any, current: Any, *flags: str) -> int:
    return main([write(tmp_path, "base.json", baseline), write(tmp_path, "cur.json", current), *flags])


STEADY = [1000.0, 1010.0, 990.0, 1005.0, 995.0]


def test_identical_runs_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(make_case(CASE_A, STEADY), make_case(CASE_B, [1500.0, 1520.0, 1480.0]))
    assert gate(tmp_path, run, run) == 0
    assert "no regression: 8 comparisons in 2 cases" in capsys.readouterr().out


def test_throughput_drop_of_30_percent_fails_naming_the_case(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    base = make_run(make_case(CASE_A, STEADY), make_case(CASE_B, [1500.0, 1520.0, 1480.0]))
    cur = make_run(make_case(CASE_A, [v * 0.7 for v in STEADY]), make_case(CASE_B, [1500.0, 1520.0, 1480.0]))
    assert gate(tmp_path, base, cur) == 1
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "REGRESSED" in line and "[" in line]
    assert any("test_workers_transform[workers0-none]" in r and "images/s" in r and "-30.0%" in r for r in rows)
    assert all("workers2-uint8" not in r for r in rows)
    assert "p=0.004 (5v5)" in out  # the noise it was judged against


def test_memory_growth_fails_even_with_unchanged_speed(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    base = make_run(make_case(CASE_A, STEADY, growth=[1.0, -2.0, 3.0, 0.0, 2.0]))
    cur = make_run(make_case(CASE_A, STEADY, growth=[180.0, 210.0, 195.0, 205.0, 190.0]))
    assert gate(tmp_path, base, cur) == 1
    out = capsys.readouterr().out
    assert "PSS growth" in out and "USS growth" in out and "images/s" not in out.split("verdict")[1]


def test_noise_level_differences_pass(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        base = make_run(make_case(CASE_A, list(1000 * rng.normal(1, 0.03, 3)),
                                  growth=list(rng.normal(0, 15, 3)), ttfb=list(0.1 * rng.normal(1, 0.08, 3))))
        cur = make_run(make_case(CASE_A, list(970 * rng.normal(1, 0.03, 3)),
                                 growth=list(rng.normal(10, 15, 3)), ttfb=list(0.11 * rng.normal(1, 0.08, 3))))
        assert gate(tmp_path, base, cur) == 0


def test_growth_near_zero_is_not_judged_by_ratio() -> None:
    """1 -> 5 MiB is five times the growth but four MiB: allocator noise, not a leak."""
    assert not judge("c", PSS_GROWTH, [1.0, 1.2, 0.8], [5.0, 5.1, 4.9]).regressed
    assert judge("c", PSS_GROWTH, [1.0, 1.2, 0.8], [190.0, 195.0, 185.0]).regressed


def test_large_change_without_evidence_is_not_a_regression() -> None:
    """Medians 20% apart but rounds interleaved: the test cannot tell it from noise."""
    verdict = judge("c", TTFB, [0.10, 0.20, 0.30, 0.12], [0.11, 0.29, 0.36, 0.14], Thresholds(ttfb=0.1))
    assert verdict.large and not verdict.regressed and verdict.p_value is not None


def test_ab_mode_halves_the_default_throughput_threshold() -> None:
    """A/B shares the machine's drift between sides, so it can afford 5%; two files get 10%."""
    parser = build_parser()
    assert thresholds_from(parser.parse_args(["a.json", "b.json"])).throughput == 0.10
    assert thresholds_from(parser.parse_args(["--ab", "main"])).throughput == 0.05
    assert thresholds_from(parser.parse_args(["--ab", "main", "--throughput-threshold", "0.2"])).throughput == 0.2


def test_min_p_value_matches_the_rounds_the_profiles_use() -> None:
    assert min_p_value(3, 3) == pytest.approx(0.05)
    assert min_p_value(1, 1) == pytest.approx(0.5)
    assert min_p_value(7, 7) < 0.001


def test_single_round_runs_fall_back_to_effect_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = make_run(make_case(CASE_A, [1000.0], growth=[0.0]))
    cur = make_run(make_case(CASE_A, [600.0], growth=[0.0]))
    assert gate(tmp_path, base, cur) == 1
    assert "1v1 rounds: effect size only" in capsys.readouterr().out


def test_new_and_missing_cases_are_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = make_run(make_case(CASE_A, STEADY), make_case(CASE_B, STEADY))
    new = CASE_A.replace("workers0-none", "workers4-none")
    cur = make_run(make_case(CASE_A, STEADY), make_case(new, STEADY))
    assert gate(tmp_path, base, cur) == 0
    out = capsys.readouterr().out
    assert "new cases, in current only (not gated): 1\n  test_workers_transform[workers4-none]" in out
    assert "missing cases, in baseline only (not run): 1\n  test_workers_transform[workers2-uint8]" in out
    assert gate(tmp_path, base, cur, "--fail-on-missing") == 1


@pytest.mark.parametrize("content, message", [
    (None, "benchmark file not found"),
    ('{"benchmarks": [', "corrupt benchmark file"),
    ('{"results": []}', "not a pytest-benchmark file"),
    ("[1, 2]", "not a pytest-benchmark file"),
    ('{"machine_info": {}, "benchmarks": []}', "no benchmark cases"),
])
def test_unusable_files_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             content: str | None, message: str) -> None:
    good = write(tmp_path, "good.json", make_run(make_case(CASE_A, STEADY)))
    bad = str(tmp_path / "missing.json") if content is None else write(tmp_path, "bad.json", content)
    assert main([good, bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_file_without_per_round_data_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(make_case(CASE_A, STEADY))
    del run["benchmarks"][0]["stats"]["data"]
    assert gate(tmp_path, make_run(make_case(CASE_A, STEADY)), run) == 2
    err = capsys.readouterr().err
    assert "no per-round data" in err and "--benchmark-save-data" in err and err.count("\n") == 1


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-such-flag"]) == 2
    assert main([]) == 2
    assert main(["a.json", "b.json", "--alpha", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err)


def test_other_machine_warns_and_compares_efficiency(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A twice-as-fast runner with the same efficiency passes; losing 30% of efficiency there fails."""
    base = make_run(make_case(CASE_A, STEADY, ceiling=2000.0))
    fast = [2 * v for v in STEADY]
    same = make_run(make_case(CASE_A, fast, ceiling=4000.0), runner_class="gpu", usable_cores=16, torch="2.15")
    assert gate(tmp_path, base, same) == 0
    captured = capsys.readouterr()
    assert "warning: machine info differs: runner_class ('cpu-2core' -> 'gpu'), usable_cores (2 -> 16), " \
           "torch ('2.14.1' -> '2.15')" in captured.err
    assert "compared efficiency instead of absolute images/s" in captured.out
    worse = make_run(make_case(CASE_A, [0.7 * v for v in fast], ceiling=4000.0), runner_class="gpu")
    assert gate(tmp_path, base, worse) == 1
    out = capsys.readouterr().out
    assert "efficiency" in out.split("verdict")[1] and "images/s" not in out.split("verdict")[1]


def test_profile_difference_warns_but_keeps_absolute(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(make_case(CASE_A, STEADY))
    assert gate(tmp_path, run, make_run(make_case(CASE_A, STEADY), bench_profile="full")) == 0
    captured = capsys.readouterr()
    assert "bench_profile ('quick' -> 'full')" in captured.err and "compared absolute images/s" in captured.out


def test_a_moved_single_core_ceiling_is_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Same code, but the session's own ceiling fell 40%: the machine was slower, and the gate says so."""
    base = make_run(make_case(CASE_A, STEADY), per_core_images_per_s_none=2000.0)
    cur = make_run(make_case(CASE_A, STEADY), per_core_images_per_s_none=1200.0)
    assert gate(tmp_path, base, cur) == 0
    assert "single-core ceiling moved between the sessions (none -40%)" in capsys.readouterr().out


def test_memory_slope_keys_are_gated() -> None:
    base = make_run(make_case(CASE_A, STEADY, median_step_uss_mib_rounds=[0.1, -0.2, 0.3]))
    cur = make_run(make_case(CASE_A, STEADY, median_step_uss_mib_rounds=[40.0, 42.0, 39.0]))
    report = compare_runs(base, cur)
    assert [c.metric.key for c in report.regressions] == ["median_step_uss_mib"]


def test_real_quick_run_passes_against_itself_and_reports_json(tmp_path: Path) -> None:
    real = str(FIXTURES / "gate_quick_run.json")
    out = tmp_path / "report.json"
    assert main([real, real, "--json-report", str(out), "--all"]) == 0
    report = json.loads(out.read_text())
    assert report["exit_code"] == 0 and len(report["comparisons"]) == 4 * 4  # images/s, first batch, PSS, USS


def test_module_entry_point_is_wired(tmp_path: Path) -> None:
    """``python -m lfw.gate`` itself (one subprocess: importing lfw loads torch, about 3 s here)."""
    real = str(FIXTURES / "gate_quick_run.json")
    bad = subprocess.run([sys.executable, "-m", "lfw.gate", real, str(tmp_path / "nope.json")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: benchmark file not found")
    assert bad.stderr.count("\n") == 1


# --- A/B mode: command building, order and pooling; the worktree dance with a fake benchmark runner ----


def test_ab_order_is_abba() -> None:
    assert run_order(3) == ["base", "current", "current", "base", "base", "current"]


def test_ab_command_and_environment(tmp_path: Path) -> None:
    plan = ABPlan("main", selection="workers0-none or workers2-none", profile="quick", python="py")
    cmd = pytest_command(plan, tmp_path / "r.json")
    assert cmd[:4] == ["py", "-m", "pytest", "benchmarks"]
    assert cmd[cmd.index("-k") + 1] == "workers0-none or workers2-none"
    assert f"--benchmark-json={tmp_path / 'r.json'}" in cmd and "--bench-profile=quick" in cmd
    assert side_env(tmp_path, {"PYTHONPATH": "/x"})["PYTHONPATH"].split(":") == [str(tmp_path), "/x"]


def test_ab_pooling_concatenates_rounds_and_recomputes_medians() -> None:
    one = make_run(make_case(CASE_A, [1000.0, 1001.0, 1002.0]), make_case(CASE_B, [10.0, 11.0, 12.0]))
    two = make_run(make_case(CASE_A, [900.0, 901.0, 902.0]))
    pooled = pool_runs([one, two])
    case = {c["fullname"]: c for c in pooled["benchmarks"]}[CASE_A]
    assert case["extra_info"]["images_per_s_rounds"] == [1000.0, 1001.0, 1002.0, 900.0, 901.0, 902.0]
    assert case["extra_info"]["images_per_s"] == pytest.approx(951.0)
    assert case["stats"]["rounds"] == 6 and len(case["stats"]["data"]) == 6
    assert one["benchmarks"][0]["extra_info"]["images_per_s_rounds"] == [1000.0, 1001.0, 1002.0]  # untouched


def test_ab_runs_both_trees_alternately_and_cleans_up(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "marker.txt").write_text("base")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "benchmarks" / "marker.txt").write_text("current")
    calls: list[tuple[str, str]] = []

    def runner(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        if cmd[0] == "git":
            return subprocess.run(cmd, **kwargs)
        tree = Path(kwargs["cwd"])
        side = (tree / "benchmarks" / "marker.txt").read_text()
        calls.append((side, kwargs["env"]["PYTHONPATH"].split(":")[0] == str(tree)))
        speed = 1000.0 if side == "base" else 700.0
        json_path = next(a for a in cmd if a.startswith("--benchmark-json=")).split("=", 1)[1]
        Path(json_path).write_text(json.dumps(make_run(make_case(CASE_A, [speed, speed + 1, speed + 2]))))
        return subprocess.CompletedProcess(cmd, 0)

    base, current, sha = run_ab(ABPlan("HEAD", repeats=2), repo, tmp_path / "out", runner=runner)
    assert calls == [("base", True), ("current", True), ("current", True), ("base", True)]
    assert len(sha) == 40 and len(list((tmp_path / "out").glob("*.json"))) == 4
    assert "worktree" not in subprocess.run(["git", "-C", str(repo), "worktree", "list"],
                                            capture_output=True, text=True).stdout.split("\n", 1)[1]
    assert compare_runs(base, current).regressions[0].metric.key == "images_per_s"


def test_ab_unknown_revision_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).parent)
    assert main(["--ab", "no-such-revision-xyz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown base revision 'no-such-revision-xyz'") and err.count("\n") == 1
