"""Every writer of a file that a later command reads, each run once against a full file system.

``python -m tests.full_disk FOLDER [--stand-in]`` gives each writer of :data:`WRITERS` its own subfolder of FOLDER
holding an earlier file (the run, verdict or store that was there before), fills the file system, runs the writer,
and prints one JSON object: writer -> its exit code, what it printed on stderr, and whether the folder still lists
the same files and the earlier file is byte-identical. ``tests/test_full_disk.py`` runs it as root inside
``unshare -m`` with a small tmpfs mounted on FOLDER (filled for real: no free block is left); where that is not
possible, ``--stand-in`` makes the atomic writer's writes fail with ENOSPC and report no free bytes instead.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

from lfw.errors import EXIT_USAGE, LFWError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "quick_run.json"
EARLIER = b'{"earlier": "saved before the disk filled"}\n'
ROOM_ENV = "LFW_TEST_ROOM_BYTES"


class Logger:
    """pytest-benchmark's logger, as much of it as its storage uses."""

    def info(self, text: str, **kwargs: Any) -> None:
        print(text, file=sys.stderr)

    warning = info


def run_doc() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def earlier(*names: str) -> Callable[[Path], None]:
    """A set-up that leaves files of these names in the folder, as earlier saves would have."""
    def prepare(folder: Path) -> None:
        for name in names:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(EARLIER)
    return prepare


def plugin_earlier(folder: Path) -> None:
    from pytest_benchmark.utils import get_machine_id

    earlier(f"{get_machine_id()}/0001_earlier.json")(folder)


def plugin_autosave(folder: Path) -> int:
    """What make bench runs: pytest with --benchmark-autosave, through the plugin (a case of the smoke profile)."""
    stand_in = ["-p", "tests.full_disk"] if os.environ.get(ROOM_ENV) else []
    proc = subprocess.run([sys.executable, "-m", "pytest", "benchmarks", "-p", "no:cacheprovider", "-q", *stand_in,
                           "--bench-profile", "smoke", "-k", "bs16", "--benchmark-autosave",
                           f"--benchmark-storage=file://{folder}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    print(proc.stderr + proc.stdout, file=sys.stderr)
    return proc.returncode


def autosave(folder: Path) -> int:
    """pytest-benchmark's stored run (--benchmark-autosave), through the storage the plugin gives it."""
    from pytest_benchmark.storage.file import FileStorage

    from lfw.suite.saving import AtomicFileStorage, Saving

    saving = Saving()
    AtomicFileStorage(FileStorage(folder, Logger()), saving).save(run_doc(), "current")
    return saving.exit_code if saving.failed else 0


def benchmark_json(folder: Path) -> int:
    """--benchmark-json (make gate's reports/gate-run.json, make baseline's baseline file)."""
    from lfw.suite.saving import save_atomically

    session = SimpleNamespace(json=folder / "gate-run.json", storage=None, logger=Logger())
    saving = save_atomically(session)
    session.save_json(run_doc())
    return saving.exit_code if saving.failed else 0


def verdict_json(folder: Path) -> int:
    from lfw.gate.verdict import TWO_FILE
    from lfw.gate.verdict_build import failure_verdict

    failure_verdict(TWO_FILE, 5, "a run of the test").write(folder / "verdict.json")
    return 0


def gate_command(folder: Path) -> int:
    """``python -m lfw.gate BASE CURRENT``: its verdict.json and gate.md."""
    from lfw.gate.__main__ import main

    return main([str(FIXTURE), str(FIXTURE), "--summary-md", str(folder / "gate.md"), "--verdict-json",
                 str(folder / "verdict.json")])


def gate_md(folder: Path) -> int:
    from lfw.gate.summary import write_verdict_page

    write_verdict_page("# a verdict page\n" * 50, folder / "gate.md", environ={})
    return 0


def ab_run_file(folder: Path) -> int:
    """The A/B runner's run files (:func:`lfw.results.write_run`)."""
    from lfw.results import write_run

    doc = run_doc()
    write_run(folder / "current.json", doc["benchmarks"], machine=doc["machine_info"], commit=doc["commit_info"],
              datetime=doc["datetime"])
    return 0


def report_page(folder: Path, page: str) -> int:
    from lfw.report.html_page import write_html
    from lfw.report.page import write_summary
    from lfw.report.render import Report
    from lfw.results import load_run

    report = Report(load_run(FIXTURE), folder)
    write_summary(report) if page == "README.md" else write_html(report)
    return 0


def report_chart(folder: Path) -> int:
    from lfw.cli.figures import new_figure, save_figure

    fig, (ax,) = new_figure()
    ax.plot([0, 1, 2, 4], [1.0, 2.0, 2.5, 2.4])
    save_figure(fig, folder, "workers", ("png",))
    return 0


def report_mprofiles(folder: Path) -> int:
    from lfw.report.mprofile import write_mprofiles
    from lfw.results import load_run

    write_mprofiles(load_run(FIXTURE), folder)
    return 0


def next_commit(folder: Path) -> Path:
    """The fixture's run as the next commit's, beside the folder."""
    doc = run_doc()
    doc["commit_info"]["id"] = "f" * 40
    path = folder.parent / f"{folder.name}-next-run.json"
    path.write_text(json.dumps(doc))
    return path


def history_earlier(folder: Path) -> None:
    from lfw.history.store import append_run

    append_run(FIXTURE, folder)  # the store as the earlier run left it
    next_commit(folder)


def history_store(folder: Path) -> int:
    """The history's store, appended to by ``python -m lfw.history append`` (its earlier lines kept whole)."""
    from lfw.history.store import append_run

    append_run(folder.parent / f"{folder.name}-next-run.json", folder)
    return 0


def history_export(folder: Path) -> int:
    from lfw.history.__main__ import main

    return main(["export", str(FIXTURE), "--out", str(folder / "metrics.json")])


def cli_mprof(folder: Path) -> int:
    """``python -m lfw -get_timing -mprof FILE``: memory-profiler's samples of the timing passes."""
    from lfw.measure.printout import record

    record(lambda: None, folder / "timing.dat", interval=0.01)
    return 0


def screening_earlier(folder: Path) -> None:
    from lfw.data.synth import synthesize

    synthesize(folder.parent / f"{folder.name}-tree", images=4, seed=0, workers=1, progress=False)
    earlier("earlier.json")(folder)


def screening_cache(folder: Path) -> int:
    """The skip option's cached screen of a tree (:mod:`lfw.data.screen`)."""
    from lfw.data.screen import screen_tree

    screen_tree(folder.parent / f"{folder.name}-tree", cache_dir=folder)
    return 0


class Writer(NamedTuple):
    prepare: Callable[[Path], None]  # what was saved before the disk filled
    write: Callable[[Path], int]  # the writer itself: its exit code
    room: int = 0  # bytes left free


WRITERS: dict[str, Writer] = {
    "pytest --benchmark-autosave": Writer(plugin_earlier, plugin_autosave, 12 * 1024),
    "autosave": Writer(earlier("0001_earlier.json"), autosave),
    "benchmark-json": Writer(earlier("gate-run.json"), benchmark_json),
    "verdict.json": Writer(earlier("verdict.json"), verdict_json),
    "python -m lfw.gate": Writer(earlier("verdict.json", "gate.md"), gate_command),
    "gate.md": Writer(earlier("gate.md"), gate_md),
    "A/B run file": Writer(earlier("base.json"), ab_run_file),
    "report README.md": Writer(earlier("README.md"), lambda folder: report_page(folder, "README.md")),
    "report index.html": Writer(earlier("index.html"), lambda folder: report_page(folder, "index.html")),
    "report chart": Writer(earlier("workers.png"), report_chart),
    "report mprof": Writer(earlier("mprof/earlier.dat"), report_mprofiles),
    "history store": Writer(history_earlier, history_store),
    "history export": Writer(earlier("metrics.json"), history_export),
    "python -m lfw -mprof": Writer(earlier("timing.dat"), cli_mprof),
    "screening cache": Writer(screening_earlier, screening_cache),
}


class Tmpfs:
    """The folder's own file system (a small tmpfs), filled with a file until not one byte more fits, then that
    file shortened by ``room`` bytes."""

    def __init__(self, folder: Path) -> None:
        self.filler = folder / ".filler"

    def fill(self, room: int) -> None:
        with open(self.filler, "wb", buffering=0) as handle:
            for chunk in (1 << 16, 1 << 12, 1):
                with contextlib.suppress(OSError):
                    while True:
                        handle.write(b"\0" * chunk)
            handle.truncate(max(0, handle.tell() - room))

    def empty(self) -> None:
        self.filler.unlink()


class StandIn:
    """A file system with ``room`` bytes free, as the atomic writer sees it: a larger file fails with ENOSPC after
    ``room`` bytes, and ``room`` bytes are reported free (pytest runs get the same: ``-p tests.full_disk`` with
    :data:`ROOM_ENV` set)."""

    def __init__(self, folder: Path | None = None) -> None:
        import lfw.cli.saving

        self.module = lfw.cli.saving
        self.saved = (self.module._write_all, self.module.free_bytes)

    def fill(self, room: int) -> None:
        write, os.environ[ROOM_ENV] = self.saved[0], str(room)

        def write_all(fd: int, data: bytes) -> None:
            write(fd, data[:room])
            if len(data) > room:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        self.module._write_all, self.module.free_bytes = write_all, lambda folder: room

    def empty(self) -> None:
        self.module._write_all, self.module.free_bytes = self.saved
        os.environ.pop(ROOM_ENV, None)


def pytest_configure(config: Any) -> None:
    """Loaded as a pytest plugin (``-p tests.full_disk``, :data:`ROOM_ENV` set): the stand-in for the run."""
    StandIn().fill(int(os.environ[ROOM_ENV]))


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def outcome(name: str, folder: Path, disk: Tmpfs | StandIn) -> dict[str, Any]:
    """Save the writer's earlier files while there is room, fill the disk, run the writer, say what it did."""
    mine = folder / name.replace(" ", "-").replace("/", "-")
    mine.mkdir()
    prepare, write, room = WRITERS[name]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        prepare(mine)
        before = {p: p.read_bytes() for p in mine.rglob("*") if p.is_file()}
        names = listing(mine)
        disk.fill(room)
        started = time.perf_counter()
        try:
            code = write(mine)
        except LFWError as exc:
            code = getattr(exc, "exit_code", EXIT_USAGE)
            print(f"error: {exc}", file=sys.stderr)
        except Exception as exc:  # a traceback is what a writer must not end in: a failed check, not a crash here
            code = -1
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            disk.empty()
    return {"exit": code, "stderr": err.getvalue(), "seconds": round(time.perf_counter() - started, 2),
            "same_files": listing(mine) == names,
            "earlier_identical": all(p.is_file() and p.read_bytes() == data for p, data in before.items())}


def main(argv: list[str]) -> int:
    folder, stand_in = Path(argv[0]), "--stand-in" in argv
    disk = StandIn(folder) if stand_in else Tmpfs(folder)
    print(json.dumps({name: outcome(name, folder, disk) for name in WRITERS}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
