"""Kyverno CEL policies (policies.kyverno.io/v1 MutatingPolicy and ValidatingPolicy)."""

from __future__ import annotations

from typing import Any

from topogen.render import cel
from topogen.render.base import RenderedFile, render_documents
from topogen.render.intent import AdmissionIntent, description, policy_metadata

__all__ = ["kyverno_policies"]


def _meta(intent: AdmissionIntent, role: str) -> dict[str, Any]:
    return policy_metadata(
        intent,
        role,
        {
            "policies.kyverno.io/title": f"topogen {role} co-location for {intent.group}",
            "policies.kyverno.io/description": description(intent),
        },
    )


def mutating_policy(intent: AdmissionIntent, role: str) -> RenderedFile:
    variables = cel.mutation_variables(intent)
    patches = []
    if role == "coordinator":
        variables.append(
            {
                "name": "missingTolerations",
                "expression": cel.missing_tolerations(intent.tolerations),
            }
        )
        patches.append(cel.mutation_tolerations_patch())
    else:
        variables += [
            {"name": "coordinatorTerm", "expression": cel.coordinator_term(intent)},
            {"name": "hasCoordinatorTerm", "expression": cel.has_coordinator_term(intent)},
        ]
        patches.append(cel.mutation_pod_affinity_patch())
    patches.append(cel.mutation_node_affinity_patch(intent))
    if cel.has_identity(intent):
        patches.append(cel.mutation_identity_patch(intent))
    name = f"{intent.name}-{role}"
    text, objs = render_documents(
        "kyverno/mutating-policy.yaml.j2",
        name=name,
        **_meta(intent, role),
        **cel.webhook_selectors(intent),
        match_conditions=cel.match_role(intent, role),
        variables=variables,
        patches=patches,
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def validating_policy(intent: AdmissionIntent) -> RenderedFile:
    name = f"{intent.name}-validate"
    actions = ["Deny"] if intent.validation_action == "Enforce" else ["Audit"]
    text, objs = render_documents(
        "kyverno/validating-policy.yaml.j2",
        name=name,
        **_meta(intent, "validate"),
        actions=actions,
        **cel.webhook_selectors(intent),
        match_conditions=cel.match_role(intent, None),
        variables=cel.validation_variables(intent),
        validations=cel.validations(intent),
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def kyverno_policies(intent: AdmissionIntent) -> list[RenderedFile]:
    return [
        mutating_policy(intent, "coordinator"),
        mutating_policy(intent, "worker"),
        validating_policy(intent),
    ]
