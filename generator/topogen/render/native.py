"""Native Kubernetes admission policies: no policy engine in the cluster.

MutatingAdmissionPolicy (admissionregistration.k8s.io/v1 from Kubernetes 1.36, v1beta1
before) and ValidatingAdmissionPolicy (v1), each with its binding, built from the same
CEL expressions as the Kyverno CEL policies (render/cel.py), so the behaviour is the
Kyverno backend's. matchConstraints also narrow by namespace and job label, so the API
server skips other pods before any CEL runs; paramKind is not used.

The mutations carry their variables inlined (the same CEL, each `variables.x` replaced
by `(x's expression)`): Kyverno CLI v1.19.1, which the tests use to evaluate these
policies, does not bind `variables` when it applies a MutatingAdmissionPolicy, and
what is shipped should be what is tested. The ValidatingAdmissionPolicy keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from topogen.render import cel
from topogen.render.base import RenderedFile, render_documents
from topogen.render.intent import AdmissionIntent, description, policy_metadata
from topogen.render.kyverno import mutating_policy
from topogen.render.vocabulary import DESCRIPTION

__all__ = ["inline_variables", "mutating_api_version", "native_policies"]

MAP_V1 = (1, 36)  # MutatingAdmissionPolicy is admissionregistration.k8s.io/v1 from here
NAMESPACE_NAME = "kubernetes.io/metadata.name"


def mutating_api_version(kubernetes_version: str) -> str:
    major, minor = (int(p) for p in kubernetes_version.split("."))
    version = "v1" if (major, minor) >= MAP_V1 else "v1beta1"
    return f"admissionregistration.k8s.io/{version}"


def _meta(intent: AdmissionIntent, role: str) -> dict[str, Any]:
    return policy_metadata(intent, role, {DESCRIPTION: description(intent)})


def _selectors(intent: AdmissionIntent, role: str) -> dict[str, Any]:
    """The API server's own filters; a detached pod (KubeRay's submitter) has no job label,
    so then the coordinator's and the checks' policies leave it to their matchConditions."""
    job = {"matchExpressions": [{"key": intent.job_label, "operator": "Exists"}]}
    return {
        "namespace_selector": {
            "matchExpressions": [
                {"key": NAMESPACE_NAME, "operator": "In", "values": list(intent.namespaces)}
            ]
        },
        "object_selector": {} if intent.detached and role != "worker" else job,
    }


# A CEL string literal (cel.lit writes JSON strings; cel.py's own text uses '...').
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'" + r'|"(?:[^"\\\n]|\\.)*"')
_VARIABLE = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)\b")


def inline_variables(expression: str, variables: Sequence[dict[str, str]]) -> str:
    """expression with every `variables.x` outside string literals replaced by
    `(x's expression)`, itself inlined (a variable may use the ones before it)."""
    done: dict[str, str] = {}

    def inline(text: str) -> str:
        out, pos = [], 0
        for m in _STRING.finditer(text):
            out += [_VARIABLE.sub(lambda v: f"({done[v[1]]})", text[pos : m.start()]), m[0]]
            pos = m.end()
        out.append(_VARIABLE.sub(lambda v: f"({done[v[1]]})", text[pos:]))
        return "".join(out)

    for v in variables:
        done[v["name"]] = inline(v["expression"])
    return inline(expression)


def _mutating(intent: AdmissionIntent, role: str, api_version: str) -> RenderedFile:
    # The Kyverno MutatingPolicy of the same role carries the same CEL: take it from there.
    kyverno = mutating_policy(intent, role).objects[0]["spec"]
    variables = kyverno["variables"]
    name = f"{intent.name}-{role}"
    text, objs = render_documents(
        "native/mutating-admission-policy.yaml.j2",
        api_version=api_version,
        name=name,
        **_meta(intent, role),
        **_selectors(intent, role),
        match_conditions=kyverno["matchConditions"],
        patches=[
            inline_variables(m["jsonPatch"]["expression"], variables) for m in kyverno["mutations"]
        ],
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def _validating(intent: AdmissionIntent) -> RenderedFile:
    name = f"{intent.name}-validate"
    text, objs = render_documents(
        "native/validating-admission-policy.yaml.j2",
        name=name,
        **_meta(intent, "validate"),
        **_selectors(intent, "validate"),
        actions=["Deny"] if intent.validation_action == "Enforce" else ["Audit"],
        match_conditions=cel.match_role(intent, None),
        variables=cel.validation_variables(intent),
        validations=cel.validations(intent),
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def native_policies(
    intent: AdmissionIntent, kubernetes_version: str = "1.36"
) -> list[RenderedFile]:
    api_version = mutating_api_version(kubernetes_version)
    return [
        _mutating(intent, "coordinator", api_version),
        _mutating(intent, "worker", api_version),
        _validating(intent),
    ]
