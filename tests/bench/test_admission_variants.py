"""bench/admission_variants.py's static configuration, checked with the Kyverno CLI on the
bundled example's generated policies and test pods: it gives each kind of pod the fields
the generated policies gave it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests" / "live")]
import admission_variants as av  # noqa: E402
from live_kit import docs, kyverno_apply  # noqa: E402

from tooling import require_tool  # noqa: E402

GENERATED = ROOT / "policies" / "lab" / "kyverno"
pytestmark = pytest.mark.tools


def _generated() -> list[dict[str, Any]]:
    return [
        d
        for f in sorted(GENERATED.glob("topogen-*.yaml"))
        for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
        if d
    ]


def _mutated_pods() -> list[dict[str, Any]]:
    """The generated mutate test's pods that the MutatingPolicy patches."""
    folder = GENERATED / "tests" / "topogen-ml-training-mutate"
    patched = {p["metadata"]["name"] for p in docs(folder / "patched.yaml")}
    return [p for p in docs(folder / "resources.yaml") if p["metadata"]["name"] in patched]


def _write(tmp: Path, name: str, policies: list[dict[str, Any]]) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump_all(policies, sort_keys=False), encoding="utf-8")
    return path


def _fields(pod: dict[str, Any]) -> list[Any]:
    return [get(pod) for _, get in av.FIELDS]


def test_static_policy_gives_each_kind_of_pod_its_generated_fields(tmp_path: Path) -> None:
    kyverno = require_tool("kyverno")
    pods = _mutated_pods()
    files = [
        _write(
            tmp_path, "generated.yaml", [p for p in _generated() if p["kind"] == "MutatingPolicy"]
        )
    ]
    admitted = kyverno_apply(kyverno, files, pods, tmp_path)
    kinds = av.shapes(pods)
    assert 1 < len(kinds) <= len(pods)
    by_name = {p["metadata"]["name"]: p for p in admitted}
    static = av.static_policy([(t, p, by_name[p["metadata"]["name"]]) for t, p in kinds])
    assert "matchConditions" not in static["spec"] and "variables" not in static["spec"]
    sent = [p for _, p in kinds]
    got = kyverno_apply(kyverno, [_write(tmp_path, "static.yaml", [static])], sent, tmp_path)
    assert [_fields(p) for p in got] == [_fields(by_name[p["metadata"]["name"]]) for p in sent]


def test_cel_literal() -> None:
    assert av.cel_literal({"a": ["x", 1, True]}) == '{"a": dyn([dyn("x"), dyn(1), dyn(true)])}'
