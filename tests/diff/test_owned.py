"""`topogen diff OLD_DIR NEW_DIR` on two repositories compares the files topogen owns
(each folder's manifest, or its generated header), not the inputs beside them, unless
--all-files."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from tooling import REPO
from topogen.cli import main

EXAMPLE = REPO / "examples" / "pytorch-three-zone"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _repo(at: Path, replicas: str) -> Path:
    """A copy of the example with its worker replicas set, rendered beside its config."""
    shutil.copytree(EXAMPLE, at)
    job = next((at / "workloads").rglob("*.yaml"))
    text = job.read_text()
    assert "replicas: 3" in text
    job.write_text(text.replace("replicas: 3", f"replicas: {replicas}", 1))
    assert invoke("render", "-c", at).exit_code == 0
    return at


def test_two_repositories_compare_their_generated_files_only(tmp_path: Path) -> None:
    old, new = _repo(tmp_path / "old", "3"), _repo(tmp_path / "new", "2")
    result = invoke("diff", old, new)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "PyTorchJob" not in out and "topogen.yaml" not in out and "no longer" not in out
    assert "policies/" in out or "kustomize/" in out  # the generated files did change
    everything = invoke("diff", old, new, "--all-files")
    assert everything.exit_code == 0
    assert "PyTorchJob research/resnet" in everything.output  # the input, compared as asked


def test_all_files_is_for_two_folders(tmp_path: Path) -> None:
    result = invoke("diff", "-c", EXAMPLE, "--all-files")
    assert result.exit_code == 2 and "--all-files compares two folders" in result.stderr
