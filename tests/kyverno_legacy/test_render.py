"""The legacy ClusterPolicies as rendered objects (no Kyverno CLI needed)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from kyverno_legacy.cases import cases, example_intent
from topogen.errors import TopogenError
from topogen.render import kyverno_legacy
from topogen.render.intent import AdmissionIntent
from topogen.render.kyverno_legacy import kyverno_legacy_policies

CASES = {c.key: c for c in cases()}
KYVERNO_VERSION = "v1.19.1"
CHOSEN: set[tuple[str, ...]] = set()  # defaulted fields rendered with a value of our own
# defaulted fields left out: deprecated ones. spec.validationFailureAction gave way to each
# rule's validate.failureAction (Kyverno 1.13), which overrides it; the API server still
# writes its default (Audit), which Argo CD's diffs ignore as a field the source lacks.
LEFT_OUT = {("spec", "validationFailureAction")}


def _policies(intent: AdmissionIntent) -> tuple[dict[str, Any], dict[str, Any]]:
    mutate, validate = (f.objects[0] for f in kyverno_legacy_policies(intent))
    return mutate, validate


def test_two_cluster_policies_pods_only() -> None:
    intent = example_intent()
    files = kyverno_legacy_policies(intent)
    assert [f.path for f in files] == [
        "topogen-ml-training-mutate.yaml",
        "topogen-ml-training-validate.yaml",
    ]
    for f in files:
        [obj] = f.objects
        assert (obj["apiVersion"], obj["kind"]) == ("kyverno.io/v1", "ClusterPolicy")
        assert (
            obj["metadata"]["annotations"]["pod-policies.kyverno.io/autogen-controllers"] == "none"
        )
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "topogen"
        for rule in obj["spec"]["rules"]:
            for block in ("match", "exclude"):
                for flt in rule[block]["any"]:
                    assert flt["resources"]["kinds"] == ["Pod"]


def test_rendering_is_deterministic() -> None:
    for case in CASES.values():
        assert kyverno_legacy_policies(case.intent) == kyverno_legacy_policies(case.intent)


@pytest.mark.parametrize("action", ["Audit", "Enforce"])
def test_failure_action_per_rule(action: str) -> None:
    """The action is each validate rule's failureAction, never the deprecated
    spec.validationFailureAction."""
    mutate, validate = _policies(example_intent(action))
    assert "validationFailureAction" not in validate["spec"]
    assert "validationFailureAction" not in mutate["spec"]
    rules = validate["spec"]["rules"]
    assert rules and [r["validate"]["failureAction"] for r in rules] == [action] * len(rules)
    assert all("validate" not in r for r in mutate["spec"]["rules"])


def test_defaults_explicit() -> None:
    for case in CASES.values():
        for policy in _policies(case.intent):
            spec = policy["spec"]
            assert {
                k: spec[k] for k in ("admission", "background", "emitWarning", "failurePolicy")
            } == {
                "admission": True,
                "background": True,
                "emitWarning": False,
                "failurePolicy": "Fail",
            }
            for rule in spec["rules"]:
                assert rule["skipBackgroundRequests"] is True
                if "validate" in rule:  # pods admitted before the policy may still be updated
                    assert rule["validate"]["allowExistingViolations"] is True


def _crd() -> Path | None:
    roots = [os.environ.get("GOMODCACHE"), os.path.expanduser("~/go/pkg/mod")]
    for root in filter(None, roots):
        path = (
            Path(root)
            / "github.com"
            / "kyverno"
            / f"kyverno@{KYVERNO_VERSION}"
            / "config"
            / "crds"
            / "kyverno"
            / "kyverno.io_clusterpolicies.yaml"
        )
        if path.exists():
            return path
    return None


def _defaults(
    schema: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, default) for every defaulted field; "[]" marks a list item."""
    if "default" in schema:
        yield path, schema["default"]
    for key, sub in (schema.get("properties") or {}).items():
        yield from _defaults(sub, (*path, key))
    if "items" in schema:
        yield from _defaults(schema["items"], (*path, "[]"))


def _parents(obj: Any, path: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """Every object the path's parent names inside obj."""
    if not path:
        yield obj
    elif path[0] == "[]":
        for item in obj if isinstance(obj, list) else []:
            yield from _parents(item, path[1:])
    elif isinstance(obj, dict) and path[0] in obj:
        yield from _parents(obj[path[0]], path[1:])


def test_defaults_match_the_crd() -> None:
    """Wherever the ClusterPolicy CRD of the pinned Kyverno defaults a field of an object we
    render, we render that default (Argo CD then sees no drift)."""
    crd_path = _crd()
    if crd_path is None:
        pytest.skip(f"Kyverno {KYVERNO_VERSION} module source not in the Go module cache")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(crd_path.read_text(encoding="utf-8"), Loader=loader)
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"][
        "openAPIV3Schema"
    ]
    defaults = [(p, d) for p, d in _defaults(schema) if p[0] == "spec" and p not in LEFT_OUT]
    assert {p for p, _ in _defaults(schema)} >= LEFT_OUT  # still defaulted by the CRD
    assert defaults
    checked = 0
    for case in CASES.values():
        for policy in _policies(case.intent):
            for path, default in defaults:
                for parent in _parents(policy, path[:-1]):
                    assert path[-1] in parent, ".".join(path)
                    if path not in CHOSEN:
                        assert parent[path[-1]] == default, ".".join(path)
                    checked += 1
    assert checked > 0


def test_matching_is_as_narrow_as_the_cel_policies() -> None:
    intent = CASES["mr"].intent
    mutate, validate = _policies(intent)
    for rule in [*mutate["spec"]["rules"], *validate["spec"]["rules"]]:
        for flt in rule["match"]["any"]:
            res = flt["resources"]
            assert res["namespaces"] == list(intent.namespaces)
            assert {"key": intent.job_label, "operator": "Exists"} in res["selector"][
                "matchExpressions"
            ]
            assert res["operations"] == (["CREATE"] if "mutate" in rule else ["CREATE", "UPDATE"])
        excluded = rule["exclude"]["any"]
        for key in intent.skip_keys:
            assert {"resources": {"kinds": ["Pod"], "annotations": {key: "*"}}} in excluded
            assert {
                "resources": {
                    "kinds": ["Pod"],
                    "selector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
                }
            } in excluded
        role_filters = len(excluded) - 2 * len(intent.skip_keys)
        worker_rule = rule["name"].startswith("worker-")
        assert role_filters == (len(intent.coordinator) if worker_rule else 0)


def _variables(policy: dict[str, Any]) -> list[str]:
    text = yaml.safe_dump(policy, width=100_000)
    return re.findall(r"\{\{.*?\}\}", text)


def test_label_keys_are_quoted_identifiers() -> None:
    intent = CASES["mr"].intent
    for policy in _policies(intent):
        variables = _variables(policy)
        assert variables
        for v in variables:
            assert "labels.example" not in v and "labels.net" not in v, v
        assert any('labels."example.com/job-name"' in v for v in variables)


def test_values_with_braces_are_refused() -> None:
    intent = example_intent()
    hostile = replace(intent, denied_zone_pairs=(("zone-a", "zone-b", ("cnp x/{{ evil }}",)),))
    with pytest.raises(TopogenError, match="brace"):
        kyverno_legacy_policies(hostile)


def test_values_stay_data() -> None:
    """A quote or backtick in a value stays inside its literal or YAML scalar."""
    value = "zone-'a`\""
    assert kyverno_legacy.lit([value]) == '`["zone-\'a\\`\\""]`'
    assert kyverno_legacy.ident('a."b') == '"a.\\"b"'
    mutate, _ = _policies(replace(example_intent(), zones=(value,)))
    patch = mutate["spec"]["rules"][1]["mutate"]["patchesJson6902"]
    assert yaml.safe_load(patch)[0]["value"]["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [value]}
    ]


def test_broken_patch_is_refused() -> None:
    policy = {
        "metadata": {"name": "p"},
        "spec": {
            "rules": [{"name": "r", "mutate": {"patchesJson6902": "- op: add\n  path: /x\n"}}]
        },
    }
    with pytest.raises(TopogenError, match="invalid JSON patch"):
        kyverno_legacy._check([policy])


def test_components_set_each_rules_failure_action() -> None:
    """kustomize/components/{audit,enforce} patch validate.failureAction rule by rule; a
    policy whose rules differ between clusters gets a patch per cluster label."""
    from topogen.render.kustomize import _legacy_action_patches

    same = _legacy_action_patches({"topogen-a-validate": {"x": 2, "y": 2}}, "Enforce")
    assert same == [
        {
            "name": "^topogen-a-validate$",
            "selector": "app.kubernetes.io/managed-by=topogen,topogen.io/role=validate",
            "ops": [
                {"op": "add", "path": f"/spec/rules/{i}/validate/failureAction", "value": "Enforce"}
                for i in range(2)
            ],
        }
    ]
    split = _legacy_action_patches({"topogen-a-validate": {"x": 3, "y": 1}}, "Audit")
    assert [(p["selector"].rsplit(",", 1)[1], len(p["ops"])) for p in split] == [
        ("topogen.io/cluster=x", 3),
        ("topogen.io/cluster=y", 1),
    ]
