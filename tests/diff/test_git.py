"""`topogen diff --against GIT_REF` in a temporary git repository built by the test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from diff.scenarios import copy_example, enforce, gpu_capacity_dropped, unchanged
from topogen.cli import main

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

_ENV = {
    "GIT_AUTHOR_NAME": "topogen tests",
    "GIT_AUTHOR_EMAIL": "tests@topogen.invalid",
    "GIT_COMMITTER_NAME": "topogen tests",
    "GIT_COMMITTER_EMAIL": "tests@topogen.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **_ENV, "HOME": str(repo.parent)}
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose config lives in a subfolder; v1 tags the example as it is."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "README.md").write_text("a GitOps repository\n", encoding="utf-8")
    copy_example(root / "clusters" / "lab")
    commit(root, "the example")
    git(root, "tag", "v1")
    return root


def invoke(cwd: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, list(args))


CFG = "clusters/lab/topogen.yaml"


def test_committed_change_against_previous_commit(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    enforce(repo / "clusters" / "lab")
    commit(repo, "enforce")
    for ref in ("HEAD~1", "v1"):
        result = invoke(
            repo, "diff", "-c", CFG, "--against", ref, "--format", "json", monkeypatch=monkeypatch
        )
        assert result.exit_code == 0, result.output
        doc = json.loads(result.output)
        assert doc["old"] == {"source": ref, "what": "inputs at this git ref, rendered now"}
        assert doc["analysis"] == {"findings": [], "plans": []}
        notes = [n for o in doc["objects"] for n in o["notes"]]
        assert "validation Audit -> Deny (Audit reports, Deny refuses)" in notes
    check = invoke(repo, "diff", "-c", CFG, "--against", "v1", "--check", monkeypatch=monkeypatch)
    assert check.exit_code == 1
    same = invoke(repo, "diff", "-c", CFG, "--against", "HEAD", "--check", monkeypatch=monkeypatch)
    assert same.exit_code == 0, same.output
    assert "analysis: no change" in same.output


def test_uncommitted_change_reports_the_analysis_delta(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu_capacity_dropped(repo / "clusters" / "lab")
    result = invoke(
        repo / "clusters",
        "diff",
        "-c",
        "lab/topogen.yaml",
        "--against",
        "HEAD",
        "--format",
        "markdown",
        "--check",
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 1, result.output
    assert "| **new problem** | `UNSCHEDULABLE` |" in result.output
    assert "this change makes group ml-training UNSCHEDULABLE" in result.output
    assert "can no longer be enforced" in result.output


def test_the_repository_is_left_as_it_was(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    enforce(repo / "clusters" / "lab")
    before = (
        git(repo, "status", "--porcelain"),
        git(repo, "worktree", "list"),
        git(repo, "stash", "list"),
        git(repo, "rev-parse", "HEAD"),
    )
    result = invoke(repo, "diff", "-c", CFG, "--against", "v1", monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    after = (
        git(repo, "status", "--porcelain"),
        git(repo, "worktree", "list"),
        git(repo, "stash", "list"),
        git(repo, "rev-parse", "HEAD"),
    )
    assert before == after


def test_config_new_since_the_ref(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "README.md").write_text("empty so far\n", encoding="utf-8")
    commit(root, "start")
    copy_example(root / "lab")
    commit(root, "add topogen")
    result = invoke(
        root, "diff", "-c", "lab/topogen.yaml", "--against", "HEAD~1", monkeypatch=monkeypatch
    )
    assert result.exit_code == 0, result.output
    assert "lab/topogen.yaml does not exist at HEAD~1: everything is new" in result.output
    assert "mutation of ml-training: policy added" in result.output


def test_a_broken_config_at_the_ref_is_an_input_error(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = repo / "clusters" / "lab" / "topogen.yaml"
    good = cfg.read_text(encoding="utf-8")
    cfg.write_text(good.replace("groups:", "grups:"), encoding="utf-8")
    commit(repo, "typo")
    cfg.write_text(good, encoding="utf-8")
    result = invoke(repo, "diff", "-c", CFG, "--against", "HEAD", monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert result.output.startswith("topogen: error: at HEAD: clusters/lab/topogen.yaml: ")
    assert "/tmp" not in result.output and "topogen-diff-ref" not in result.output


def test_not_a_ref(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unchanged(repo)
    result = invoke(repo, "diff", "-c", CFG, "--against", "no-such-branch", monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert "neither a folder nor a git ref" in result.output
