"""pytest-benchmark's two writers, saving through :func:`lfw.cli.saving.write_atomic`.

:func:`save_atomically` swaps in :class:`AtomicFileStorage` (whole or nothing, never over an existing run) and an
atomic ``save_json``. A failed writer prints its one line, the other still saves, and :attr:`Saving.failed` makes
the plugin exit 4 (:data:`lfw.errors.EXIT_MEASUREMENT`). An incomplete run is saved marked (:func:`mark_incomplete`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_benchmark.storage.file import FileStorage
from pytest_benchmark.utils import safe_dumps

from lfw.cli.saving import write_atomic
from lfw.errors import EXIT_MEASUREMENT, LFWError, one_line


def run_bytes(output_json: dict[str, Any]) -> bytes:
    """A run's JSON exactly as pytest-benchmark writes it (so its own ``compare`` and ``list`` read it)."""
    return safe_dumps(output_json, ensure_ascii=True, indent=4).encode()


@dataclass
class Saving:
    """What the session could not save: one line per file (already printed on stderr)."""

    failures: list[str] = field(default_factory=list)
    exit_code: int = EXIT_MEASUREMENT

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def attempt(self, write: Callable[[], Path]) -> Path | None:
        """Run one writer; a failure becomes its printed line, not an exception."""
        try:
            return write()
        except LFWError as exc:
            line = one_line(exc)
            self.failures.append(line)
            self.exit_code = getattr(exc, "exit_code", EXIT_MEASUREMENT)
            print(f"\nerror: {line}", file=sys.stderr)
            return None


class AtomicFileStorage(FileStorage):
    """pytest-benchmark's file storage, its runs written whole or not at all (:func:`write_atomic`), never
    over a run already there; numbering, naming and loading are the library's own."""

    def __init__(self, storage: FileStorage, saving: Saving) -> None:
        super().__init__(storage.path, storage.logger, storage.default_machine_id)
        self.saving = saving

    def save(self, output_json: dict[str, Any], save: str) -> None:
        output_file = self.get(f"{self._next_num}_{save}.json")
        if self.saving.attempt(lambda: write_atomic(output_file, run_bytes(output_json), exclusive=True)):
            self.logger.info(f"Saved benchmark data in: {output_file}")


def save_atomically(session: Any) -> Saving:
    """Give a pytest-benchmark session (``config._benchmarksession``; None: no plugin) atomic writers for its
    stored runs and its ``--benchmark-json``; returns what records their failures."""
    saving = Saving()
    if session is None:
        return saving
    if isinstance(session.storage, AtomicFileStorage):
        session.storage.saving = saving
    elif isinstance(session.storage, FileStorage):
        session.storage = AtomicFileStorage(session.storage, saving)

    def save_json(output_json: dict[str, Any]) -> None:
        if saving.attempt(lambda: write_atomic(session.json, run_bytes(output_json))):
            session.logger.info(f"Wrote benchmark data in: {session.json}", purple=True)

    session.save_json = save_json
    return saving


def drop_unmeasured(benchmarks: list[Any]) -> list[str]:
    """Remove, in place, the entries an interrupt left without a timed round (pytest-benchmark cannot save them);
    returns their names."""
    def measured(bench: Any) -> bool:
        return bool(getattr(getattr(bench, "stats", None), "data", None))

    dropped = [str(getattr(b, "fullname", b)) for b in benchmarks if not measured(b)]
    benchmarks[:] = [b for b in benchmarks if measured(b)]
    return dropped


def mark_incomplete(session: Any, incomplete: str | None) -> None:
    """Have a pytest-benchmark session (None: no plugin) save an ``incomplete`` run marked: entries without a timed
    round left out and the stored run named ``..._incomplete``, each said on stderr."""
    if not incomplete or session is None or session.disabled:
        return
    if dropped := drop_unmeasured(session.benchmarks):
        print(f"\nleft out of the saved run, interrupted before a timed round: {', '.join(dropped)}", file=sys.stderr)
    if session.benchmarks:
        for option in ("save", "autosave"):
            if getattr(session, option):
                setattr(session, option, f"{getattr(session, option)}_incomplete")
        print(f"\nincomplete run, saved marked so: {incomplete}", file=sys.stderr)
