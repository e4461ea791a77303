"""Rendering is deterministic (bytes, hash seeds, input order) and atomic (all or nothing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from helpers import rendered_tree
from tooling import REPO
from topogen.cli import main
from topogen.emit.writer import GENERATED_HEADER

from .gitops_kit import VENV_BIN, ZONE_SPLIT, copy_inputs, is_object, render

CONFIG = ZONE_SPLIT / "topogen.yaml"
TOPS = ("kustomize", "monitoring", "policies")


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under root (hidden leftovers included), by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def baseline_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render(CONFIG, tmp_path_factory.mktemp("baseline") / "out")


@pytest.fixture(scope="module")
def baseline(baseline_out: Path) -> dict[str, bytes]:
    """Every file of the render as stored (.topogen/MANIFEST included)."""
    return _tree(baseline_out)


# --- headers and --stdout --------------------------------------------------------------------


def _check_headers(tree: dict[str, bytes], config: str) -> None:
    header = GENERATED_HEADER.format(config=config).encode()
    assert tree
    for path, data in tree.items():
        if path.endswith(".json"):
            assert not data.startswith(b"#"), path
            json.loads(data)
        else:
            assert data.startswith(header), path


def test_every_file_starts_with_the_generated_header(baseline_out: Path) -> None:
    view = rendered_tree(baseline_out)
    assert {p.split("/")[0] for p in view} == set(TOPS)
    _check_headers(view, "topogen.yaml")
    assert set(_tree(baseline_out)) == set(view) | {".topogen/MANIFEST"}


def test_committed_tree_carries_the_header() -> None:
    tree = {
        f"{top}/{k}": v for top in ("policies", "kustomize") for k, v in _tree(REPO / top).items()
    }
    assert tree
    _check_headers(tree, "examples/zone-split/topogen.yaml")


def test_stdout_is_objects_only(baseline_out: Path) -> None:
    result = CliRunner().invoke(main, ["render", "-c", str(CONFIG), "--stdout"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(GENERATED_HEADER.format(config="topogen.yaml"))
    docs = [d for d in yaml.safe_load_all(result.stdout) if d is not None]
    assert docs and all(is_object(d) for d in docs)
    kinds = {d["kind"] for d in docs}
    assert not kinds & {"Kustomization", "Component", "Test"}
    expected = sum(
        1
        for path, data in rendered_tree(baseline_out).items()
        if path.endswith(".yaml")
        and "/tests/" not in path
        and not path.endswith("kustomization.yaml")
        and not path.startswith("kustomize/")
        for d in yaml.safe_load_all(data)
        if is_object(d)
    )
    assert len(docs) == expected
    assert not [ln for ln in result.stdout.splitlines() if ln.startswith("topogen: ")]


# --- byte-identical renders ---------------------------------------------------------------


def test_two_renders_are_byte_identical(baseline: dict[str, bytes], tmp_path: Path) -> None:
    assert _tree(render(CONFIG, tmp_path / "again")) == baseline


@pytest.mark.parametrize("seed", ["0", "3141592"])
def test_hash_seed_does_not_matter(baseline: dict[str, bytes], tmp_path: Path, seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = tmp_path / "out"
    result = subprocess.run(
        [str(VENV_BIN / "topogen"), "render", "-c", str(CONFIG), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert _tree(out) == baseline


def _docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _shuffled_copy(dest: Path, one_file: bool) -> Path:
    """The example with its files renamed (reversed listing order) and documents reversed."""
    shutil.copytree(ZONE_SPLIT, dest)
    for folder in ("workloads/before", "cilium"):
        files = sorted((dest / folder).glob("*.yaml"))
        docs = [d for f in files for d in _docs(f)][::-1]
        for f in files:
            f.unlink()
        if one_file:
            (dest / folder / "all.yaml").write_text(yaml.safe_dump_all(docs))
        else:
            for i, d in enumerate(docs):  # z-0 holds the last document, a-... the first
                (dest / folder / f"{chr(ord('z') - i)}-{i}.yaml").write_text(yaml.safe_dump(d))
    nodes = dest / "cluster" / "nodes.yaml"
    (node_list,) = _docs(nodes)
    node_list["items"].reverse()
    nodes.write_text(yaml.safe_dump(node_list))
    return dest / "topogen.yaml"


@pytest.mark.parametrize("one_file", [False, True], ids=["split-files", "one-file"])
def test_input_order_does_not_matter(
    baseline: dict[str, bytes], tmp_path: Path, one_file: bool
) -> None:
    config = _shuffled_copy(tmp_path / "example", one_file)
    assert _tree(render(config, tmp_path / "out")) == baseline


# --- atomicity --------------------------------------------------------------------------------


def _invoke(config: Path, out: Path) -> Result:
    return CliRunner().invoke(main, ["render", "-c", str(config), "--out", str(out)])


@pytest.fixture
def previous(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """An output tree from an earlier render (Enforce), and a config that renders differently."""
    cfg = yaml.safe_load(CONFIG.read_text())
    for c in cfg["clusters"]:
        for key in ("nodes", "networkPolicies"):
            copy_inputs(ZONE_SPLIT, tmp_path, c[key])
    copy_inputs(ZONE_SPLIT, tmp_path, cfg["workloads"])
    old = {**cfg, "validationAction": "Enforce"}
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(old))
    (tmp_path / "new.yaml").write_text(yaml.safe_dump(cfg))
    out = render(tmp_path / "old.yaml", tmp_path / "out")
    (out / "README.md").write_text("not topogen's\n")  # files outside the managed folders
    return tmp_path / "new.yaml", out, _tree(out)


def test_the_config_used_here_would_change_the_tree(
    previous: tuple[Path, Path, dict[str, bytes]],
) -> None:
    config, out, before = previous
    assert _invoke(config, out).exit_code == 0
    after = _tree(out)
    assert after != before and after["README.md"] == before["README.md"]


@pytest.mark.parametrize(
    "target",
    [
        "topogen.pipeline.render.kustomize_files",
        "topogen.pipeline.render.render_monitoring",
        "topogen.pipeline.render.kyverno_test_files",
    ],
)
def test_a_backend_failing_half_way_leaves_the_tree(
    previous: tuple[Path, Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    config, out, before = previous

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("backend failed half-way")

    module, _, name = target.rpartition(".")
    monkeypatch.setattr(f"{module}.{name}", boom)
    result = _invoke(config, out)
    assert result.exit_code != 0
    assert "backend failed half-way" in result.stderr
    assert _tree(out) == before


def test_a_write_failing_half_way_leaves_the_tree(
    previous: tuple[Path, Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, out, before = previous
    real = os.write
    calls = {"n": 0}

    def flaky(fd: int, data: Any) -> int:  # the disk fills up at the seventh write
        calls["n"] += 1
        if calls["n"] == 7:
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", flaky)
    result = _invoke(config, out)
    assert result.exit_code == 2 and "No space left on device" in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr  # one line, as every refusal
    assert _tree(out) == before
