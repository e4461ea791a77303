"""Shared helpers for the GitOps tests: rendering, the real `kubectl kustomize`, objects."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tooling import REPO
from topogen.cli import main

EXAMPLES = REPO / "examples"
ZONE_SPLIT = EXAMPLES / "zone-split"
VENV_BIN = REPO / ".venv" / "bin"


def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("kubectl is not installed")
    return path


def kustomize(folder: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize FOLDER` (the real one); its objects."""
    result = subprocess.run(
        [kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


def kustomize_fails(folder: Path) -> str:
    result = subprocess.run(
        [kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0, result.stdout
    return result.stderr


def render(config: Path, out: Path, *extra: str) -> Path:
    """`topogen render -c CONFIG --out OUT` in process; the output root."""
    result = CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out


def write_kustomization(folder: Path, **fields: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    body = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **fields}
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return folder


def rel(path: Path, start: Path) -> str:
    """Kustomize refuses absolute paths: a path relative to the kustomization."""
    return os.path.relpath(path, start)


def ident(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def is_object(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and bool(doc.get("apiVersion"))
        and bool(doc.get("kind"))
        and isinstance(doc.get("metadata"), dict)
        and bool(doc["metadata"].get("name"))
    )


def copy_inputs(example: Path, dest: Path, paths: list[str]) -> None:
    """The example's input files or folders `paths` (relative to it), copied into dest at
    the same relative paths: inputs are read only inside the config's folder."""
    for p in paths:
        src, to = example / p, dest / p
        if src.is_dir():
            shutil.copytree(src, to, dirs_exist_ok=True)
        else:
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, to)


def relocated_config(example: Path, dest: Path, workloads: list[str]) -> Path:
    """The example's topogen.yaml in dest, with its cluster inputs copied beside it and
    other workloads."""
    cfg = yaml.safe_load((example / "topogen.yaml").read_text())
    for c in cfg["clusters"]:
        for key in ("nodes", "networkPolicies", "namespaces"):
            copy_inputs(example, dest, c.get(key, []))
    cfg["workloads"] = workloads
    path = dest / "topogen.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path
