"""A revision checked out in its own temporary git worktree for as long as a block runs (A/B, bisect,
``tools/gate_rates.py``), removed on every way out, SIGTERM included. Git missing, a folder outside a git
checkout and an unknown revision are each one :class:`~lfw.errors.LFWError` line (exit 2).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

from lfw.errors import LFWError


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s stripped stdout; LFWError: git missing, or it failed (its last error line)."""
    try:
        result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise LFWError("git is not installed or not on PATH; install it (Debian/Ubuntu: apt-get install git)") \
            from None
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise LFWError(f"git {' '.join(args)} failed: {message[-1] if message else 'no output'}")
    return result.stdout.strip()


def _git_or(repo: Path, args: tuple[str, ...], message: Callable[[str], str]) -> str:
    """:func:`git`, its failure (not git missing) raised as ``message(git's error)``."""
    try:
        return git(repo, *args)
    except LFWError as exc:
        if "not installed" in str(exc):
            raise
        raise LFWError(message(str(exc).partition(" failed: ")[2])) from None


def toplevel(repo: Path) -> Path:
    """The root of the git checkout ``repo`` is in; LFWError: git missing or no checkout."""
    return Path(_git_or(repo, ("rev-parse", "--show-toplevel"), lambda why: f"{repo} is not a git checkout ({why})"))


def resolve(repo: Path, rev: str, what: str = "", hint: str = "") -> str:
    """The full hash of the commit ``rev`` names; LFWError ``unknown [what ]revision 'rev' ...[ (hint)]``."""
    return _git_or(repo, ("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"),
                   lambda _: f"unknown {what + ' ' if what else ''}revision {rev!r}: not a commit in {repo}"
                             f"{f' ({hint})' if hint else ''}")


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds through the blocks' clean-up, as Ctrl-C does


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs (in the main thread, SIGTERM not handled yet), SIGTERM raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def remove(repo: Path, tree: Path) -> None:
    """Remove the worktree ``tree`` and its folder, and forget worktrees whose folders are gone; never raises."""
    with suppress(LFWError):  # git missing: nothing was checked out either
        git(repo, "worktree", "remove", "--force", str(tree))
    shutil.rmtree(tree, ignore_errors=True)
    with suppress(LFWError):
        git(repo, "worktree", "prune")


@contextmanager
def checkout(repo: Path, rev: str, where: Path | None = None) -> Iterator[Path]:
    """A detached worktree of ``rev`` at ``where`` (new; default a temporary folder), removed with git's record of
    it on every way out. LFWError: git missing, no checkout, unknown ``rev``, or ``where`` exists."""
    repo = toplevel(repo)
    sha = resolve(repo, rev)
    if where is not None and where.exists():
        raise LFWError(f"{where} exists; a checkout of {rev} needs a new folder")
    with sigterm_as_interrupt():
        parent: Path | None = None
        if where is None:
            parent = Path(tempfile.mkdtemp(prefix="lfw-checkout-"))
            where = parent / "tree"
        try:
            git(repo, "worktree", "prune")
            git(repo, "worktree", "add", "--detach", str(where), sha)
            yield where
        finally:
            remove(repo, where)
            if parent is not None:
                shutil.rmtree(parent, ignore_errors=True)
