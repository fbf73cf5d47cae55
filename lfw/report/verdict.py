"""Which gate verdict the report shows: the gate's own, read from ``verdict.json`` and shown only when it judged these
very runs (by SHA-256, :meth:`~lfw.gate.verdict.Verdict.matches`); given a baseline and none matching, the gate is
run as a subprocess and what it wrote is read. Nothing is judged here. See docs/reports.md ("The HTML page").
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lfw.errors import LFWError
from lfw.gate.verdict import MAKE_ONE, VERDICT_PATH, Verdict, load_verdict

VERDICT_JSON = VERDICT_PATH.name  # OUT/verdict.json: the gate's verdict beside the report
GATE_PAGE = "gate.md"  # OUT/gate.md: the gate's Markdown page, written beside it when the report asks the gate
GATE_EXITS = (0, 1, 5)  # the gate's exits that carry a verdict of both runs (no regression, regression, a gap)


@dataclass(frozen=True)
class ShownVerdict:
    """The verdict the report shows (None when none matches) and, when none does, the one line that says so."""

    verdict: Verdict | None
    note: str = ""


def ask_gate(base: Path, current: Path, out: Path) -> Verdict:
    """Run the gate on ``base`` and ``current``, writing ``out/verdict.json`` and ``out/gate.md``; its verdict.
    Raises :class:`~lfw.errors.LFWError` with the gate's own one-line error when it gives no verdict of the runs."""
    path = out / VERDICT_JSON
    path.unlink(missing_ok=True)  # an earlier verdict of other runs must not pass for this one if the gate fails
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run([sys.executable, "-m", "lfw.gate", str(base), str(current), "--verdict-json", str(path),
                           "--summary-md", str(out / GATE_PAGE)], env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode not in GATE_EXITS or not path.is_file():
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise LFWError(f"the gate gave no verdict of {base} and {current}: {last}")
    return load_verdict(path)


def shown_verdict(out: Path, current: Path, base: Path | None = None, explicit: Path | None = None) -> ShownVerdict:
    """The verdict to show for ``current`` (against ``base`` when given): ``explicit`` (which must exist), else
    ``out/verdict.json`` when present, if it judged these very runs; with a baseline and none matching, the gate is
    asked. An ``explicit`` verdict that is unreadable or of another schema version is a one-line LFWError; such an
    ``out/verdict.json`` is passed over as not matching, with a note."""
    if explicit is not None and not explicit.is_file():
        raise LFWError(f"--verdict {explicit}: not found")
    path = explicit or out / VERDICT_JSON
    found, unread = None, ""
    if path.is_file():
        try:
            found = load_verdict(path)
        except LFWError as exc:
            if explicit is not None:
                raise
            unread = str(exc)
    if found is not None and found.matches(current, base):
        return ShownVerdict(found)
    if base is not None and explicit is None:
        out.mkdir(parents=True, exist_ok=True)
        return ShownVerdict(ask_gate(base, current, out))
    if unread:
        return ShownVerdict(None, f"not shown: {unread}")
    if found is None:
        return ShownVerdict(None)
    judged = found.current.path if found.current is not None else "no run"
    return ShownVerdict(None, f"no verdict matches these runs: {path} judges {judged} (by SHA-256); {MAKE_ONE} "
                              f"--verdict-json {path} makes one")
