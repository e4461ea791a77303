"""Every YAML reader reads topogen's output back exactly: PyYAML (C and pure Python, YAML
1.1), and Go's, as kubectl (sigs.k8s.io/yaml) and kustomize (kyaml, yaml.v3) run them.

Values that differ between readers when written plain or raw: YAML 1.1 line breaks
(U+0085, U+2028, U+2029) that YAML 1.2 reads as characters, numbers only Go resolves
(1e3, 0o17, +_1), yaml.v2's y/N booleans, Go timestamps (2024-1-2), controls.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops.gitops_kit import kubectl, write_kustomization
from topogen.render.base import _f_json, to_yaml

AWKWARD = [
    "a\x85b", "\x85", "a\u2028b", "a\u2029b", "\ufeffbom", "tab\there", "bell\x07", "del\x7f",
    "c1\x9b", "1e3", "1E3", "1.5e3", "1.0e+3", ".5", "+1", "-1", "0o17", "0O17", "017", "0x1F",
    "0b101", "1_000", "+_1", "1__0", "y", "Y", "n", "N", "yes", "No", "on", "OFF", "true",
    "null", "~", "", " ", "2024-1-2", "2024-01-02", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10", "1:30", "12:30:00", ".inf", "-.Inf", ".NaN", "=", "<<", "- x",
    "#c", "a: b", "{x}", "[y]", "'q'", '"d"', "x\ny", "line\n", " lead", "trail ", "ünï",
    "日本", "🚀", "15m", "../../base", "10.0.0.1", "us-east-1a", "a" * 200,
]  # fmt: skip


def _configmap(values: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "awkward"},
        "data": {f"k{i:03d}": v for i, v in enumerate(values)},
    }


def _go_read(path: Path) -> dict[str, Any]:
    """The object as Go reads the file: kubectl's YAML to JSON, no API server needed."""
    out = subprocess.run(
        [kubectl(), "label", "--local", "-f", str(path), "topogen.io/read=yes", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _kustomized(folder: Path) -> Path:
    """The file after kustomize (yaml.v3 in, yaml.v3 out), written beside it."""
    out = subprocess.run(
        [kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    path = folder / "built.yaml"
    path.write_text(out.stdout, encoding="utf-8")
    return path


@pytest.mark.parametrize("how", ["block", "json-flow"])
def test_every_reader_reads_back_exactly(tmp_path: Path, how: str) -> None:
    cm = _configmap(AWKWARD)
    text = to_yaml(cm) if how == "block" else str(_f_json(cm))
    path = tmp_path / "cm.yaml"
    path.write_text(text + "\n", encoding="utf-8")
    assert yaml.load(text, Loader=yaml.CSafeLoader) == cm
    assert yaml.load(text, Loader=yaml.SafeLoader) == cm
    go = _go_read(path)
    assert go["data"] == cm["data"]
    # kustomize's writer (yaml.v3) refuses control characters outright (a build fails
    # loudly there) and writes U+0085 raw, which kubectl then reads as a space: topogen
    # refuses to render U+0085 at all (test_kustomize_turns_nel_into_a_space)
    printable = _configmap([v for v in AWKWARD if not _CONTROL.search(v) and "\x85" not in v])
    path.write_text((to_yaml(printable) if how == "block" else str(_f_json(printable))) + "\n")
    write_kustomization(tmp_path, resources=["cm.yaml"])
    assert _go_read(_kustomized(tmp_path))["data"] == printable["data"]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f]")


def test_the_old_way_was_wrong(tmp_path: Path) -> None:
    """The checks above can fail: as topogen wrote these values before, Go read numbers and
    a boolean, and PyYAML read U+0085 in inline JSON as a space."""
    cm = _configmap(["1e3", "y", "0o17"])
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.dump(cm, Dumper=yaml.CSafeDumper, allow_unicode=True), "utf-8")
    go = _go_read(path)["data"]
    assert go == {"k000": 1000, "k001": True, "k002": 15}
    raw = json.dumps({"v": "a\x85b"}, ensure_ascii=False)
    assert yaml.safe_load(raw) == {"v": "a b"}


def test_kustomize_turns_nel_into_a_space(tmp_path: Path) -> None:
    """Why topogen refuses U+0085 in what it renders: even escaped, it does not survive
    kustomize (yaml.v3 writes it raw) followed by kubectl (which reads YAML 1.1 breaks)."""
    cm = _configmap(["a\x85b"])
    (tmp_path / "cm.yaml").write_text(to_yaml(cm) + "\n", encoding="utf-8")
    assert "\\N" in (tmp_path / "cm.yaml").read_text()
    assert _go_read(tmp_path / "cm.yaml")["data"] == cm["data"]
    write_kustomization(tmp_path, resources=["cm.yaml"])
    assert _go_read(_kustomized(tmp_path))["data"] == {"k000": "a b"}
