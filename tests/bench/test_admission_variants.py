"""bench/admission_variants.py's two configurations, checked with the Kyverno CLI on the
bundled example's generated policies and test pods: the joined role policy mutates every
pod as the generated pair does, and the static policy gives each kind of pod the fields
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
    """The generated mutate tests' pods that a role policy patches."""
    out: dict[str, dict[str, Any]] = {}
    for role in ("coordinator", "worker"):
        folder = GENERATED / "tests" / f"topogen-ml-training-{role}"
        patched = {p["metadata"]["name"] for p in docs(folder / "patched.yaml")}
        for pod in docs(folder / "resources.yaml"):
            if pod["metadata"]["name"] in patched:
                out[pod["metadata"]["name"]] = pod
    return list(out.values())


def _write(tmp: Path, name: str, policies: list[dict[str, Any]]) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump_all(policies, sort_keys=False), encoding="utf-8")
    return path


def _fields(pod: dict[str, Any]) -> list[Any]:
    return [get(pod) for _, get in av.FIELDS]


def test_one_webhook_mutates_as_the_generated_pair(tmp_path: Path) -> None:
    kyverno = require_tool("kyverno")
    generated = [p for p in _generated() if p["kind"] == "MutatingPolicy"]
    joined = av.one_webhook(generated)
    assert joined is not None and [p["kind"] for p in joined] == ["MutatingPolicy"]
    (policy,) = joined
    assert [m["name"] for m in policy["spec"]["matchConditions"]][-1] == "has-role"
    pods = _mutated_pods()
    assert len(pods) >= 2
    want = kyverno_apply(kyverno, [_write(tmp_path, "pair.yaml", generated)], pods, tmp_path)
    got = kyverno_apply(kyverno, [_write(tmp_path, "one.yaml", joined)], pods, tmp_path)
    assert [_fields(p) for p in got] == [_fields(p) for p in want]
    assert all(_fields(w) != _fields(p) for w, p in zip(want, pods, strict=True))


def test_one_webhook_refuses_other_shapes() -> None:
    generated = [p for p in _generated() if p["kind"] == "MutatingPolicy"]
    assert av.one_webhook(generated[:1]) is None
    other = [dict(p, spec=dict(p["spec"], mutations=p["spec"]["mutations"] * 2)) for p in generated]
    assert av.one_webhook(other) is None


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
