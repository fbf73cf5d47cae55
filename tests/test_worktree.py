"""The one worktree lifecycle (:func:`lfw.gate.worktree.checkout`) on a tiny throwaway repository: the
revision's files in the block, nothing left after it on any way out (an error, Ctrl-C, SIGTERM), and one-line
errors for git missing, a folder outside git and a revision that does not resolve."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lfw.errors import LFWError
from lfw.gate.worktree import checkout, sigterm_as_interrupt

ROOT = Path(__file__).parent.parent


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def two_commits(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository whose ``FILE`` reads "one" at its first commit and "two" at its second (HEAD)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    for text in ("one", "two"):
        (repo / "FILE").write_text(text)
        git(repo, "add", ".")
        git(repo, "commit", "-qm", text)
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


def worktrees(repo: Path) -> list[str]:
    """Every worktree git knows of besides the main one."""
    return [line.split(maxsplit=1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")][1:]


def test_the_block_sees_the_revision_detached_and_nothing_is_left_after(tmp_path: Path) -> None:
    repo, shas = two_commits(tmp_path)
    with checkout(repo, "HEAD~1") as tree:
        assert (tree / "FILE").read_text() == "one" and git(tree, "rev-parse", "HEAD") == shas[0]
        assert subprocess.run(["git", "-C", str(tree), "symbolic-ref", "-q", "HEAD"]).returncode == 1  # detached
        assert worktrees(repo) == [str(tree)]
    assert worktrees(repo) == [] and not tree.exists() and not tree.parent.exists()
    assert (repo / "FILE").read_text() == "two"  # the main checkout untouched


def test_a_chosen_folder_is_used_and_an_existing_one_refused(tmp_path: Path) -> None:
    repo, _ = two_commits(tmp_path)
    where = tmp_path / "scratch" / "tree"
    with checkout(repo, "HEAD", where) as tree:
        assert tree == where and (where / "FILE").read_text() == "two"
    assert not where.exists() and worktrees(repo) == []
    where.mkdir(parents=True)
    with pytest.raises(LFWError, match="exists; a checkout of HEAD needs a new folder"), checkout(repo, "HEAD", where):
        pass
    assert where.is_dir()  # refused, not deleted


@pytest.mark.parametrize("raised", [RuntimeError("boom"), KeyboardInterrupt()])
def test_an_error_or_ctrl_c_inside_the_block_leaves_no_worktree(tmp_path: Path, raised: BaseException) -> None:
    repo, _ = two_commits(tmp_path)
    with pytest.raises(type(raised)), checkout(repo, "HEAD") as tree:
        (tree / "untracked").write_text("made in the block")  # --force: removed even with changes in it
        raise raised
    assert worktrees(repo) == [] and not tree.exists() and not tree.parent.exists()


def test_sigterm_inside_the_block_leaves_no_worktree(tmp_path: Path) -> None:
    repo, _ = two_commits(tmp_path)
    program = ("import sys, time\nfrom pathlib import Path\nfrom lfw.gate.worktree import checkout\n"
               "with checkout(Path(sys.argv[1]), 'HEAD') as tree:\n    print(tree, flush=True)\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", program, str(repo)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        tree = Path(proc.stdout.readline().strip())
        assert worktrees(repo) == [str(tree)]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:  # a failed check above must not leave the child (and its checkout) to the next tests
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "KeyboardInterrupt" in err  # unwound through the block, not killed on the spot
    assert worktrees(repo) == [] and not tree.exists() and not tree.parent.exists()


def test_sigterm_handling_is_restored_and_a_programs_own_handler_kept() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with sigterm_as_interrupt():
        inside = signal.getsignal(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before
    if before is signal.SIG_DFL:
        assert callable(inside) and inside is not signal.SIG_DFL

    def own(signum: int, frame: object) -> None:
        pass

    signal.signal(signal.SIGTERM, own)
    try:
        with sigterm_as_interrupt():
            assert signal.getsignal(signal.SIGTERM) is own
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_stale_worktree_of_a_killed_run_is_forgotten(tmp_path: Path) -> None:
    repo, _ = two_commits(tmp_path)
    git(repo, "worktree", "add", "--detach", str(tmp_path / "stale"), "HEAD")
    subprocess.run(["rm", "-rf", str(tmp_path / "stale")], check=True)  # as a SIGKILL leaves it
    with checkout(repo, "HEAD"):
        pass
    assert worktrees(repo) == []


def test_errors_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _ = two_commits(tmp_path)
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    cases = [(repo, "no-such-rev", f"unknown revision 'no-such-rev': not a commit in {repo}"),
             (outside, "HEAD", f"{outside} is not a git checkout (fatal: not a git repository")]
    for where, rev, message in cases:
        with pytest.raises(LFWError) as caught, checkout(where, rev):
            pass
        assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    monkeypatch.setenv("PATH", str(outside))  # no git on it
    with pytest.raises(LFWError, match=r"^git is not installed or not on PATH") as caught, checkout(repo, "HEAD"):
        pass
    assert "\n" not in str(caught.value)
    monkeypatch.undo()
    assert worktrees(repo) == []
