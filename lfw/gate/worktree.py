"""A revision checked out in its own temporary git worktree, for as long as a block runs.

The A/B gate (:mod:`lfw.gate.ab`: the base side), bisect (:mod:`lfw.gate.bisect`: each counted commit) and the
gate-rates campaign (``tools/gate_rates.py``: each run) all measure a revision other than the working tree in a
detached worktree of it. :func:`checkout` is that lifecycle, once: resolve the revision, forget worktrees whose
folders are gone (a run killed with SIGKILL), ``git worktree add --detach``, yield the tree, then
``git worktree remove --force``, delete the folder and prune, on every way out of the block: normal exit, an
exception, Ctrl-C, and SIGTERM (turned into :class:`KeyboardInterrupt` while the block runs, unless the
program already handles SIGTERM itself).

Git missing, a folder that is not a git checkout and a revision that does not resolve are each one
:class:`~lfw.errors.LFWError` line (exit code 2 under :func:`~lfw.errors.cli_entry`).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

from lfw.errors import LFWError


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s stripped stdout.

    Raises:
        LFWError: git is not installed, or the command failed (its last line of error output).
    """
    try:
        result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise LFWError("git is not installed or not on PATH; install it (Debian/Ubuntu: apt-get install git)") \
            from None
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise LFWError(f"git {' '.join(args)} failed: {message[-1] if message else 'no output'}")
    return result.stdout.strip()


def toplevel(repo: Path) -> Path:
    """The root of the git checkout ``repo`` is in.

    Raises:
        LFWError: git is missing, or ``repo`` is not in a git checkout.
    """
    try:
        return Path(git(repo, "rev-parse", "--show-toplevel"))
    except LFWError as exc:
        if "not installed" in str(exc):
            raise
        raise LFWError(f"{repo} is not a git checkout ({str(exc).partition(' failed: ')[2]})") from None


def resolve(repo: Path, rev: str, what: str = "", hint: str = "") -> str:
    """The full hash of the commit ``rev`` names in ``repo``.

    Raises:
        LFWError: ``unknown [what ]revision 'rev': not a commit in repo[ (hint)]``, or git is missing.
    """
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except LFWError as exc:
        if "not installed" in str(exc):
            raise
        raise LFWError(f"unknown {what + ' ' if what else ''}revision {rev!r}: not a commit in {repo}"
                       f"{f' ({hint})' if hint else ''}") from None


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds through the blocks' clean-up, as Ctrl-C does


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`KeyboardInterrupt` (so ``finally`` clean-up runs) instead of
    ending the process on the spot; the previous handler is restored after. Left alone outside the main thread
    (Python delivers signals there only) and when the program already handles SIGTERM itself."""
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
    """A detached worktree of the commit ``rev`` names in ``repo``, at ``where`` (a folder that must not exist;
    default: a new temporary one); yields its path, and removes it on every way out of the block (module
    docstring). Nothing of it is left after: not the folder, nor git's record of it.

    Raises:
        LFWError: git is missing, ``repo`` is not a git checkout, ``rev`` does not resolve to a commit, or
            ``where`` exists.
    """
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
