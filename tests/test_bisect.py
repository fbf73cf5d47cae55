"""Bisect a count over a throwaway git repository: the injected commit found, the bound on counts, clean-up.

The repository has ten commits of a small Python workload (``work.py``: a loop per "image"); one commit makes
the loop 50% longer (the regression), an earlier one 0.5% longer (below the gate's 3%, so still good). The
main test counts it as the cost layer does, instructions under valgrind's callgrind (skipped with the reason
when valgrind is missing); the others use a counter that reads a number from the checkout, to test every
position of the regression, bad input and clean-up in seconds.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lfw.gate.bisect import BisectPlan, main, run_bisect

WORK = """\
import sys
INNER = {inner}
total = 0
for image in range(int(sys.argv[1])):
    for i in range(INNER):
        total += i * i % 7
print(total)
"""

# The cost CLI's output protocol: the last line is {"counts": {case: {"instructions": N, "images": M}}}.
VALGRIND_COUNTER = """\
import json, os, subprocess, sys, tempfile
IMAGES = 50
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, os.path.realpath(sys.executable),
                    "-S", "work.py", str(IMAGES)], env={**os.environ, "PYTHONHASHSEED": "0"}, check=True,
                   capture_output=True)
    total = next(int(line.split()[1]) for line in open(out) if line.startswith(("totals:", "summary:")))
print(json.dumps({"counts": {"work": {"instructions": total, "images": IMAGES}}}))
"""

FILE_COUNTER = """\
import json
per_image = float(open("count.txt").read())
print(json.dumps({"counts": {"work": {"instructions": per_image * 10, "images": 10}}}))
"""

HANGING_COUNTER = """\
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "120"])
with open(sys.argv[1], "w") as handle:
    handle.write(f"{os.getpid()} {child.pid}")
time.sleep(120)
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def make_repo(tmp_path: Path, files: list[dict[str, str]]) -> tuple[Path, list[str]]:
    """One commit per entry of ``files`` (path -> content written before committing); the commits' hashes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shas = []
    for i, change in enumerate(files):
        for name, text in change.items():
            (repo / name).write_text(text)
        git(repo, "add", ".")
        git(repo, "commit", "-qm", f"commit {i}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


def workload_history(regressed_at: int, commits: int = 10) -> list[dict[str, str]]:
    """Commit 0 is GOOD; commit 2 adds 0.5% work (still good); ``regressed_at`` adds 50%; the rest edit notes."""
    inner = 200
    files = []
    for i in range(commits):
        if i == 2:
            inner += 1
        if i == regressed_at:
            inner = inner * 3 // 2
        files.append({"work.py": WORK.format(inner=inner), "count.txt": str(inner * 1000), "NOTES": f"note {i}\n"})
    return files


def worktrees(repo: Path) -> int:
    return len(git(repo, "worktree", "list").splitlines())


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


@pytest.mark.slow
def test_bisect_finds_the_injected_instruction_regression_under_valgrind(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)")
    repo, shas = make_repo(tmp_path, workload_history(regressed_at=6))
    t0 = time.perf_counter()
    assert main([shas[0], shas[-1], "--count-cmd", script(tmp_path, "count.py", VALGRIND_COUNTER),
                 "--repo", str(repo)]) == 0
    seconds = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert f"first bad commit: {shas[6]} commit 6" in out
    steps = [line.split() for line in out.splitlines() if line.split() and line.split()[0].isdigit()]
    assert [s[1] for s in steps] == [shas[4][:10], shas[6][:10], shas[5][:10]]  # the path a binary search takes
    assert [s[-2] for s in steps] == ["good", "bad", "good"]
    assert len(steps) + 1 <= math.ceil(math.log2(len(shas) - 1)) + 1  # counts besides GOOD: BAD and the search
    assert "  work: instructions/image" in out and "(+1" in out  # about +18% over the whole script
    assert worktrees(repo) == 1
    print(f"valgrind bisect over {len(shas) - 1} commits: {seconds:.1f} s", file=sys.stderr)
    print(out, file=sys.stderr)


@pytest.mark.parametrize("regressed_at", range(1, 10))
def test_every_position_is_found_within_the_bound(tmp_path: Path, regressed_at: int) -> None:
    repo, shas = make_repo(tmp_path, workload_history(regressed_at))
    plan = BisectPlan(shas[0], shas[-1], count_cmd=script(tmp_path, "count.py", FILE_COUNTER))
    result = run_bisect(plan, repo, progress=False)
    assert result.first_bad == shas[regressed_at] and result.last_good == shas[regressed_at - 1]
    candidates = len(result.commits)
    assert candidates == len(shas) - 1
    assert len(result.steps) - 1 <= math.ceil(math.log2(candidates)) + 1  # besides GOOD's base count
    assert [s.commit for s in result.steps[:2]] == [shas[0], shas[-1]]
    assert worktrees(repo) == 1


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, shas = make_repo(tmp_path, workload_history(regressed_at=6))
    count = script(tmp_path, "count.py", FILE_COUNTER)
    common = ["--count-cmd", count, "--repo", str(repo)]
    assert main(["no-such-rev", shas[-1], *common]) == 2
    assert main([shas[-1], shas[0], *common]) == 2  # swapped: GOOD is not an ancestor of BAD
    assert main([shas[0], shas[4], *common]) == 2  # only the 0.5% change in between: nothing to bisect
    assert main([shas[0], shas[-1], "--metric", "images_per_s", *common]) == 2
    assert main([shas[0], shas[-1], "-k", "nothing", *common]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5 and all(line.startswith("error: ") for line in err)
    assert "unknown GOOD revision 'no-such-rev'" in err[0]
    assert f"GOOD {shas[-1][:10]} is not an ancestor of BAD {shas[0][:10]}" in err[1]
    assert f"BAD {shas[4][:10]} has not moved beyond 3% relative to GOOD" in err[2] and "work +0.50%" in err[2]
    assert "invalid choice: 'images_per_s'" in err[3]
    assert "case 'nothing' not counted at GOOD" in err[4]
    assert worktrees(repo) == 1


def test_a_failing_count_is_a_measurement_failure_and_leaves_no_worktree(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    repo, shas = make_repo(tmp_path, workload_history(regressed_at=6))
    failing = script(tmp_path, "fail.py", "import sys\nprint('boom', file=sys.stderr)\nsys.exit(1)\n")
    assert main([shas[0], shas[-1], "--count-cmd", failing, "--repo", str(repo)]) == 4
    assert capsys.readouterr().err.strip().endswith("failed (exit 1): boom")
    assert worktrees(repo) == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_leaves_no_worktree_and_no_process(tmp_path: Path, sig: signal.Signals) -> None:
    repo, shas = make_repo(tmp_path, workload_history(regressed_at=6))
    pids = tmp_path / "pids"
    count = script(tmp_path, "hang.py", HANGING_COUNTER) + f" {shlex.quote(str(pids))}"
    # SIGINT back to its default in the child: a shell's background job starts with it ignored, and Python then
    # never raises KeyboardInterrupt (a CI step run in the background would otherwise hang here)
    proc = subprocess.Popen([sys.executable, "-m", "lfw.gate.bisect", shas[0], shas[-1], "--count-cmd", count,
                             "--repo", str(repo)], cwd=Path(__file__).parent.parent, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    [checkout] = [Path(line.split(maxsplit=1)[1]) for line in git(repo, "worktree", "list", "--porcelain").splitlines()
                  if line.startswith("worktree ") and Path(line.split(maxsplit=1)[1]) != repo]
    assert (checkout / "NOTES").read_text() == "note 0\n"  # GOOD's checkout, counting
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # not left running into the next tests
        proc.communicate()
        raise
    assert proc.returncode == 130 and err.strip().endswith("interrupted")
    assert worktrees(repo) == 1 and not checkout.exists() and not checkout.parent.exists()
    assert not [pid for pid in map(int, pids.read_text().split()) if alive(pid)]


def alive(pid: int) -> bool:
    """Running, not a zombie left for a parent that is gone (a container's init may never reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
