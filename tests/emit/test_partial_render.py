"""`render --cluster X --out DIR` replaces X's output only."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from gitops.gitops_kit import copy_inputs
from helpers import rendered_tree
from tooling import REPO
from topogen.cli import main
from topogen.emit.writer import GENERATED_HEADER, swap_units
from topogen.render.base import RenderedFile

EXAMPLE = REPO / "examples" / "zone-split"


def _two_clusters(tmp: Path) -> Path:
    data = yaml.safe_load((EXAMPLE / "topogen.yaml").read_text())
    lab = data["clusters"][0]
    copy_inputs(EXAMPLE, tmp, [*lab["nodes"], *lab["networkPolicies"], *data["workloads"]])
    data["clusters"].append({**lab, "name": "lab2"})
    path = tmp / "topogen.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_swap_units() -> None:
    files = [
        RenderedFile(p, "x")
        for p in (
            "policies/lab/kyverno/a.yaml",
            "kustomize/overlays/lab/kustomization.yaml",
            "kustomize/base/kustomization.yaml",
            "monitoring/lab/rules.yaml",
        )
    ]
    assert swap_units(files, None) == ["kustomize", "monitoring", "policies"]
    assert swap_units(files, ["lab"]) == [
        "kustomize/base/kustomization.yaml",
        "kustomize/overlays/lab",
        "monitoring/lab",
        "policies/lab",
    ]


def test_render_of_one_cluster_keeps_the_others(tmp_path: Path) -> None:
    config = _two_clusters(tmp_path)
    out = tmp_path / "out"
    runner = CliRunner()
    assert runner.invoke(main, ["render", "-c", str(config), "--out", str(out)]).exit_code == 0
    before = rendered_tree(out)
    assert any(k.startswith("policies/lab2/") for k in before)
    stale = out / "policies" / "lab" / "kyverno" / "stale.yaml"
    stale.write_text(GENERATED_HEADER.format(config="topogen.yaml") + "kind: Left\n")
    result = runner.invoke(
        main, ["render", "-c", str(config), "--out", str(out), "--cluster", "lab"]
    )
    assert result.exit_code == 0, result.output
    after = rendered_tree(out)
    assert after == before  # lab2 untouched, lab rendered again, the stale file gone
    assert not stale.exists()
    assert "removed 1 generated files the inputs no longer render" in result.stderr
    assert "policies/lab/kyverno/stale.yaml" in result.stderr
