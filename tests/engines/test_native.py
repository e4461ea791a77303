"""The native backend: MutatingAdmissionPolicy/ValidatingAdmissionPolicy and bindings.

Their behaviour with a real evaluator is in test_behaviour.py (Kyverno CLI).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from engines.cases import suites
from topogen.render import cel
from topogen.render.kyverno import kyverno_policies, mutating_policy
from topogen.render.native import inline_variables, mutating_api_version, native_policies

SUITES = suites()


def _objects(intent: Any, version: str = "1.35") -> list[dict[str, Any]]:
    return [o for f in native_policies(intent, kubernetes_version=version) for o in f.objects]


@pytest.mark.parametrize(
    ("version", "api"),
    [("1.32", "v1beta1"), ("1.35", "v1beta1"), ("1.36", "v1"), ("1.40", "v1")],
)
def test_mutating_api_version_follows_the_cluster(version: str, api: str) -> None:
    assert mutating_api_version(version) == f"admissionregistration.k8s.io/{api}"
    objs = _objects(SUITES[0].intent, version)
    assert [(o["apiVersion"], o["kind"]) for o in objs] == [
        (f"admissionregistration.k8s.io/{api}", "MutatingAdmissionPolicy"),
        (f"admissionregistration.k8s.io/{api}", "MutatingAdmissionPolicyBinding"),
    ] * 2 + [
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
    ]


def test_bindings_name_their_policy_and_take_no_params() -> None:
    for suite in SUITES:
        objs = _objects(suite.intent)
        for policy, binding in zip(objs[::2], objs[1::2], strict=True):
            assert binding["spec"]["policyName"] == policy["metadata"]["name"]
            assert "paramKind" not in policy["spec"] and "paramRef" not in binding["spec"]
        actions = objs[-1]["spec"]["validationActions"]
        assert actions == (["Deny"] if suite.intent.validation_action == "Enforce" else ["Audit"])


def test_match_constraints_are_narrow() -> None:
    for suite in SUITES:
        intent = suite.intent
        for policy in _objects(intent)[::2]:
            mc = policy["spec"]["matchConstraints"]
            assert mc["namespaceSelector"] == {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "In",
                        "values": list(intent.namespaces),
                    }
                ]
            }
            job = {"matchExpressions": [{"key": intent.job_label, "operator": "Exists"}]}
            worker = policy["metadata"]["name"].endswith("-worker")
            # a detached pod (KubeRay's submitter) has no job label: matchConditions pick it
            assert mc["objectSelector"] == ({} if intent.detached and not worker else job)
            [rule] = mc["resourceRules"]
            assert rule["resources"] == ["pods"]
        mutating, validating = _objects(intent)[0], _objects(intent)[4]
        assert mutating["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE"]
        assert validating["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == [
            "CREATE",
            "UPDATE",
        ]


def test_the_cel_is_kyvernos() -> None:
    """Same conditions and checks as the Kyverno CEL policies of each role (the Kyverno
    engine renders both roles as one policy); mutations with the variables inlined."""
    for suite in SUITES:
        intent = suite.intent
        objs = _objects(intent)
        kyverno = [mutating_policy(intent, r).objects[0] for r in ("coordinator", "worker")]
        for native, ky in ((objs[0], kyverno[0]), (objs[2], kyverno[1])):
            assert native["spec"]["matchConditions"] == ky["spec"]["matchConditions"]
            assert "variables" not in native["spec"]
            patches = [m["jsonPatch"]["expression"] for m in native["spec"]["mutations"]]
            assert patches == [
                inline_variables(m["jsonPatch"]["expression"], ky["spec"]["variables"])
                for m in ky["spec"]["mutations"]
            ]
            assert not any(re.search(r"\bvariables\.", p) for p in patches)
        vap = objs[4]["spec"]
        assert vap["variables"] == cel.validation_variables(intent)
        assert vap["validations"] == cel.validations(intent)
        assert vap["matchConditions"] == cel.match_role(intent, None)


def test_inlining_leaves_string_literals_alone() -> None:
    variables = [
        {"name": "a", "expression": "\"variables.a\" + 'variables.b'"},
        {"name": "b", "expression": "variables.a + 'x\\'variables.a'"},
    ]
    got = inline_variables("size(variables.b) > 0", variables)
    assert got == "size(((\"variables.a\" + 'variables.b') + 'x\\'variables.a')) > 0"
    with pytest.raises(KeyError):
        inline_variables("variables.unknown", variables)


def test_intent_summary_matches_the_kyverno_policies() -> None:
    """`topogen diff` reads the same topogen.io/* annotations from either engine."""
    for suite in SUITES:
        native = [f.objects[0] for f in native_policies(suite.intent)]
        kyverno = [f.objects[0] for f in kyverno_policies(suite.intent)]
        # Kyverno's one mutation says what each native role's says; a detached selector's
        # pair (-detached, -detached-validate) what the coordinator's and the validating say
        extra = kyverno[2:]
        assert len(extra) == 2 * len(suite.intent.detached)
        pairs = [(native[0], kyverno[0]), (native[2], kyverno[1])]
        pairs += [(native[0 if i % 2 == 0 else 2], k) for i, k in enumerate(extra)]
        for n, k in pairs:

            def summary(o: dict[str, Any]) -> dict[str, str]:
                ann = o["metadata"]["annotations"]
                return {
                    a: v
                    for a, v in ann.items()
                    if a.startswith("topogen.io/") and a != "topogen.io/description"
                }

            assert summary(n) == summary(k), n["metadata"]["name"]
        # the workers' own: no tolerations (the coordinators get them)
        want = {a: v for a, v in summary(kyverno[0]).items() if a != "topogen.io/tolerations"}
        assert summary(native[1]) == want


def test_default_kubernetes_version_is_the_readmes() -> None:
    """Without kubernetesVersion the native engine writes what a Kubernetes 1.36 API
    server serves (MutatingAdmissionPolicy v1), as the engines page's table and the
    configuration guide say."""
    from topogen.config import ClusterConfig

    default = ClusterConfig.model_fields["kubernetes_version"].default
    assert default == "1.36"
    docs = Path(__file__).resolve().parents[2] / "docs"
    engines = (docs / "guides" / "engines.md").read_text(encoding="utf-8")
    guide = (docs / "guides" / "configuration.md").read_text(encoding="utf-8")
    assert "| `native` | no engine: Kubernetes 1.36 " in engines
    assert f'kubernetesVersion: "{default}"' in guide
    maps = [o for o in _objects(SUITES[0].intent, default) if o["kind"].startswith("Mutating")]
    assert maps and {o["apiVersion"] for o in maps} == {"admissionregistration.k8s.io/v1"}
