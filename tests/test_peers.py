"""The peers layer: every adapter meets the contract on tiny data (skipped, saying why, where its library is absent),
and a peer that crashes, hangs or mis-decodes ends in one line naming it, leaves nothing running and takes no other
member of the rotation with it."""

from __future__ import annotations

import copy
import json
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from lfw import peers
from lfw.errors import LFWError
from lfw.gate.compare import compare_runs
from lfw.gate.metrics import REFERENCE_GROUPS
from lfw.history.store import judged_figures, reference_figures
from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import LoaderPass
from lfw.measure.rotation import Rotation
from lfw.peers.check import MEAN_TOLERANCE, MisdecodeError, check_peer
from lfw.peers.contract import PassImages, PeerLoader, PeerSpec, descendants
from lfw.pipelines.decoders import decode, read_file
from lfw.results import keys as K
from lfw.results import parse_run
from lfw.suite.matrix import Group, LoaderCase
from lfw.suite.peers import PeerMember
from tests.processes import gone_or_zombie

BATCH = 8  # the tiny tree's 40 images are 5 whole batches
ROOT = Path(__file__).resolve().parents[1]


def reference_of(images: PassImages) -> np.ndarray:
    """The reference decoder's images (Pillow), as the check reads them from the decoded memmap."""
    return np.stack([decode("pil", read_file(p), p).permute(1, 2, 0).numpy() for p in images.paths])


def sleep_forever() -> None:
    while True:
        time.sleep(1)


class FakePeer(PeerLoader):
    """A peer whose engine decodes with Pillow in this process, and can be told to misbehave: ``hang`` (its
    second batch never comes), ``crash`` (its worker process dies and the epoch raises), ``fail`` (its epoch raises),
    ``leave`` (its stop leaves its workers running), ``swap`` (it hands out BGR), ``dtype`` (float64 images),
    ``workers`` (it starts that many idle worker processes, each pass or, when ``persistent``, once)."""

    def __init__(self, images: PassImages, fault: str = "", workers: int = 0, timeout_s: float = 5.0,
                 persistent: bool = False, spec: PeerSpec | None = None) -> None:
        super().__init__(spec or PeerSpec("fake", 1, batch_size=BATCH), images, layout="chw", persistent=persistent,
                         processes=workers, timeout_s=timeout_s)
        self.fault = fault
        self.workers = workers
        self.procs: list[multiprocessing.process.BaseProcess] = []

    def start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        self.procs = [ctx.Process(target=sleep_forever, daemon=True) for _ in range(self.workers)]
        for proc in self.procs:
            proc.start()

    def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        for number, start in enumerate(range(0, len(self.images), BATCH)):
            index = list(range(start, start + BATCH))
            if self.fault == "hang" and number == 1:
                time.sleep(3600)
            if self.fault == "fail" and number == 1:
                raise RuntimeError("its decoder failed")
            if self.fault == "crash" and number == 1:
                self.procs[0].kill()
                self.procs[0].join()
                raise RuntimeError(f"its worker {self.procs[0].pid} died (exit code -9)")
            images = torch.stack([decode("pil", read_file(self.images.paths[i]), "x") for i in index])
            if self.fault == "swap":
                images = images.flip(1)
            if self.fault == "dtype":
                images = images.double()
            yield images, torch.from_numpy(self.images.labels[index]), torch.tensor(index)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.is_alive() and self.fault not in ("crash", "leave"):  # these leave their workers behind
                proc.kill()
                proc.join(10)  # reaped, however busy the machine (0.1 s was not always enough under load)
            proc.join(0.1)
        self.procs = []


@pytest.fixture
def images(tiny_tree: Path) -> PassImages:
    return PassImages.first(tiny_tree)


def test_a_spec_names_its_case_and_refuses_what_cannot_run() -> None:
    assert PeerSpec("grain", 2, "workers", mode="processes").label == "grain-processes-w2"
    assert PeerSpec("dali", 2, output="float").label == "dali-t2-float"
    with pytest.raises(LFWError, match="parallelism"):
        PeerSpec("dali", 0)
    with pytest.raises(LFWError, match="unknown peer output"):
        PeerSpec("dali", 1, output="half")


def test_grain_refuses_a_mode_it_does_not_have(images: PassImages) -> None:
    from lfw.peers.grain_loader import GrainLoader

    with pytest.raises(LFWError, match="unknown grain mode 'proceses'"):
        GrainLoader(PeerSpec("grain", 2, "workers", mode="proceses", batch_size=BATCH), images)


def test_a_peer_that_is_not_installed_is_one_line_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_grain(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "grain" or name.startswith("grain."):
            raise ImportError("No module named 'grain'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "grain", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_grain)
    why = peers.missing("grain")
    assert why is not None and "\n" not in why and "pip install grain" in why


def test_the_contract_holds_and_the_check_passes_the_reference_itself(images: PassImages) -> None:
    loader = FakePeer(images)
    check = check_peer(loader, reference_of(images))
    loader.close()
    assert check.images == len(images) and check.max_abs == 0 and check.max_mean_abs == 0


@pytest.mark.parametrize(("fault", "match"), [("swap", "mis-decodes"), ("dtype", "must be torch.uint8")])
def test_a_peer_that_mis_decodes_is_one_line_naming_it(images: PassImages, fault: str, match: str) -> None:
    loader = FakePeer(images, fault)
    with pytest.raises(LFWError, match=match) as caught:
        check_peer(loader, reference_of(images))
    loader.close()
    assert "fake-t1" in str(caught.value) and "\n" not in str(caught.value)
    if fault == "swap":
        assert isinstance(caught.value, MisdecodeError) and f"tolerance {MEAN_TOLERANCE:g}" in str(caught.value)


def test_labels_and_images_handed_out_twice_are_caught(images: PassImages) -> None:
    class Shifted(FakePeer):
        def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
            for batch, labels, index in super().epoch():
                yield batch, (labels + 1), index

    with pytest.raises(MisdecodeError, match="labels differ"):
        check_peer(Shifted(images), reference_of(images))


def test_the_pixel_checks_engine_is_stopped_before_the_timed_rounds(images: PassImages) -> None:
    """A peer that does not persist stops its engine after each epoch: the check's epoch too, untimed, so no timed
    round pays that stop (SPDL's, DALI's and Grain's take a while)."""
    stops: list[float] = []

    class SlowStop(FakePeer):
        def stop(self) -> None:
            time.sleep(0.05)
            super().stop()
            stops.append(time.perf_counter())

    member = PeerMember(SlowStop(images), lambda: reference_of(images))
    results = [member.measure() for _ in range(3)]
    member.close()
    assert member.check is not None and len(stops) == 4, "each epoch's engine stopped once"
    for result in results[1:]:
        assert not any(result.t0 <= t <= result.t0 + result.wall_s for t in stops), \
            "a timed round paid the stop of the pixel check's engine"


def test_a_peer_that_hangs_ends_its_pass_in_one_line(images: PassImages) -> None:
    loader = FakePeer(images, "hang", timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(LFWError) as caught:
        LoaderPass(loader, memory_interval_s=None).run()  # type: ignore[arg-type]
    assert str(caught.value) == "fake-t1: no batch within 0.5 s: timed out (the peer hangs or is far too slow)"
    assert time.monotonic() - started < 30, "hang guard only"
    with pytest.raises(RuntimeError, match="never delivered holds a thread"):
        loader.close()


def test_a_peer_that_crashes_leaves_the_rotation_and_nothing_running(images: PassImages) -> None:
    """The crashing peer's member ends in one line, its processes stopped; the healthy one is measured."""
    crashing, healthy = FakePeer(images, "crash", workers=2), FakePeer(images, workers=1)
    members = {name: PeerMember(loader, lambda: reference_of(images))
               for name, loader in (("crashing", crashing), ("healthy", healthy))}
    before = descendants()
    measured = Rotation(members, rounds=2, isolate=list(members)).run()
    assert measured["crashing"].error is not None and "died (exit code -9)" in measured["crashing"].error
    assert "\n" not in measured["crashing"].error and not measured["crashing"].results
    assert measured["healthy"].error is None and len(measured["healthy"].results) == 2
    assert all(r.workers_seen == 1 for r in measured["healthy"].results), "the peer's worker processes are counted"
    assert all(gone_or_zombie(pid, 10) for pid in descendants() - before), "a peer's process outlived the rotation"
    assert members["crashing"].runner.shutdown_errors == [
        "fake-t1: 1 of its processes outlived its shutdown and were stopped by signal"]


def fake_adapter(monkeypatch: pytest.MonkeyPatch, name: str, builds: list[tuple[str, int]],
                 convert_fails: bool = False) -> None:
    """Registers ``name`` as a peer whose adapter builds a :class:`FakePeer`: ``builds`` gives each build's fault and
    worker processes in turn (the rotation's loader, then the memory alone's); ``convert_fails``: its one-off
    conversion raises."""
    module = types.ModuleType(f"lfw_test_peer_{name}")
    faults = iter(builds)

    def build(spec: PeerSpec, images: PassImages) -> FakePeer:
        fault, workers = next(faults, ("", 0))
        return FakePeer(images, fault, workers, spec=spec)

    def convert(images: PassImages) -> dict[str, Any]:
        raise RuntimeError("its writer failed:\nno space left")

    module.__dict__.update(DISTRIBUTIONS=(), DECODER=None, missing=lambda: None, build=build)
    if convert_fails:
        module.__dict__["convert"] = convert
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(peers.MODULES, name, module.__name__)
    monkeypatch.setattr(peers, "PEERS", (*peers.PEERS, name))


def fake_peers_group(names: list[str]) -> tuple[Group, list[LoaderCase]]:
    """A peers group of one fake peer case per name (batches of 8 over the tiny tree's 40 images)."""
    cases = [LoaderCase("peers", f"{name}-t1", {"pipeline": f"{name}-t1", "peer": name},
                        LoaderConfig(batch_size=BATCH, num_workers=0), "uint8", epoch_images=True,
                        memory_interval_s=None, peer=PeerSpec(name, 1, batch_size=BATCH), layer="peers")
             for name in names]
    return Group("peers", ("pipeline",), tuple(cases), rounds_quick=1, warmup_rounds=1, peer_group=True), cases


@pytest.mark.parametrize("phase", ["conversion", "memory alone", "close after memory alone"])
def test_a_peer_failing_around_the_rotation_is_one_line_and_the_group_is_measured(
        phase: str, tiny_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed conversion is one unavailable line for that peer's cases; a failed memory alone one recorded line
    for that case; what the memory alone's close forced, that case's shutdown errors. The other case is measured."""
    from lfw.suite.profiles import PROFILES
    from lfw.suite.runner import Datasets, GroupRunner

    monkeypatch.setenv("LFW_CACHE", str(tmp_path / "cache"))
    fake_adapter(monkeypatch, "healthy", [])
    builds = {"conversion": [], "memory alone": [("", 0), ("fail", 0)],
              "close after memory alone": [("", 0), ("leave", 1)]}[phase]
    fake_adapter(monkeypatch, "failing", builds, convert_fails=phase == "conversion")
    group, cases = fake_peers_group(["healthy", "failing"])
    before = descendants()
    rotation = GroupRunner(PROFILES["smoke"], Datasets(tiny_tree)).run(group, cases)
    assert len(rotation.measured["healthy-t1"].results) == 1 and K.PEER_PSS_MIB in rotation.facts["healthy-t1"]
    if phase == "conversion":
        assert rotation.unavailable == {
            "failing-t1": "failing not measured: conversion failed: its writer failed: no space left"}
        assert "failing-t1" not in rotation.measured
    else:
        assert rotation.measured["failing-t1"].error is None and len(rotation.measured["failing-t1"].results) == 1
    if phase == "memory alone":
        assert rotation.facts["failing-t1"][K.MEMORY_ALONE_ERROR] == \
            "memory alone not measured: its decoder failed"
        assert K.PEER_PSS_MIB not in rotation.facts["failing-t1"]
    if phase == "close after memory alone":
        assert K.PEER_PSS_MIB in rotation.facts["failing-t1"]
        assert rotation.shutdown_errors["failing-t1"] == [  # its cold and warm epoch's worker
            "failing-t1: 2 of its processes outlived its shutdown and were stopped by signal"]
    assert all(gone_or_zombie(pid, 10) for pid in descendants() - before), "a peer's process outlived the group"


def test_processes_alive_before_a_peer_started_are_not_counted_as_its_own(images: PassImages) -> None:
    other = multiprocessing.get_context("fork").Process(target=sleep_forever, daemon=True)
    other.start()
    try:
        loader = FakePeer(images, workers=2)
        loader.note_processes()
        result = LoaderPass(loader, memory_interval_s=None).run()  # type: ignore[arg-type]
        assert result.workers_seen == 2 and other.pid not in loader.worker_pids()
        loader.close()
        assert other.is_alive()
    finally:
        other.kill()
        other.join()


def test_ctrl_c_during_a_peers_rotation_leaves_nothing_running(tiny_tree: Path, tmp_path: Path) -> None:
    script = tmp_path / "rotate.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.test_peers import FakePeer, PeerMember, reference_of
        from lfw.measure.rotation import Rotation
        from lfw.peers.contract import PassImages, descendants
        images = PassImages.first({str(tiny_tree)!r})
        loader = FakePeer(images, workers=2, persistent=True)  # its workers live through the rotation
        member = PeerMember(loader, lambda: reference_of(images))
        member.measure()
        print(*sorted(descendants()), flush=True)
        Rotation({{"fake": member}}, rounds=100000).run()
    """))
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          cwd=ROOT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as child:
        assert child.stdout is not None
        pids = [int(p) for p in child.stdout.readline().split()]
        assert len(pids) == 2, "the fake peer's two workers"
        os.kill(child.pid, signal.SIGINT)
        assert child.wait(60) != 0
    assert all(gone_or_zombie(pid, 10) for pid in pids), "Ctrl-C left a peer's process running"


def run_with_peers() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The quick run fixture, and two of its decoders cases made into peers cases (not yet in it)."""
    doc = json.loads((ROOT / "tests" / "fixtures" / "quick_run.json").read_text())
    as_peers = copy.deepcopy([b for b in doc["benchmarks"] if b["group"] == "decoders"][:2])
    for bench in as_peers:
        bench["group"] = "peers"
        for field in ("name", "fullname"):
            bench[field] = bench[field].replace("test_decoders", "test_peers")
    return doc, as_peers


def test_the_gate_never_judges_a_peer_says_why_once_and_the_history_keeps_it_apart() -> None:
    doc, as_peers = run_with_peers()
    doc["benchmarks"] += as_peers
    run = parse_run(doc, "run")
    report = compare_runs(run, run)
    assert report.comparisons and not any("test_peers" in c.case for c in report.comparisons)
    notes = [n for n in report.notes if "group peers" in n]
    assert len(notes) == 1 and REFERENCE_GROUPS["peers"] in notes[0] and "the 2 cases" in notes[0]
    assert not any(key.startswith("peers/") for key in judged_figures(run))
    references = reference_figures(run)
    assert len(references) == 2 and all(K.IMAGES_PER_S in figures for figures in references.values())


@pytest.mark.parametrize("outcome", [("skipped", "spdl not measured: spdl-io not importable"),
                                     ("failed", "spdl-t2: no batch within 60 s: timed out"), None])
def test_a_peer_case_gone_from_the_current_run_is_never_a_gap(outcome: tuple[str, str] | None) -> None:
    """A peer that is not installed, failed or was not collected leaves the gate complete: reference rows."""
    doc, as_peers = run_with_peers()
    baseline, current = copy.deepcopy(doc), copy.deepcopy(doc)
    baseline["benchmarks"] += as_peers
    keys = [case.key for case in parse_run(baseline, "baseline").cases]
    outcomes = {key: {"outcome": "passed", "reason": ""} for key in keys if not key.startswith("peers/")}
    if outcome is not None:
        status, reason = outcome
        outcomes.update({key: {"outcome": status, "reason": reason} for key in keys if key.startswith("peers/")})
    current["lfw_selection"] = {"keyword": "", "markexpr": "", "profile": "quick", "layers": ["peers"],
                                "deselected": [], "cases": outcomes}
    report = compare_runs(parse_run(baseline, "baseline"), parse_run(current, "current"))
    assert len(report.missing) == 2 and not report.gaps and report.exit_code == 0
    assert all("a reference row" in m.why for m in report.missing)


PEER_SPECS = [PeerSpec("spdl", 2, batch_size=BATCH), PeerSpec("dali", 2, batch_size=BATCH),
              PeerSpec("dali", 1, output="float", batch_size=BATCH),
              PeerSpec("grain", 2, mode="threads", batch_size=BATCH),
              PeerSpec("grain", 2, output="float", mode="threads", batch_size=BATCH),
              PeerSpec("grain", 2, "workers", mode="processes", batch_size=BATCH),
              PeerSpec("webdataset", 2, "workers", batch_size=BATCH),
              PeerSpec("litdata", 2, "workers", batch_size=BATCH)]


@pytest.mark.parametrize("spec", PEER_SPECS, ids=[s.label for s in PEER_SPECS])
def test_each_peer_meets_the_contract_on_tiny_data(spec: PeerSpec, tiny_tree: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    why = peers.missing(spec.peer)
    if why is not None:
        pytest.skip(why)
    images = PassImages.first(tiny_tree, 32)  # 16 shards of 2: each of 2 workers reads 2 whole batches of 8
    monkeypatch.setenv("LFW_CACHE", str(tmp_path / "cache"))  # its converted format goes to a throwaway cache
    state = process_state()
    converted = peers.conversion(spec.peer, images)
    if converted is not None:
        assert converted["bytes"] > 0
    assert process_state() == state, "the conversion changed this process for every case after it"
    before = descendants()
    loader = peers.adapter(spec.peer).build(spec, images)
    result = LoaderPass(loader, memory_interval_s=None).run()  # type: ignore[arg-type]
    assert result.images == len(images) and result.batches == len(images) // BATCH
    assert result.workers_seen == (spec.parallelism if spec.knob == "workers" else 0)
    check = check_peer(loader, reference_of(images))
    assert check.images == len(images) and check.max_mean_abs <= MEAN_TOLERANCE
    loader.close()
    assert all(gone_or_zombie(pid, 10) for pid in descendants() - before), f"{spec.label} left a process running"
    assert process_state() == state, f"{spec.label} changed this process for every case after it"


def test_dali_stops_its_pipelines_threads_when_its_epoch_closes(tiny_tree: Path) -> None:
    """Not when the last reference to the pipeline goes: the epoch's generator, still referenced, holds one."""
    if (why := peers.missing("dali")) is not None:
        pytest.skip(why)
    import psutil

    loader = peers.adapter("dali").build(PeerSpec("dali", 2, batch_size=BATCH), PassImages.first(tiny_tree, 32))
    before = psutil.Process().num_threads()
    epoch = loader.iterate()
    assert sum(1 for _ in epoch) == 4 and psutil.Process().num_threads() > before + 1, "its threads and the feeder"
    epoch.close()
    assert psutil.Process().num_threads() <= before + 1, "DALI's threads outlived the end of its pass (the feeder's "\
        "thread stays until close)"
    loader.close()


def process_state() -> dict[str, Any]:
    """What a peer could change in this process for every later case: the start method, the SIGINT and SIGTERM
    handlers, the environment, the root logger's handlers, torch's thread counts."""
    return {"start method": multiprocessing.get_start_method(allow_none=True),
            "handlers": [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)], "environment": dict(os.environ),
            "root logger": list(logging.root.handlers),
            "torch threads": (torch.get_num_threads(), torch.get_num_interop_threads())}


def test_importing_the_peers_leaves_this_process_as_it_was() -> None:
    """Grain's import configures the root logger (absl), LitData's sets the start method, DALI's an environment
    variable: the first import of each peer puts them back, in a fresh interpreter (this one has imported them)."""
    code = textwrap.dedent("""
        import logging, multiprocessing, os, signal
        from lfw import peers
        def state():
            return (multiprocessing.get_start_method(allow_none=True), list(logging.root.handlers),
                    [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)], dict(os.environ))
        before = state()
        print([peer for peer in peers.PEERS if peers.missing(peer) is None])
        assert state() == before, (before, state())
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_shards_are_never_fewer_than_the_workers_swept() -> None:
    from lfw.peers.contract import MIN_SHARDS, images_per_shard

    for images in (128, 1024, 4096, 13_233):
        assert images // images_per_shard(images) >= MIN_SHARDS and images_per_shard(images) <= 128


def test_a_peers_parallelism_beyond_the_usable_cores_is_narrowed_saying_why() -> None:
    from lfw.suite.matrix import GROUPS
    from lfw.suite.profiles import PROFILES
    from lfw.suite.skips import Session, layers_on, skip_reason

    quick = PROFILES["quick"]
    session = Session(quick, layers_on(quick, peers=True), cores=2, cuda=False)
    group = GROUPS["peers"]
    assert skip_reason(group.case("dali-t2").needs(), session) is None
    why = skip_reason(group.case("dali-t4").needs(), session)
    assert why is not None and "exceeds the 2 usable cores" in why
    assert "make peers" in (skip_reason(group.case("dali-t2").needs(), Session(quick, layers_on(quick), 2, False))
                            or "")


@pytest.mark.parametrize(("interval", "expected"), [((1.2, 1.1, 1.3), "faster"), ((0.5, 0.4, 0.6), "slower"),
                                                    ((1.0, 0.97, 1.03), "within 5%"), ((1.0, 0.9, 1.1), "unresolved")])
def test_a_peer_is_faster_or_slower_by_the_recommendations_rule(interval: tuple[float, float, float],
                                                                 expected: str) -> None:
    from lfw.report.peers import standing
    from lfw.results.ratios import Ratio

    assert standing(Ratio(*interval, confidence=0.875, rounds=5)) == expected


def test_a_tree_that_cannot_give_whole_batches_skips_the_group_in_one_line(tiny_tree: Path) -> None:
    from lfw.suite.peers import tree_too_small

    assert tree_too_small(tiny_tree, 128, {8}) is None  # the first 40 images: 5 batches of 8
    why = tree_too_small(tiny_tree, 128, {8, 64})
    assert why is not None and why.startswith("the peers group reads 40 images a pass in whole batches of 64")
    assert "holds 40: use a larger one" in why and "\n" not in why
    assert "reads 36 images" in (tree_too_small(tiny_tree, 36, {8}) or "")
