"""The suite engine: one skip rule, the suite on a user's own dataset, and a package that stands on its own."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lfw.errors import LFWError
from lfw.peers import distributions
from lfw.results import SCHEMA_VERSION, load_run
from lfw.suite import matrix
from lfw.suite.profiles import COST, PROFILES, REMOTE
from lfw.suite.skips import Needs, Session, layers_on, skip_reason
from lfw.suite.user_dataset import user_dataset

ROOT = Path(__file__).resolve().parents[1]


def session(profile: str = "quick", *, cores: int = 2, cuda: bool = False, user: str | None = None,
            **asked: bool) -> Session:
    p = PROFILES[profile]
    return Session(p, layers_on(p, **asked), cores, cuda, user_dataset=user)


def test_skip_reason_names_the_machine_the_profile_the_layer_and_the_dataset() -> None:
    assert skip_reason(Needs(workers=2), session()) is None
    assert "capped" in (skip_reason(Needs(workers=8), session()) or "")
    assert skip_reason(Needs(workers=8), session(cores=4)) is None
    assert "CUDA" in (skip_reason(Needs(cuda=True), session()) or "")
    assert skip_reason(Needs(cuda=True), session(cuda=True)) is None
    assert "--bench-cost" in (skip_reason(Needs(layer=COST), session()) or "")
    assert skip_reason(Needs(layer=COST), session(cost=True)) is None
    assert skip_reason(Needs(layer=COST), session("full")) is None
    assert "--bench-remote" in (skip_reason(Needs(layer=REMOTE), session()) or "")
    assert skip_reason(Needs(layer=REMOTE), session(keyword="remote")) is None
    assert (skip_reason(Needs(full_only="full only"), session()) or "").endswith("full only")
    assert skip_reason(Needs(full_only="full only"), session("full")) is None
    assert "budget" in (skip_reason(Needs(not_quick="budget"), session()) or "")
    assert skip_reason(Needs(not_quick="budget"), session("smoke")) is None  # make test still runs it once
    assert "a:b" in (skip_reason(Needs(lfw_only="LFW's files"), session(user="a:b")) or "")
    assert skip_reason(Needs(lfw_only="LFW's files"), session()) is None
    remote = Needs(workers=2, layer=REMOTE, latency_ms=100)
    assert "up to 20 ms" in (skip_reason(remote, session("smoke")) or "")
    assert skip_reason(remote, session("full")) is None


def test_a_session_records_its_profile_cache_mode_and_with_the_peers_layer_the_peers_versions() -> None:
    assert session().machine_facts() == {"bench_profile": "quick", "cache_mode": "warm"}
    facts = session("smoke", peers=True).machine_facts()
    assert facts["bench_profile"] == "smoke" and set(facts["peers"]) == set(distributions())


def test_the_plugin_holds_hooks_and_fixtures_only() -> None:
    """``benchmarks/plugin.py`` is wiring (as pytest-benchmark's own ``plugin.py``): every function a pytest hook or
    a fixture, no module state of its own, under 180 lines; the work is in :mod:`lfw.suite` and
    :mod:`benchmarks.helpers`."""
    path = ROOT / "benchmarks" / "plugin.py"
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
            assert node.name.startswith("pytest_") or fixture, f"{node.name}: not a hook or a fixture"
        else:
            assert isinstance(node, ast.Import | ast.ImportFrom | ast.Expr), f"line {node.lineno}: module state"
    assert len(path.read_text().splitlines()) < 180


def test_every_matrix_case_states_its_needs_and_a_user_dataset_keeps_the_knob_groups() -> None:
    kept = {c.group for g in matrix.GROUPS.values() for c in g.cases
            if skip_reason(c.needs(), session("full", cores=8, cuda=True, user="m:f")) is None}
    assert kept == {"workers-transform", "batch-size", "pin-memory", "persistent-workers", "prefetch",
                    "start-method"}


def write_module(tmp_path: Path, body: str) -> None:
    (tmp_path / "userdata.py").write_text(textwrap.dedent(body))


@pytest.mark.parametrize(("body", "spec", "message"), [
    ("", "nomodule:make", "no module 'nomodule'"),
    ("", "userdata", "expected MODULE:FACTORY"),
    ("", "userdata:make", "has no attribute 'make'"),
    ("make = 3\n", "userdata:make", "int, not a callable"),
    ("def make():\n    return [1, 2]\n", "userdata:make", "returned a list, not a map-style"),
    ("def make():\n    raise OSError('no such bucket')\n", "userdata:make", "the factory raised"),
    ("""
     import torch
     from torch.utils.data import Dataset
     class Ragged(Dataset):
         def __len__(self): return 2
         def __getitem__(self, i): return torch.zeros(i + 1)
     def make(): return Ragged()
     """, "userdata:make", "cannot be batched by the default collate"),
    ("""
     from torch.utils.data import Dataset
     class Empty(Dataset):
         def __len__(self): return 0
         def __getitem__(self, i): raise IndexError(i)
     def make(): return Empty()
     """, "userdata:make", "is empty"),
])
def test_a_bad_factory_is_one_line_naming_the_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str,
                                                       spec: str, message: str) -> None:
    write_module(tmp_path, body)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "userdata", raising=False)
    with pytest.raises(LFWError, match=re.escape(message)) as err:
        user_dataset(spec)
    assert "\n" not in str(err.value)


def run_pytest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_bench_dataset_error_from_pytest_is_one_line_without_traceback() -> None:
    proc = run_pytest("--bench-dataset", "examples.imagefolder:nothing", "--collect-only", "-q")
    assert proc.returncode != 0
    assert "has no attribute 'nothing'" in proc.stderr and "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_suite_runs_on_an_imagefolder_and_the_report_recommends(tiny_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run_pytest("--bench-profile", "smoke", "--bench-dataset", "examples.imagefolder:faces",
                      "-k", "workers_transform or batch_size", f"--benchmark-json={out}", "-q",
                      env={"LFW_ROOT": str(tiny_tree)})
    assert proc.returncode == 0, proc.stdout[-3000:]
    run = load_run(out)
    assert run.selection is not None
    assert {c.schema_version for c in run.cases} == {SCHEMA_VERSION}, "every saved case carries schema_version"
    measured = {c.key for c in run.group("workers-transform")}
    beyond_limits = {k for k, o in run.selection.outcomes.items() if o.limit}  # a small /dev/shm, say
    assert "workers-transform/workers0-none" in measured  # no batch crosses /dev/shm without workers
    assert measured | beyond_limits >= {f"workers-transform/workers{w}-none" for w in (0, 1, 2, 4)}
    assert not any(k.endswith(("-uint8", "-heavy")) for k in measured)  # LFW's presets left out, with the reason
    assert run.machine["dataset_kind"] == "user" and run.machine["dataset_path"] == "examples.imagefolder:faces"
    report = subprocess.run([sys.executable, "-m", "lfw.report", str(out), "--out", str(tmp_path / "report")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    if len(measured) > 1:  # a knee needs two worker counts that fit
        assert "recommended num_workers" in report.stdout
        assert "examples.imagefolder:faces (your dataset): " in report.stdout


def test_lfw_measure_imports_without_torchvision() -> None:
    code = "import sys, lfw.measure, lfw.measure.machine; print('torchvision' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "False", proc.stderr


def test_the_package_does_not_know_the_benchmark_tree() -> None:
    for path in (ROOT / "lfw").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(from|import) benchmarks\b", text, re.M), path
        assert not re.search(r"\btest_\w+\.py\b", text), f"{path} names a test file"


def test_measure_pass_times_any_dataloader() -> None:
    """The public primitive on a plain TensorDataset: no LFW, no preset, the README's dozen lines."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from lfw.measure import PassResult, measure_pass

    loader = DataLoader(TensorDataset(torch.zeros(40, 3, 8, 8), torch.arange(40)), batch_size=8, num_workers=1)
    result = measure_pass(loader, batches=3, memory_interval_s=0.05)
    assert isinstance(result, PassResult) and result.images == 24 and result.batches == 3
    assert result.images_per_s > 0 and 0 < result.ttfb_s <= result.wall_s and len(result.waits_s) == 2
    assert result.memory is not None and result.memory.worker_pids  # the worker was seen in the tree
    with pytest.raises(TypeError):
        PassResult(24, 3, 1.0, 0.1)  # keyword-built: positional fields are refused


def test_the_pin_memory_group_starts_cuda_in_an_untimed_round(tiny_tree: Path) -> None:
    """Its pass copies to the device: the first one starts CUDA (context, allocators, pinned pool), which must fall
    in a warm-up round, not in round 1 of whichever case runs first. Every case gets one untimed pass."""
    from lfw.suite.runner import Datasets, GroupRunner

    group = matrix.GROUPS["pin-memory"]
    rotation = GroupRunner(PROFILES["smoke"], Datasets(tiny_tree)).run(group, [group.case("nopin")])
    assert rotation.info["warmup_rounds"] == 1
    assert len(rotation.measured["nopin"].results) == rotation.info["rounds"]
