"""A helper process spoken to in JSON lines (the S3 endpoint's servers, the A/B's pass servers): every read can
time out, and :meth:`Child.stop` leaves no process behind.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections import deque
from contextlib import suppress
from pathlib import Path
from typing import Any

from lfw.cli.stop import Stopped, stop_tree
from lfw.errors import LFWError, MeasurementError


class Child:
    """``command``, started at once; stderr to ``log``, else its last lines kept for errors. ``failure``: what an
    ``{"error": ...}`` answer raises; ``grace_s``: how long :meth:`stop` waits for an exit on end of input, and
    ``term_grace_s`` after asking it to end before killing what is left of its tree."""

    def __init__(self, name: str, command: list[str], *, log: Path | None = None, cwd: Path | None = None,
                 env: dict[str, str] | None = None, failure: type[LFWError] = LFWError, grace_s: float = 5.0,
                 term_grace_s: float = 5.0) -> None:
        self.name, self.log, self.failure, self.grace_s, self.term_grace_s = name, log, failure, grace_s, term_grace_s
        self._log = log.open("a") if log is not None else None
        try:
            self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._log or subprocess.PIPE, text=True, bufsize=1)
        except BaseException:
            if self._log is not None:
                self._log.close()
            raise
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: deque[str] = deque(maxlen=20)  # the last lines of its stderr, read so it never blocks
        self.ready: dict[str, Any] = {}
        threading.Thread(target=self._pump, daemon=True, name=f"{name}-stdout").start()
        if self._log is None:
            threading.Thread(target=self._drain_errors, daemon=True, name=f"{name}-stderr").start()

    @property
    def _see_log(self) -> str:
        return f"; log: {self.log}" if self.log else ""

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _drain_errors(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.strip():
                self.errors.append(line.strip())

    def receive(self, timeout_s: float, what: str = "") -> dict[str, Any]:
        """The next JSON line; ``what`` (the request it answers) and the log are named in every error."""
        during, log = (f" during {what}" if what else ""), self._see_log
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            to = f" to {what}" if what else ""
            raise MeasurementError(f"{self.name} gave no answer{to} within {timeout_s:g} s{log}") from None
        if line is None:  # its output closed: it exited, or soon will (its caller stops it either way)
            last = f": {self.errors[-1]}" if self.errors else log
            try:
                code = self.proc.wait(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                raise MeasurementError(f"{self.name} closed its output{during} and went on running{last}") from None
            raise MeasurementError(f"{self.name} exited (code {code}){during}{last}")
        try:
            message: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            raise MeasurementError(f"{self.name} wrote something other than JSON{during}: "
                                   f"{line.strip()[:120]}{log}") from None
        if "error" in message:
            failed = f" failed{during}" if what else ""
            raise self.failure(f"{self.name}{failed}: {message['error']}")
        return message

    def handshake(self, timeout_s: float) -> dict[str, Any]:
        """Wait for the line the child prints when it is ready; kept in ``ready``."""
        self.ready = self.receive(timeout_s, "start-up")
        return self.ready

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise MeasurementError(f"{self.name} is gone (code {self.proc.wait()}){self._see_log}") from None

    def ask(self, message: dict[str, Any], timeout_s: float = 10.0, what: str = "") -> dict[str, Any]:
        self.send(message)
        return self.receive(timeout_s, what)

    def stop(self) -> Stopped:
        """Close stdin (the child exits on EOF), then stop its tree (:func:`lfw.cli.stop.stop_tree`): neither it
        nor a process it started outlives this call. Returns what had to be asked and killed."""
        if self.proc.stdin is not None:
            with suppress(OSError):
                self.proc.stdin.close()
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=self.grace_s)
        stopped = stop_tree([self.proc], self.term_grace_s)
        for stream in (self.proc.stdout, self.proc.stderr, self._log):
            if stream is not None:
                stream.close()
        return stopped
