"""Kyverno CEL policies for the jobs Kueue's Topology Aware Scheduling places (one
MutatingPolicy and one ValidatingPolicy per job kind of a group): the job's pod templates
at its creation, before Kueue builds its Workload from them (kueue_cel.py)."""

from __future__ import annotations

from typing import Any

from topogen.render import kueue_cel
from topogen.render.base import RenderedFile, render_documents
from topogen.render.kueue_intent import KueueIntent, description, kueue_metadata

__all__ = ["kyverno_kueue_policies", "resource_rules"]


def resource_rules(ki: KueueIntent, operations: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "apiGroups": [ki.kind.group],
            "apiVersions": list(ki.kind.versions),
            "operations": operations,
            "resources": [ki.kind.resource],
        }
    ]


def _selectors(ki: KueueIntent) -> dict[str, Any]:
    return {
        "namespace_selector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "In",
                    "values": list(ki.namespaces),
                }
            ]
        },
    }


def _meta(ki: KueueIntent, role: str, title: str) -> dict[str, Any]:
    return kueue_metadata(
        ki,
        role,
        {
            "policies.kyverno.io/title": title,
            "policies.kyverno.io/category": "Scheduling, Network Policy",
            "policies.kyverno.io/severity": "medium",
            "policies.kyverno.io/subject": ki.kind.kind,
            "policies.kyverno.io/description": description(ki),
        },
    )


def mutating_policy(ki: KueueIntent) -> RenderedFile:
    name = f"{ki.name}-mutate"
    text, objs = render_documents(
        "kyverno/kueue-mutating-policy.yaml.j2",
        name=name,
        **_meta(ki, "kueue-mutate", f"topogen Kueue TAS constraint for {ki.group}"),
        **_selectors(ki),
        resource_rules=resource_rules(ki, ["CREATE"]),
        match_conditions=kueue_cel.match_conditions(ki),
        variables=kueue_cel.variables(ki),
        patch=kueue_cel.mutation(ki),
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def validating_policy(ki: KueueIntent) -> RenderedFile:
    name = f"{ki.name}-validate"
    enforce = ki.validation_action == "Enforce"
    text, objs = render_documents(
        "kyverno/kueue-validating-policy.yaml.j2",
        name=name,
        **_meta(ki, "kueue-validate", f"topogen Kueue TAS check for {ki.group}"),
        **_selectors(ki),
        actions=["Deny"] if enforce else ["Audit"],
        at_admission=enforce or ki.audit_at_admission,
        # at creation only: Kueue reads the templates then, and a job made before the
        # policy must stay updatable (Kueue unsuspends it by an update)
        resource_rules=resource_rules(ki, ["CREATE"]),
        match_conditions=kueue_cel.match_conditions(ki),
        variables=kueue_cel.variables(ki),
        validations=kueue_cel.validations(ki),
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def kyverno_kueue_policies(ki: KueueIntent) -> list[RenderedFile]:
    return [mutating_policy(ki), validating_policy(ki)]
