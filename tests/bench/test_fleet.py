"""bench/fleet.py: the same seed writes the same bytes; the smallest fleet analyzes.

The benchmark itself (`make bench`) is never part of the test run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import fleet  # noqa: E402

SMALL = fleet.SIZES["small"]


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    first = fleet.write_fleet(SMALL, tmp_path / "one")
    second = fleet.write_fleet(SMALL, tmp_path / "two")
    assert first == second
    for rel in first:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes()
    other = fleet.write_fleet(fleet.FleetSpec("small", 100, 3, 100, 10, seed=2), tmp_path / "x")
    assert other != first


def test_both_inputs_hold_the_same_fleet(tmp_path: Path) -> None:
    files = fleet.fleet_files(fleet.generate(SMALL))
    assert {p.split("/")[0] for p in files} == {"snapshot", "kubectl"}
    assert "managedFields" in files["kubectl/nodes.yaml"]
    assert "managedFields" not in files["snapshot/cluster.yaml"]
    assert "TopogenSnapshot" in files["snapshot/cluster.yaml"]


@pytest.mark.parametrize("variant", ["snapshot", "kubectl"])
def test_the_smallest_fleet_analyzes_and_renders(tmp_path: Path, variant: str) -> None:
    fleet.write_fleet(SMALL, tmp_path / "fleet")
    config = tmp_path / "fleet" / variant / "topogen.yaml"
    topogen = ROOT / ".venv" / "bin" / "topogen"
    runs = [
        subprocess.run([str(topogen), "analyze", "-c", str(config), "-o", "json"],
                       capture_output=True, text=True, timeout=120)
        for _ in range(2)
    ]  # fmt: skip
    assert {r.returncode for r in runs} <= {0, 1}, runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    assert '"kind": "AnalysisReport"' in runs[0].stdout
    out = tmp_path / "out"
    r = subprocess.run([str(topogen), "render", "-c", str(config), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    assert list((out / "policies").rglob("*.yaml"))
