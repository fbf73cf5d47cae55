"""The commit a recorded run was made at, as the evidence scripts under tools/ print it in their first line."""

from __future__ import annotations

from pathlib import Path

from lfw.errors import LFWError
from lfw.gate.worktree import git


def commit_label() -> str:
    """The checkout's short commit, ``+`` when it has uncommitted changes; ``?`` outside git."""
    here = Path(__file__).parent
    try:
        head = git(here, "rev-parse", "--short", "HEAD")
        dirty = git(here, "status", "--porcelain", "--untracked-files=no")
    except (OSError, LFWError):
        return "?"
    return head + ("+" if dirty else "")
