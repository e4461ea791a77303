"""Native Kubernetes admission policies for the jobs Kueue's Topology Aware Scheduling
places: a MutatingAdmissionPolicy and a ValidatingAdmissionPolicy (with their bindings)
per job kind of a group, with the CEL of the Kyverno job policies (render/kueue_cel.py),
the mutation's variables inlined as for the pod policies (render/native.py)."""

from __future__ import annotations

from typing import Any

from topogen.render import kueue_cel
from topogen.render.base import RenderedFile, render_documents
from topogen.render.kueue_intent import KueueIntent, description, kueue_metadata
from topogen.render.kyverno_kueue import resource_rules
from topogen.render.native import NAMESPACE_NAME, inline_variables, mutating_api_version
from topogen.render.vocabulary import DESCRIPTION

__all__ = ["native_kueue_policies"]


def _common(ki: KueueIntent, role: str) -> dict[str, Any]:
    return {
        **kueue_metadata(ki, role, {DESCRIPTION: description(ki)}),
        "namespace_selector": {
            "matchExpressions": [
                {"key": NAMESPACE_NAME, "operator": "In", "values": list(ki.namespaces)}
            ]
        },
        # at creation only: Kueue reads the templates then, and a job made before the
        # policies must stay updatable (Kueue unsuspends it by an update)
        "resource_rules": resource_rules(ki, ["CREATE"]),
        "match_conditions": kueue_cel.match_conditions(ki),
    }


def native_kueue_policies(ki: KueueIntent, kubernetes_version: str = "1.36") -> list[RenderedFile]:
    mutate, validate = f"{ki.name}-mutate", f"{ki.name}-validate"
    variables = kueue_cel.variables(ki)
    m_text, m_objs = render_documents(
        "native/mutating-admission-policy.yaml.j2",
        api_version=mutating_api_version(kubernetes_version),
        name=mutate,
        **_common(ki, "kueue-mutate"),
        patches=[inline_variables(kueue_cel.mutation(ki), variables)],
    )
    v_text, v_objs = render_documents(
        "native/validating-admission-policy.yaml.j2",
        name=validate,
        **_common(ki, "kueue-validate"),
        actions=["Deny"] if ki.validation_action == "Enforce" else ["Audit"],
        variables=variables,
        validations=kueue_cel.validations(ki),
    )
    return [
        RenderedFile(f"{mutate}.yaml", m_text, m_objs),
        RenderedFile(f"{validate}.yaml", v_text, v_objs),
    ]
