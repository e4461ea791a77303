"""`render --cluster X --out DIR` replaces X's output only."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from tooling import REPO
from topogen.cli import main
from topogen.emit.writer import swap_units
from topogen.render.base import RenderedFile

EXAMPLE = REPO / "examples" / "zone-split"


def _two_clusters(tmp: Path) -> Path:
    data = yaml.safe_load((EXAMPLE / "topogen.yaml").read_text())
    lab = data["clusters"][0]
    lab["nodes"] = [str(EXAMPLE / p) for p in lab["nodes"]]
    lab["networkPolicies"] = [str(EXAMPLE / p) for p in lab["networkPolicies"]]
    data["clusters"].append({**lab, "name": "lab2"})
    data["workloads"] = [str(EXAMPLE / "workloads" / "before")]
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
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert any(k.startswith("policies/lab2/") for k in before)
    stale = out / "policies" / "lab" / "kyverno" / "stale.yaml"
    stale.write_text("# left over\n")
    result = runner.invoke(
        main, ["render", "-c", str(config), "--out", str(out), "--cluster", "lab"]
    )
    assert result.exit_code == 0, result.output
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # lab2 untouched, lab rendered again, the stale file gone
    assert not stale.exists()
